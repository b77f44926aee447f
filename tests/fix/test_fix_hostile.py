"""Fix mode against crafted snapshots: what it shows is what it does, and it acts only inside the project.

Each test builds the hostile input itself (an edited or hand-written report.json, planted symbolic links,
a FIFO, escape sequences) and runs the real `faildiag fix` as a subprocess; the assertions are on files
on disk (a PWNED marker, an outside file's bytes) and on what a person sees on stdout/stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_faildiag.fix.apply import FixError, apply_proposal
from pytest_faildiag.fix.context import load_context
from pytest_faildiag.fix.propose import propose
from pytest_faildiag.sanitize import json_safe, visible

from .conftest import FAILDIAG, Project, run_env

TRAIN = "import os\n\nprint(sorted(os.listdir(os.environ['DATA_DIR'])))\n"
ERASE = "\x1b[2K\x1b[1G"


def _data_dir_project(project: Project, command: str = "python train.py") -> None:
    """A real run that fails for a missing DATA_DIR, snapshotted by the real `faildiag diagnose`."""
    project.write("train.py", TRAIN)
    (project.root / "data").mkdir()
    (project.root / "data" / "a.txt").write_text("x")
    project.fail_and_diagnose()
    if command != "python train.py":
        _set_report(project.snapshot, lambda r: r["profile"].__setitem__("command", command))


def _set_report(snapshot: Path, edit: Any) -> None:
    path = snapshot / "report.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    edit(report)
    path.write_text(json.dumps(report), encoding="utf-8")


def _one_line_refusal(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.startswith("faildiag: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr
    return res.stderr


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------- foreign commands


def test_an_injected_command_is_shown_and_never_run_by_yes_or_the_fix_id(project):
    _data_dir_project(project, "python train.py; touch PWNED")
    pwned = project.root / "PWNED"
    before = project.user_hashes()

    shown = project.fix()
    assert shown.returncode == 0
    assert "verification rerun: python train.py; touch PWNED" in shown.stdout
    assert "NOT recorded by faildiag on this machine" in shown.stdout
    proposal = project.propose()
    rerun = proposal["rerun"]
    assert (rerun["command"], rerun["recorded_here"]) == ("python train.py; touch PWNED", False)
    assert f"--confirm-command {rerun['command_id']}" in shown.stdout

    for args in (
        ("--yes",),
        ("--confirm", proposal["id"]),
        ("--confirm", proposal["id"], "--confirm-command", "cmd-0000000000"),
    ):
        err = _one_line_refusal(project.fix(*args))
        assert "touch PWNED" in err or "cmd-0000000000" in err
    assert not pwned.exists() and project.user_hashes() == before and "fix" not in project.report()

    kept = project.fix("--yes", "--keep")  # applied without verification: the command still does not run
    assert kept.returncode == 1, kept.stdout + kept.stderr
    assert not pwned.exists()
    fix = project.report()["fix"]
    assert (fix["applied"], fix["verification"], fix["kept"]) == (True, "not_run", True)
    assert "not recorded by faildiag on this machine" in fix["outcome"]


def test_the_command_runs_only_with_its_own_confirmation_and_then_sandboxed(project):
    _data_dir_project(project, "python train.py; env > seen-env.txt; touch CONFIRMED")
    proposal = project.propose()
    token = "ghp_" + "Z9" * 18
    res = project.fix(
        "--confirm",
        proposal["id"],
        "--confirm-command",
        proposal["rerun"]["command_id"],
        GITHUB_TOKEN=token,
        AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert (project.root / "CONFIRMED").exists()
    fix = project.report()["fix"]
    assert fix["verification"] == "passed"
    # a command this machine did not record runs as untrusted code: no operator secrets, a throw-away HOME
    seen = (project.root / "seen-env.txt").read_text()
    assert token not in seen and "AWS_SECRET_ACCESS_KEY" not in seen
    assert "DATA_DIR=" in seen  # the fix itself still reaches the command
    assert "env allow-list" in fix["after"]["sandbox"]["held"]


def test_a_snapshot_written_with_another_machines_key_or_moved_is_foreign(project, tmp_path):
    project.write("train.py", TRAIN)
    (project.root / "data").mkdir()
    project.fail_and_diagnose()
    assert project.propose()["rerun"]["recorded_here"] is True  # this machine's own snapshot

    other = subprocess.run(
        [*FAILDIAG, "diagnose", "out.log", "--exit-code", "1", "--command", "python train.py", "--out", "other-out"],
        cwd=project.root,
        env=run_env(XDG_STATE_HOME=str(tmp_path / "other")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 0, other.stderr
    (project.snapshot).rename(project.root / "moved-out")
    for snap in ("other-out", "moved-out"):
        res = subprocess.run(
            [*FAILDIAG, "fix", snap, "--yes"],
            cwd=project.root,
            env=run_env(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert "--confirm-command" in _one_line_refusal(res)


def test_a_command_or_folder_swapped_after_the_id_was_shown_is_refused(project, tmp_path):
    _data_dir_project(project)
    proposal = project.propose()
    assert proposal["rerun"]["recorded_here"] is True
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for edit in (
        lambda r: r["profile"].__setitem__("command", "python train.py && touch PWNED"),
        lambda r: r.__setitem__("cwd", str(elsewhere)),
    ):
        _set_report(project.snapshot, edit)
        err = _one_line_refusal(
            project.fix("--confirm", proposal["id"], "--confirm-command", proposal["rerun"]["command_id"])
        )
        assert f"no proposal {proposal['id']}" in err
    assert not (project.root / "PWNED").exists() and not (elsewhere / "PWNED").exists()
    assert "fix" not in project.report()


# ------------------------------------------------------------------------------------- what is displayed


def _crafted(
    project: Project,
    template: dict[str, Any],
    frame: str,
    *,
    command: str = "python train.py",
    cwd: str | None = None,
    line: int = 1,
) -> None:
    """A hand-written snapshot (no seal): one cause with ``template``, a traceback frame naming ``frame``."""
    project.snapshot.mkdir()
    report: dict[str, Any] = {
        "schema": "faildiag.report/1",
        "summary": "crafted",
        "profile": {
            "command": command,
            "exit_code": 1,
            "first_failure": {"source": "out.log", "line": 3, "excerpt": "RuntimeError: boom"},
        },
        "root_causes": [
            {
                "id": "crafted.cause",
                "rule": "crafted",
                "category": "model",
                "confidence": 0.9,
                "summary": "crafted",
                "fix_template": template,
                "evidence": [
                    {"kind": "direct", "source": "out.log", "excerpt": f'File "{frame}", line {line}, in <module>'}
                ],
            }
        ],
        "next_actions": [],
    }
    if cwd is not None:
        report["cwd"] = cwd
    (project.snapshot / "report.json").write_text(json.dumps(report), encoding="utf-8")


def test_escape_sequences_in_a_diff_and_a_command_are_shown_not_interpreted(project):
    project.write("train.py", "print('ok')\n")
    hidden_line = f"open('PWNED', 'w')  # {ERASE}+print('ok')  \u202e"
    _crafted(
        project,
        {"kind": "source", "find": r"^print\('ok'\)$", "replace": hidden_line},
        "train.py",
        command=f"touch PWNED #{ERASE}python train.py",
    )
    res = project.fix()
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\u202e" not in res.stdout
    assert "+open('PWNED', 'w')  # \\x1b[2K\\x1b[1G+print('ok')  \\u202e" in res.stdout
    assert "verification rerun: touch PWNED #\\x1b[2K\\x1b[1Gpython train.py" in res.stdout

    js = project.fix("--format", "json")
    assert js.returncode == 0 and "\x1b" not in js.stdout and "\u202e" not in js.stdout
    proposal = json.loads(js.stdout)
    assert hidden_line in proposal["changes"][0]["diff"]  # the JSON value itself is exact

    err = _one_line_refusal(project.fix("--confirm", proposal["id"]))
    assert "\x1b" not in err and "\\x1b[2K" in err
    assert not (project.root / "PWNED").exists()
    assert (project.root / "train.py").read_text() == "print('ok')\n"


def test_visible_escapes_controls_and_keeps_layout_only_when_asked():
    assert visible(f"a{ERASE}b\r\tc\n\x9b\u2028", one_line=True) == "a\\x1b[2K\\x1b[1Gb\\x0d\\tc\\n\\x9b\\u2028"
    assert visible("x\ty\nz\x07") == "x\ty\nz\\x07"
    assert visible("café “quoted” … 数据", one_line=True) == "café “quoted” … 数据"
    assert visible("tag\U000e0041", one_line=True) == "tag\\U000e0041"
    dumped = json.dumps({"k": "\x9b31m\u202e\U000e0041é"}, ensure_ascii=False)
    assert json.loads(json_safe(dumped)) == json.loads(dumped)
    assert "\x9b" not in json_safe(dumped) and "é" in json_safe(dumped)


# ------------------------------------------------------------------------------------- where edits land


def _outside_cases(tmp_path: Path, project: Project) -> dict[str, tuple[str, Path, dict[str, str]]]:
    """name -> (frame text, the outside file that must not change, extra environment)."""
    home = tmp_path / "home"
    home.mkdir()
    bashrc = home / ".bashrc"
    bashrc.write_text("x = 1\n")
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    target = tmp_path / "target.py"
    target.write_text("x = 1\n")
    (project.root / "model.py").symlink_to(target)
    return {
        "home_file": (str(bashrc), bashrc, {"HOME": str(home)}),
        "tilde": ("~/.bashrc", bashrc, {"HOME": str(home)}),
        "dotdot": (f"../../{tmp_path.name}/outside.py", outside, {}),
        "symlink_in_project": ("model.py", target, {}),
    }


@pytest.mark.parametrize("case", ["home_file", "tilde", "dotdot", "symlink_in_project"])
def test_an_edit_outside_the_project_is_refused_and_nothing_outside_changes(project, tmp_path, case):
    frame, victim, env = _outside_cases(tmp_path, project)[case]
    _crafted(project, {"kind": "source", "find": r"^x = 1$", "replace": "x = 2"}, frame)
    before = _sha(victim)
    res = project.fix("--format", "json", **env)
    assert res.returncode == 0, res.stderr
    proposal = json.loads(res.stdout)
    assert proposal["automatic"] is False and proposal["changes"] == []
    if case != "tilde":  # "~" is never expanded: that frame names no file at all
        assert any(n.startswith("not edited: ") and "outside the project" in n for n in proposal["notes"]), proposal
    _one_line_refusal(project.fix("--confirm", proposal["id"], "--keep", **env))
    assert _sha(victim) == before


def test_a_home_folder_run_is_not_a_project(project, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("x = 1\n")
    (home / "tool.py").write_text("x = 1\n")
    _crafted(project, {"kind": "source", "find": r"^x = 1$", "replace": "x = 2"}, "tool.py", cwd=str(home))
    res = project.fix("--format", "json", HOME=str(home))
    proposal = json.loads(res.stdout)
    assert proposal["automatic"] is False
    assert any("is not a project folder" in n for n in proposal["notes"])
    assert (home / "tool.py").read_text() == "x = 1\n"


def test_a_fifo_named_like_source_is_skipped_without_blocking(project):
    os.mkfifo(project.root / "model.py")
    _crafted(project, {"kind": "source", "find": r"^x = 1$", "replace": "x = 2"}, "model.py")
    res = project.fix("--format", "json")  # a blocking read would hang here (the helper's timeout fails it)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["automatic"] is False


def test_a_file_swapped_for_a_link_after_the_proposal_is_refused_at_apply(project, tmp_path):
    project.write("lib.py", "x = 1\n")
    _crafted(project, {"kind": "source", "find": r"^x = 1$", "replace": "x = 2"}, "lib.py")
    ctx = load_context(project.snapshot, cwd=project.root)
    proposal = propose(ctx)
    (change,) = proposal.changes
    assert change.resolved_path == str((project.root / "lib.py").resolve())
    victim = tmp_path / "victim.py"
    victim.write_text("x = 1\n")  # same bytes, same hash: only the resolved path tells them apart
    (project.root / "lib.py").unlink()
    (project.root / "lib.py").symlink_to(victim)
    with pytest.raises(FixError, match="outside the project"):
        apply_proposal(proposal, ctx)
    assert victim.read_text() == "x = 1\n"


def test_a_planted_link_for_the_fix_folder_is_not_written_through(project, tmp_path):
    _data_dir_project(project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project.snapshot / "fix").symlink_to(elsewhere)
    err = _one_line_refusal(project.fix("--yes"))
    assert "symbolic link" in err
    assert list(elsewhere.iterdir()) == []


# ------------------------------------------------------------------------------------- verification


def test_an_exit_0_that_never_reaches_the_failing_line_is_not_verified(project):
    project.write("other.py", "print('all good')\n")
    _data_dir_project(project)
    res = project.fix("--yes", "--command", "python other.py")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "did not reach the original failure point" in res.stdout and "rolled back" in res.stdout
    fix = project.report()["fix"]
    assert (fix["verification"], fix["rolled_back"]) == ("failed", True)
    assert fix["after"]["exit_code"] == 0 and fix["after"]["reached_failure_point"] is False
    assert fix["after"]["failure_point"]["file"].endswith("train.py") and fix["after"]["failure_point"]["line"] == 3
    assert not (project.snapshot / "fix" / "fix.env").exists()


def test_a_pytest_rerun_that_only_collects_is_not_verified(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("DATA_DIR", raising=False)
    pytester.mkdir("data")
    pytester.makepyfile(
        test_train="""
        import os

        def test_reads_the_data_folder():
            assert os.listdir(os.environ["DATA_DIR"]) == []
    """
    )
    pytester.runpytest_subprocess("--faildiag", "-p", "no:cacheprovider").assert_outcomes(failed=1)
    session = json.loads((pytester.path / "faildiag-out" / "session.json").read_text())
    snap = pytester.path / "faildiag-out" / session["tests"][0]["slug"]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_faildiag.cli",
            "fix",
            str(snap),
            "--yes",
            "--command",
            "pytest --collect-only -q -p no:cacheprovider",
        ],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    fix = json.loads((snap / "report.json").read_text())["fix"]
    assert (fix["verification"], fix["after"]["exit_code"], fix["rolled_back"]) == ("failed", 0, True)
    assert fix["outcome"].startswith("the rerun exited 0 but did not reach the original failure point")


SWALLOW = """
import os
import sys
import traceback

try:
    print(os.environ["DATA_DIR_" + "NAME"])
except KeyError:
    traceback.print_exc()
    sys.exit(0 if os.path.exists("swallow") else 1)
"""


def test_an_exit_0_that_still_fails_at_the_same_point_is_not_verified(project):
    project.write("train.py", SWALLOW)
    (project.root / "data").mkdir()
    report = project.fail_and_diagnose()
    assert "DATA_DIR_NAME" in report["profile"]["first_failure"]["excerpt"]
    _set_report(
        project.snapshot,
        lambda r: r["root_causes"][0].__setitem__(
            "fix_template", {"kind": "env", "name": "DATA_DIR", "defaults": {"DATA_DIR": "data"}}
        ),
    )
    (project.root / "swallow").write_text("")  # from now on the program exits 0 after the same traceback
    proposal = project.propose()  # the edited report is foreign: its command needs its own confirmation
    res = project.fix("--confirm", proposal["id"], "--confirm-command", proposal["rerun"]["command_id"])
    assert res.returncode == 1, res.stdout + res.stderr
    fix = project.report()["fix"]
    assert (fix["verification"], fix["outcome"], fix["after"]["exit_code"]) == (
        "failed",
        "still fails at the same place",
        0,
    )


def test_a_test_id_with_shell_syntax_is_quoted_in_the_rerun_command(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("DATA_DIR", raising=False)
    pytester.mkdir("data")
    pytester.makepyfile(
        test_train="""
        import os

        import pytest

        @pytest.mark.parametrize("v", [1], ids=["a; touch PWNED"])
        def test_reads_the_data_folder(v):
            assert os.listdir(os.environ["DATA_DIR"]) == []
    """
    )
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-fix", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert (
        "verification rerun: pytest 'test_train.py::test_reads_the_data_folder[a; touch PWNED]'" in result.stdout.str()
    )
    session = json.loads((pytester.path / "faildiag-out" / "session.json").read_text())
    snap = pytester.path / "faildiag-out" / session["tests"][0]["slug"]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    res = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "fix", str(snap), "--yes"],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((snap / "report.json").read_text())["fix"]["verification"] == "passed"
    assert not (pytester.path / "PWNED").exists()


def _tty(project: Project, answers: list[str]) -> tuple[int, str]:
    """`faildiag fix` on a real pseudo-terminal, answering each `[y/N]` question in turn."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        project.fix_argv(), cwd=project.root, env=project.env(), stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    out, asked = b"", 0
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
                if asked < len(answers) and out.count(b"[y/N]") > asked:
                    os.write(master, answers[asked].encode() + b"\n")
                    asked += 1
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    return proc.returncode, out.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_on_a_terminal_a_foreign_command_gets_its_own_question(project):
    _data_dir_project(project, "python train.py; touch PWNED")
    before = project.user_hashes()
    rc, out = _tty(project, ["y", "n"])
    assert "apply fix " in out and "a command faildiag on this machine did not record: run it? [y/N]" in out
    assert "`python train.py; touch PWNED`" in out
    assert rc == 2 and "--confirm-command" in out
    assert not (project.root / "PWNED").exists() and project.user_hashes() == before

    rc, out = _tty(project, ["y", "y"])
    assert rc == 0, out
    assert (project.root / "PWNED").exists() and project.report()["fix"]["verification"] == "passed"
