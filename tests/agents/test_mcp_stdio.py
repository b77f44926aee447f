"""`faildiag mcp` driven by the MCP SDK's real stdio client, as a coding agent drives it: the server is a
subprocess (`python -m pytest_faildiag.cli mcp --root DIR`), every call goes over the protocol."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.agents.conftest import ROOT, child_env, cli, error_line, make_data_dir_project, structured, with_server

mcp = pytest.importorskip("mcp")  # the optional SDK (extra `mcp`); the test extra installs it

TOOL_NAMES = {"diagnose", "explain", "lock_diff", "fix_propose", "fix_apply", "retort_diagnose"}

SHAPES = """
import torch

model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(128, 10))
x = torch.randn(64, 32)
print(model(x).sum())
"""


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "faildiag-out" not in p.parts
    }


def test_it_lists_the_six_tools_each_with_an_input_and_an_output_schema(tmp_path):
    async def scenario(session):
        return (await session.list_tools()).tools

    tools = {t.name: t for t in with_server(tmp_path, scenario=scenario)}
    assert set(tools) == TOOL_NAMES
    for t in tools.values():
        schema_in = getattr(t, "input_schema", None) or t.inputSchema
        schema_out = getattr(t, "output_schema", None) or t.outputSchema
        assert schema_in["type"] == "object" and schema_out["type"] == "object", t.name
        assert schema_in["additionalProperties"] is False and t.description
    diagnose_in = getattr(tools["diagnose"], "input_schema", None) or tools["diagnose"].inputSchema
    assert diagnose_in["required"] == ["paths"]
    assert {"paths", "exit_code", "command", "max_chars"} <= set(diagnose_in["properties"])
    diagnose_out = getattr(tools["diagnose"], "output_schema", None) or tools["diagnose"].outputSchema
    assert diagnose_out["properties"]["schema"] == {"const": "faildiag.report/1"}  # the shipped report schema


def test_it_diagnoses_a_real_failing_pytorch_run_from_its_saved_stderr(tmp_path, report_schema):
    pytest.importorskip("torch")
    jsonschema = pytest.importorskip("jsonschema")
    (tmp_path / "train.py").write_text(textwrap.dedent(SHAPES).lstrip(), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "train.py"], cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 1 and "mat1 and mat2 shapes cannot be multiplied" in run.stderr
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "stderr.log").write_text(run.stderr, encoding="utf-8")

    async def scenario(session):
        report = structured(
            await session.call_tool(
                "diagnose", {"paths": ["logs/stderr.log"], "exit_code": 1, "command": "python train.py", "out": "diag"}
            )
        )
        small = structured(await session.call_tool("diagnose", {"paths": ["logs"], "max_chars": 1500, "out": "diag2"}))
        resources = [str(r.uri) for r in (await session.list_resources()).resources]
        md = (await session.read_resource("faildiag://snapshot/diag2/report.md")).contents[0].text
        explained = structured(await session.call_tool("explain", {"snapshot": "diag"}))
        return report, small, resources, md, explained

    report, small, resources, md, explained = with_server(tmp_path, scenario=scenario)
    jsonschema.validate({k: v for k, v in report.items() if k != "snapshot"}, report_schema)
    assert report["profile"]["type"] == "runtime_error" and report["profile"]["stack"] == "pytorch"
    assert "mat1 and mat2 shapes cannot be multiplied" in report["profile"]["first_failure"]["excerpt"]
    top = report["root_causes"][0]
    assert top["category"] == "model"
    assert any(e["kind"] == "direct" and "mat1 and mat2" in e["excerpt"] for e in top["evidence"])
    assert report["snapshot"] == "diag"
    on_disk = json.loads((tmp_path / "diag" / "report.json").read_text())
    assert on_disk["summary"] == report["summary"] and on_disk["root_causes"] == report["root_causes"]

    assert len(json.dumps({k: v for k, v in small.items() if k != "snapshot"}, ensure_ascii=False)) <= 1500
    assert (
        small["root_causes"][0]["id"] == top["id"]
        and small["profile"]["first_failure"] == report["profile"]["first_failure"]
    )
    assert all(e["kind"] == "direct" for c in small["root_causes"] for e in c["evidence"])
    assert small["budget"]["fits"] is True

    # the latest session's snapshot is a resource; an earlier one is not listed
    assert "faildiag://snapshot/diag2/report.json" in resources and "faildiag://skill" in resources
    assert not any("snapshot/diag/" in r for r in resources)
    assert md.startswith("# faildiag report") and "mat1 and mat2" in md
    assert explained["snapshot"] == "diag" and explained["markdown"].startswith("# faildiag report")


def test_it_proposes_then_applies_a_fix_only_with_the_current_proposal_id(tmp_path):
    project = make_data_dir_project(tmp_path / "proj")
    made = cli(
        "diagnose",
        "out.log",
        "--exit-code",
        "1",
        "--command",
        f"{sys.executable} train.py",
        "--out",
        "faildiag-out",
        cwd=project,
    )
    assert made.returncode == 0, made.stderr
    before = _hashes(project)

    async def scenario(session):
        proposal = structured(await session.call_tool("fix_propose", {"snapshot": "faildiag-out"}))
        unchanged = _hashes(project)
        wrong = error_line(
            await session.call_tool("fix_apply", {"snapshot": "faildiag-out", "fix_id": "env-0000000000"})
        )
        missing = error_line(await session.call_tool("fix_apply", {"snapshot": "faildiag-out"}))
        record = structured(
            await session.call_tool("fix_apply", {"snapshot": "faildiag-out", "fix_id": proposal["id"]})
        )
        again = error_line(await session.call_tool("fix_apply", {"snapshot": "faildiag-out", "fix_id": "x"}))
        return proposal, unchanged, wrong, missing, record, again

    proposal, unchanged, wrong, missing, record, again = with_server(project, scenario=scenario)
    assert proposal["automatic"] and not proposal["needs_command_confirmation"]
    (change,) = proposal["changes"]
    assert (change["kind"], change["key"], change["new"]) == ("env", "DATA_DIR", str((project / "data").resolve()))
    assert unchanged == before  # proposing changes nothing
    assert "no proposal env-0000000000" in wrong and proposal["id"] in wrong
    assert missing == "missing argument fix_id"
    assert (record["id"], record["applied"], record["verification"], record["rolled_back"]) == (
        proposal["id"],
        True,
        "passed",
        False,
    )
    fix = json.loads((project / "faildiag-out" / "report.json").read_text())["fix"]
    assert fix["id"] == proposal["id"] and fix["verification"] == "passed"
    assert 'DATA_DIR="' in (project / "faildiag-out" / "fix" / "fix.env").read_text()
    assert _hashes(project) == before  # an environment fix never edits the project's files
    assert "no proposal x" in again


def test_a_command_the_agent_gave_runs_only_with_its_own_command_id(tmp_path):
    project = make_data_dir_project(tmp_path / "proj")
    command = f"{sys.executable} train.py"

    async def scenario(session):
        structured(await session.call_tool("diagnose", {"paths": ["out.log"], "exit_code": 1, "command": command}))
        proposal = structured(await session.call_tool("fix_propose", {"snapshot": "faildiag-out"}))
        refused = error_line(
            await session.call_tool("fix_apply", {"snapshot": "faildiag-out", "fix_id": proposal["id"]})
        )
        state = json.loads((project / "faildiag-out" / "report.json").read_text())
        wrong_cmd = error_line(
            await session.call_tool(
                "fix_apply", {"snapshot": "faildiag-out", "fix_id": proposal["id"], "command_id": "cmd-0000000000"}
            )
        )
        record = structured(
            await session.call_tool(
                "fix_apply",
                {"snapshot": "faildiag-out", "fix_id": proposal["id"], "command_id": proposal["rerun"]["command_id"]},
            )
        )
        return proposal, refused, state, wrong_cmd, record

    proposal, refused, state, wrong_cmd, record = with_server(project, scenario=scenario)
    assert proposal["needs_command_confirmation"] is True and proposal["rerun"]["command"] == command
    assert proposal["rerun"]["command_id"] in refused and "--confirm-command" in refused
    assert "fix" not in state  # refused before anything was applied
    assert "no command cmd-0000000000" in wrong_cmd
    assert record["verification"] == "passed" and record["command"] == command


def test_it_refuses_paths_outside_its_roots_and_links_that_lead_out(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    secret_log = outside / "secret.log"
    secret_log.write_text("Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory\n")
    (root / "ok.log").write_text("Traceback (most recent call last):\nKeyError: 'DATA_DIR'\n")
    (root / "link.log").symlink_to(secret_log)
    (root / "logs").mkdir()
    (root / "logs" / "inner.log").symlink_to(secret_log)
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    shutil.copytree(ROOT / "tests" / "data" / "retort" / "exp19", outside / "exp19")

    calls = [
        ("diagnose", {"paths": [str(secret_log)]}),
        ("diagnose", {"paths": ["../outside/secret.log"]}),
        ("diagnose", {"paths": ["link.log"]}),
        ("diagnose", {"paths": ["logs"]}),
        ("diagnose", {"paths": ["ok.log"], "out": "outdir/snap"}),
        ("explain", {"snapshot": str(outside)}),
        ("fix_propose", {"snapshot": "outdir"}),
        ("lock_diff", {"new": str(secret_log), "old": "ok.log"}),
        ("retort_diagnose", {"experiment_dir": "outdir/exp19"}),
    ]

    async def scenario(session):
        refusals = [await session.call_tool(name, args) for name, args in calls]
        try:
            await session.read_resource("faildiag://snapshot/outdir/report.json")
            resource_error = None
        except Exception as exc:  # the SDK raises the JSON-RPC error it received
            resource_error = str(exc)
        still_serving = structured(await session.call_tool("diagnose", {"paths": ["ok.log"]}))
        return refusals, resource_error, still_serving

    refusals, resource_error, still_serving = with_server(root, scenario=scenario)
    reasons = [error_line(r) for r in refusals]
    for (name, _), reason in zip(calls, reasons, strict=True):
        assert "outside the server's roots" in reason or "symbolic link out of the server's roots" in reason, (
            name,
            reason,
        )
        assert "CUDA error" not in reason
    assert "inner.log" in reasons[3]
    assert resource_error and "outside the server's roots" in resource_error
    assert "DATA_DIR" in still_serving["summary"]
    assert not (outside / "snap").exists() and sorted(p.name for p in outside.iterdir()) == ["exp19", "secret.log"]


def test_bad_calls_are_one_line_tool_errors_and_the_server_keeps_serving(tmp_path):
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "notes").mkdir()
    (tmp_path / "not-a-report").mkdir()
    (tmp_path / "not-a-report" / "report.json").write_text('{"hello": 1}')
    bad = [
        ("no_such_tool", {}, "unknown tool no_such_tool"),
        ("diagnose", {}, "missing argument paths"),
        ("diagnose", {"paths": "x.log"}, "argument paths: expected an array"),
        ("diagnose", {"paths": [1]}, "every item must be a string"),
        ("diagnose", {"paths": ["missing.log"]}, "missing.log: no such file or folder"),
        ("diagnose", {"paths": ["x.log"], "colour": "red"}, "unknown argument colour"),
        ("diagnose", {"paths": ["empty.log"], "max_chars": 0}, "argument max_chars: at least 1"),
        ("diagnose", {"paths": ["notes"]}, "no logs found"),
        ("explain", {"snapshot": "notes"}, "notes"),
        ("fix_propose", {"snapshot": "not-a-report"}, "not a faildiag report"),
        ("fix_apply", {"snapshot": "notes", "fix_id": "env-1"}, "not a faildiag snapshot"),
        ("lock_diff", {"new": "notes"}, "a folder without artifacts/failure.lock.json"),
        ("lock_diff", {"new": "empty.log", "old": "empty.log"}, "empty.log"),
        ("retort_diagnose", {"experiment_dir": "notes"}, "notes"),
    ]

    async def scenario(session):
        out = [await session.call_tool(name, args) for name, args, _ in bad]
        tools = (await session.list_tools()).tools
        return out, tools

    results, tools = with_server(tmp_path, scenario=scenario)
    for (name, _, expected), result in zip(bad, results, strict=True):
        assert expected in error_line(result), (name, error_line(result))
    assert len(tools) == 6  # still serving after every refusal


def test_everything_it_returns_is_redacted(tmp_path):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    log = tmp_path / "run.log"
    log.write_text(
        f"export GITHUB_TOKEN={token}\nTraceback (most recent call last):\n"
        f'  File "train.py", line 3, in <module>\n'
        f"RuntimeError: login failed for https://user:{token}@example.com/repo.git\n"
    )

    async def scenario(session):
        report = await session.call_tool("diagnose", {"paths": ["run.log"], "command": f"train --token {token}"})
        explained = await session.call_tool("explain", {"snapshot": "faildiag-out"})
        resource = await session.read_resource("faildiag://snapshot/faildiag-out/report.json")
        return report, explained, resource

    report, explained, resource = with_server(tmp_path, scenario=scenario)
    for text in (json.dumps(structured(report)), json.dumps(structured(explained)), resource.contents[0].text):
        assert token not in text and "REDACTED" in text


def test_a_stray_write_to_stdout_does_not_reach_the_protocol(tmp_path):
    """A fix's verification rerun (or anything else in the server) writing to fd 1 must not corrupt the wire:
    the rerun of this project prints on stdout, and the client still gets a well-formed answer."""
    project = make_data_dir_project(tmp_path / "proj")
    (project / "train.py").write_text(
        "import os, sys\nos.write(1, b'{not json}\\n')\n" + (project / "train.py").read_text(), encoding="utf-8"
    )
    res = subprocess.run([sys.executable, "train.py"], cwd=project, env=child_env(), capture_output=True, text=True)
    (project / "out.log").write_text(res.stderr, encoding="utf-8")
    made = cli("diagnose", "out.log", "--exit-code", "1", "--command", f"{sys.executable} train.py", cwd=project)
    assert made.returncode == 0, made.stderr

    async def scenario(session):
        proposal = structured(await session.call_tool("fix_propose", {"snapshot": "faildiag-out"}))
        record = structured(
            await session.call_tool("fix_apply", {"snapshot": "faildiag-out", "fix_id": proposal["id"]})
        )
        return record, (await session.list_tools()).tools

    record, tools = with_server(project, scenario=scenario)
    assert record["verification"] == "passed" and len(tools) == 6
    assert "{not json}" in (project / "faildiag-out" / "fix" / "rerun.log").read_text()


def test_it_diagnoses_retort_runs_inside_its_roots(tmp_path):
    shutil.copytree(ROOT / "tests" / "data" / "retort" / "exp19", tmp_path / "exp19")

    async def scenario(session):
        full = structured(await session.call_tool("retort_diagnose", {"experiment_dir": "exp19"}))
        small = structured(await session.call_tool("retort_diagnose", {"experiment_dir": "exp19", "max_chars": 2000}))
        return full, small

    full, small = with_server(tmp_path, scenario=scenario)
    assert full["runs"] and all(set(r) == {"run", "verdict", "subtype", "claims", "action"} for r in full["runs"])
    assert len(json.dumps(small, ensure_ascii=False)) <= 2000
    assert small["runs"][0]["run"] == full["runs"][0]["run"]


def test_the_working_folder_is_the_default_root(tmp_path):
    (tmp_path / "a.log").write_text("Traceback (most recent call last):\nKeyError: 'DATA_DIR'\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.log"
    outside.write_text("x")

    async def scenario(session):
        ok = structured(await session.call_tool("diagnose", {"paths": ["a.log"]}))
        refused = error_line(await session.call_tool("diagnose", {"paths": [str(outside)]}))
        return ok, refused

    try:
        ok, refused = with_server(scenario=scenario, cwd=tmp_path)
    finally:
        os.unlink(outside)
    assert "DATA_DIR" in ok["summary"] and (tmp_path / "faildiag-out" / "report.json").is_file()
    assert "outside the server's roots" in refused


def test_it_survives_garbage_on_the_wire_and_exits_quietly_when_the_client_goes(tmp_path):
    res = cli(
        "mcp", "--root", str(tmp_path), cwd=tmp_path, stdin=b'not json\n\xff\xfe\n{"jsonrpc": "2.0"}\n', timeout=60
    )
    assert res.returncode == 0 and b"Traceback" not in res.stderr
    for line in res.stdout.splitlines():  # whatever it answered is JSON-RPC, nothing else
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_a_job_folder_written_by_several_nodes_is_merged_as_the_cli_merges_it(tmp_path):
    failing = "import os; print(os.environ['DATA_DIR'])"
    for node, code in (("node-a", failing), ("node-b", "print('ok')")):
        res = cli("run", "--job-dir", "job", "--node", node, "--", sys.executable, "-c", code, cwd=tmp_path)
        assert res.returncode == (1 if node == "node-a" else 0), res.stderr

    async def scenario(session):
        return structured(await session.call_tool("diagnose", {"paths": ["job"]}))

    report = with_server(tmp_path, scenario=scenario)
    assert {n["name"]: n["status"] for n in report["nodes"]} == {"node-a": "failed", "node-b": "ok"}
    assert report["profile"]["first_failure"]["host"] == "node-a" and "DATA_DIR" in report["summary"]
