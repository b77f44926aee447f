"""Manual proposals (no safe automatic change, operator hand-off), bad usage, damaged reports, the run's
folder, pytest sessions, and an interrupted verification."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_faildiag.commands.fix import propose_for_session


def test_a_missing_package_gets_manual_install_steps_and_cannot_be_confirmed(project):
    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    project.write("train.py", "import wandb\n\nwandb.init(project='demo')\n")
    report = project.fail_and_diagnose()
    assert report["root_causes"][0]["id"] == "environment.missing_module"

    proposal = project.proposal_changes_nothing()
    assert proposal["automatic"] is False and proposal["changes"] == []
    assert proposal["summary"].startswith("a package installation for environment.missing_module")
    assert any("pip install wandb" in step for step in proposal["manual_steps"])

    before = project.hashes()
    for args in (("--confirm", proposal["id"]), ("--yes",)):
        res = project.fix(*args)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and "manual steps" in res.stderr
    assert project.hashes() == before


@pytest.mark.torch
def test_a_missing_operator_kernel_is_handed_off_to_operator_work(project):
    pytest.importorskip("torch")
    project.write("train.py", "import torch\n\nx = torch.ones(2, 2).to_sparse()\nprint(x.view(4))\n")
    report = project.fail_and_diagnose()
    assert report["profile"]["type"] == "unsupported_op"

    proposal = project.proposal_changes_nothing()
    assert proposal["automatic"] is False
    handoff = [s for s in proposal["manual_steps"] if s.startswith("hand off to operator work:")]
    assert handoff and "report.json" in handoff[-1]
    text = project.fix().stdout
    assert "no automatic change; manual steps:" in text


def _faildiag(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("setup", ["missing", "empty", "malformed", "not_a_report"])
def test_it_says_in_one_line_when_the_folder_is_not_a_usable_snapshot(tmp_path, setup):
    snap = tmp_path / "snap"
    if setup != "missing":
        snap.mkdir()
    if setup == "malformed":
        (snap / "report.json").write_text("{not json")
    if setup == "not_a_report":
        (snap / "report.json").write_text(json.dumps({"hello": 1}))
    res = _faildiag("fix", str(snap), "--format", "json", cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("faildiag: ") and res.stderr.count("\n") == 1


def test_it_refuses_a_working_folder_that_does_not_exist(project):
    project.write("train.py", "import os\n\nprint(os.environ['DATA_DIR'])\n")
    project.fail_and_diagnose()
    res = project.fix("--cwd", str(project.root / "nope"))
    assert res.returncode == 2 and "working folder does not exist" in res.stderr


def test_it_proposes_for_every_failed_test_of_a_session_and_applies_nothing(project, capsys):
    project.write("train.py", "import os\n\nprint(os.listdir(os.environ['DATA_DIR']))\n")
    (project.root / "data").mkdir()
    project.fail_and_diagnose()
    out = project.root / "session-out"
    out.mkdir()
    (project.snapshot).rename(out / "test_train")
    (out / "session.json").write_text(
        json.dumps(
            {
                "schema": "faildiag.session/1",
                "cwd": str(project.root),
                "tests": [
                    {"nodeid": "tests/test_train.py::test_train", "snapshot": "test_train"},
                    {"nodeid": "tests/test_gone.py::test_gone", "snapshot": "not-there"},
                    {"nodeid": "evil", "snapshot": "../../etc"},
                ],
            }
        )
    )
    before = project.hashes()
    results = propose_for_session(out)
    assert [r["nodeid"] for r in results] == ["tests/test_train.py::test_train"]
    proposal = results[0]["proposal"]
    assert proposal["changes"][0]["key"] == "DATA_DIR" and proposal["automatic"]
    printed = capsys.readouterr().out
    assert "tests/test_train.py::test_train" in printed and proposal["id"] in printed
    assert project.hashes() == before
    assert "fix" not in json.loads((out / "test_train" / "report.json").read_text())

    listed = _faildiag("fix", str(out), "--format", "json", cwd=project.root)
    assert listed.returncode == 0, listed.stderr
    assert [t["proposal"]["id"] for t in json.loads(listed.stdout)["tests"]] == [proposal["id"]]
    refused = _faildiag("fix", str(out), "--confirm", proposal["id"], cwd=project.root)
    assert refused.returncode == 2 and "session folder" in refused.stderr
    assert project.hashes() == before


def _listdir_project(project):
    project.write("train.py", "import os\n\nprint(sorted(os.listdir(os.environ['DATA_DIR'])))\n")
    (project.root / "data").mkdir()
    project.fail_and_diagnose()


def test_it_reruns_in_the_folder_given_by_cwd_when_called_from_elsewhere(project, tmp_path):
    _listdir_project(project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data").mkdir()  # a decoy: the value must come from the run's folder
    argv = [sys.executable, "-m", "pytest_faildiag.cli", "fix", str(project.snapshot), "--cwd", str(project.root)]
    proposal = json.loads(
        subprocess.run(
            [*argv, "--format", "json"], cwd=elsewhere, env=project.env(), capture_output=True, text=True, timeout=60
        ).stdout
    )
    assert proposal["changes"][0]["new"] == str((project.root / "data").resolve())
    res = subprocess.run([*argv, "--yes"], cwd=elsewhere, env=project.env(), capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert project.report()["fix"]["cwd"] == str(project.root)


def test_it_reads_the_working_folder_from_the_report_when_the_snapshot_records_it(project, tmp_path):
    _listdir_project(project)
    report = project.report()
    report["cwd"] = str(project.root)  # what `faildiag run` records next to the command
    (project.snapshot / "report.json").write_text(json.dumps(report))
    res = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "fix", str(project.snapshot), "--yes"],
        cwd=tmp_path,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no longer reproduces" in res.stdout


@pytest.mark.parametrize(
    "report",
    [
        {"schema": "faildiag.report/1", "profile": [], "root_causes": "none"},
        {
            "schema": "faildiag.report/1",
            "root_causes": [None, 3, {"id": "x", "fix_template": {"kind": "source", "find": "("}}],
        },
        {
            "schema": "faildiag.report/1",
            "profile": {"first_failure": "oops", "command": 5},
            "root_causes": [
                {"id": "y", "fix_template": {"kind": "env", "name": 7, "defaults": []}, "evidence": ["bad"]}
            ],
            "sources": [None, "../../etc/passwd", "/etc/passwd"],
            "cwd": 12,
        },
    ],
)
def test_a_damaged_report_gets_a_proposal_never_a_traceback(tmp_path, report):
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "report.json").write_text(json.dumps(report))
    res = _faildiag("fix", str(snap), "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["automatic"] is False


def test_an_interrupted_verification_rolls_back_and_stops_the_rerun(project):
    project.write(
        "train.py",
        """
        import os
        import time

        data = os.environ["DATA_DIR"]
        with open("rerun.pid", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
    """,
    )
    (project.root / "data").mkdir()
    project.fail_and_diagnose()
    # SIGINT at default, as a shell's foreground job has it (a runner started in the background may not)
    proc = subprocess.Popen(
        project.fix_argv("--yes"),
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    pid_file = project.root / "rerun.pid"
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (project.snapshot / "fix" / "fix.env").exists()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    fix = project.report()["fix"]
    assert (fix["applied"], fix["verification"], fix["rolled_back"]) == (True, "not_run", True)
    assert not (project.snapshot / "fix" / "fix.env").exists()
    rerun_pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(rerun_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(rerun_pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
