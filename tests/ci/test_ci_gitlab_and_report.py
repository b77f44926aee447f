"""GitLab Code Quality output and the `faildiag report` command, on real snapshot folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.ci import gitlab
from pytest_faildiag.ci._load import load
from tests.ci.ci_helpers import snapshot_from_case


def faildiag(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_the_code_quality_report_follows_gitlabs_schema(
    session_out: Path, workspace: Path, tmp_path: Path, monkeypatch
):
    monkeypatch.setenv("CI_PROJECT_DIR", str(workspace))
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    target = tmp_path / "gl-code-quality-report.json"
    assert gitlab.write_codequality(session_out, target) == 9
    issues = json.loads(target.read_text())
    assert isinstance(issues, list) and len(issues) == 9
    for issue in issues:
        assert set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in {"info", "minor", "major", "critical", "blocker"}
        assert issue["location"]["path"] == "tests/test_models.py"
        assert isinstance(issue["location"]["lines"]["begin"], int) and issue["location"]["lines"]["begin"] >= 1
    assert len({i["fingerprint"] for i in issues}) == 9  # one per test: GitLab dedupes on it
    assert issues[0]["check_name"] == "faildiag/model.shape_mismatch"
    oom = [i for i in issues if "test_big_alloc" in i["description"]]
    assert {i["severity"] for i in oom} == {"critical"}


def test_fingerprints_are_stable_across_runs_and_change_with_the_cause(session_out: Path):
    a = load(session_out).failures
    b = load(session_out).failures
    assert [gitlab.fingerprint(f) for f in a] == [gitlab.fingerprint(f) for f in b]
    shape, oom = a[0], a[5]
    oom_as_shape = type(oom)(**{**oom.__dict__, "nodeid": shape.nodeid})
    assert gitlab.fingerprint(oom_as_shape) != gitlab.fingerprint(shape)


def test_junit_properties_carry_the_contracts_names(session_out: Path):
    f = load(session_out).failures[0]
    props = dict(gitlab.junit_properties(f))
    assert props["faildiag.category"] == "model" and props["faildiag.type"] == "runtime_error"
    assert props["faildiag.cause"] == "model.shape_mismatch" and props["faildiag.summary"]


@pytest.mark.parametrize("fmt", ["text", "md", "json", "github", "gitlab", "html"])
def test_report_re_renders_a_session_folder_in_every_format(session_out: Path, workspace: Path, fmt: str):
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("GITHUB_")}
    r = faildiag("report", str(session_out), "--format", fmt, cwd=workspace, env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    if fmt == "text":
        assert out.startswith("faildiag: 9 failed test(s), 4 cause(s)")
        assert "5 × layer sizes or tensor shapes disagree" in out
    elif fmt == "md":
        assert "| # | cause | tests |" in out and "### 1. layer sizes" in out
    elif fmt == "json":
        data = json.loads(out)
        assert data["schema"] == "faildiag.session/1" and len(data["tests"]) == 9 and data["groups"][0]["tests"]
    elif fmt == "github":
        assert sum(ln.startswith("::error ") for ln in out.splitlines()) == 9
    elif fmt == "gitlab":
        assert len(json.loads(out)) == 9
    else:
        assert out.startswith("<!DOCTYPE html>") and out.count('<section class="group') == 4


def test_report_re_renders_a_lone_snapshot_like_diagnose_did(tmp_path: Path):
    snap = tmp_path / "snap"
    rep = snapshot_from_case(snap, "gloo_collective_timeout")
    text = faildiag("report", str(snap))
    assert text.returncode == 0 and text.stdout.startswith(f"faildiag: {rep['summary']}")
    js = faildiag("report", str(snap), "--format", "json")
    assert json.loads(js.stdout) == json.loads((snap / "report.json").read_text())
    md = faildiag("report", str(snap / "report.json"), "--format", "md")
    assert md.stdout.splitlines()[0] == "# faildiag report"


def test_report_writes_the_output_file_when_asked(tmp_path: Path):
    snap = tmp_path / "snap"
    snapshot_from_case(snap, "shape_mismatch")
    target = tmp_path / "site" / "report.html"
    r = faildiag("report", str(snap), "--html", "--output", str(target))
    assert r.returncode == 0 and r.stdout == ""
    assert "layer sizes or tensor shapes disagree" in target.read_text()


@pytest.mark.parametrize("bad", ["missing-dir", "empty-dir", "a-file.txt", "garbage-session"])
def test_report_says_what_is_wrong_in_one_line_for_bad_input(tmp_path: Path, bad: str):
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "a-file.txt").write_text("hello")
    (tmp_path / "garbage-session").mkdir()
    (tmp_path / "garbage-session" / "session.json").write_text("{not json")
    r = faildiag("report", str(tmp_path / bad))
    assert r.returncode == 2
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("faildiag: ")


def test_report_reads_a_session_whose_index_is_missing(session_out: Path, tmp_path: Path):
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(session_out, copy)
    (copy / "session.json").unlink()
    r = faildiag("report", str(copy), "--format", "json")
    assert r.returncode == 0 and len(json.loads(r.stdout)["tests"]) == 9
