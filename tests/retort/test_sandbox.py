"""Ground-truthing runs agent-written tests: through the real retort code path, they run sandboxed.

The archived tests here are hostile on purpose: they print the operator's tokens, write to ``~``, call a
server on this machine, and leave a process behind. Secret values are plain strings on purpose: redaction
would mask ``ghp_…`` shapes on the way out and hide a leak; these would appear in clear if they got through.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import pytest
from retort_helpers import PASSING_PY, Experiment, run_cli

from pytest_faildiag.integrations import retort as rt

PY = {"language": "python", "agent": "claude-code", "model": "sonnet"}
SECRETS = {
    "GITHUB_TOKEN": "plain-gh-value-31337",
    "AWS_SECRET_ACCESS_KEY": "plain-aws-value-31337",
    "HF_TOKEN": "plain-hf-value-31337",
}

LEAKY_TEST = """import os
from pathlib import Path


def test_leak():
    print("TOKENS", os.environ.get("GITHUB_TOKEN"), os.environ.get("AWS_SECRET_ACCESS_KEY"),
          os.environ.get("HF_TOKEN"))
    print("NETRC", (Path.home() / ".netrc").exists())
    (Path.home() / "pwned.txt").write_text("was here")
    assert False
"""


def only(root: Path, **kw) -> rt.RunDiagnosis:
    result = rt.diagnose_experiments(root, rt.Options(**kw))
    assert len(result.diagnoses) == 1
    return result.diagnoses[0]


def test_an_archived_test_does_not_see_the_operators_secrets_or_home(
    experiment: Experiment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    home = tmp_path / "operator-home"
    home.mkdir()
    (home / ".netrc").write_text("machine example.com login me password hunter2\n")
    monkeypatch.setenv("HOME", str(home))
    experiment.add_run(PY, files={**PASSING_PY, "tests/test_leak.py": LEAKY_TEST})
    out = tmp_path / "out"
    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    detail = json.loads((out / "retort-diagnosis.json").read_text())["runs"][0]["test_run"]
    assert detail["status"] == "failed"
    assert "TOKENS None None None" in detail["excerpt"] and "NETRC False" in detail["excerpt"]
    written = proc.stdout + proc.stderr + "".join(p.read_text() for p in out.iterdir() if p.is_file())
    assert not any(value in written for value in SECRETS.values())
    assert sorted(p.name for p in home.iterdir()) == [".netrc"]
    assert {
        "env allow-list",
        "throw-away HOME and TMPDIR",
        "throw-away working copy",
        "timeout",
        "process group killed",
    } <= set(detail["sandbox_held"])
    roll = json.loads((out / "retort-rollup.json").read_text())["sandbox"]
    assert roll["test_runs"] == 1 and "env allow-list" in roll["held"]
    assert "Archived tests ran sandboxed (test runs: 1); held: env allow-list" in proc.stdout
    assert "NOT held: host files out of reach" in proc.stdout


def test_an_archived_test_cannot_reach_a_server_on_this_machine(experiment: Experiment) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        files = dict(PASSING_PY)
        files["tests/test_net.py"] = (
            "import socket\n\n\ndef test_calls_home():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
        )
        experiment.add_run(PY, files=files)
        tr = only(experiment.root).test_run
    assert tr is not None
    if "no network (netns)" in tr.sandbox_held:
        assert tr.status == "failed" and tr.failed == 1 and tr.passed == 2
        assert "Network is unreachable" in tr.excerpt
    else:  # the kernel refused a namespace: the run must say the network was open
        assert any(n.startswith("no network (netns):") for n in tr.sandbox_not_held)


def test_a_hanging_archived_test_is_killed_with_what_it_started(experiment: Experiment, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    files = dict(PASSING_PY)
    files["tests/test_hang.py"] = (
        "import subprocess, sys, time\nfrom pathlib import Path\n\n\ndef test_hang():\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
        " start_new_session=True)\n"
        f"    Path({str(pid_file)!r}).write_text(str(child.pid))\n"
        "    time.sleep(300)\n"
    )
    experiment.add_run(PY, files=files)
    start = time.monotonic()
    tr = only(experiment.root, test_timeout=8).test_run
    assert tr is not None and tr.status == "timeout"
    assert time.monotonic() - start < 60
    pid = int(pid_file.read_text())
    try:
        assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass
    assert "process group killed" in tr.sandbox_held


def test_runs_whose_tests_were_not_run_report_no_sandbox(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    result = rt.diagnose_experiments(experiment.root, rt.Options(run_tests=False))
    assert rt.rollup(result)["sandbox"] == {"test_runs": 0, "held": [], "not_held": []}
    assert "Archived tests ran sandboxed" not in rt.render_text(result, rt.rollup(result))


def test_a_dependency_install_is_the_only_step_given_the_network(experiment: Experiment) -> None:
    experiment.add_run(PY, files={**PASSING_PY, "requirements.txt": "# nothing to install\n"})
    tr = only(experiment.root, install_deps=True).test_run
    assert tr is not None and tr.status == "passed"
    assert "no network (netns): network allowed for the dependency install (pip install) only" in tr.sandbox_not_held
    assert "env allow-list" in tr.sandbox_held
