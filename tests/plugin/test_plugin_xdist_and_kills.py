"""pytest-xdist workers, a worker killed with SIGKILL, and a whole session killed: the journal names the
test that was running and the evidence it left is diagnosed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import entry_for, session_index

pytestmark = pytest.mark.usefixtures("isolated")

KILLER = """
    import os
    import signal
    import sys

    def test_before():
        pass

    def test_killed(faildiag_run):
        r = faildiag_run([sys.executable, "-c",
                          "import sys; sys.stderr.write('MemoryError: Unable to allocate 64.0 GiB for an array\\\\n')"])
        assert r.returncode == 0
        os.kill(os.getpid(), signal.SIGKILL)

    def test_after():
        pass
"""


def test_workers_send_their_diagnoses_to_one_session_index(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="""
        import pytest

        @pytest.mark.parametrize("i", range(6))
        def test_many(i):
            assert i % 2 == 0, f"odd {i}"
    """)
    result = pytester.runpytest_subprocess("--faildiag", "-n", "2", "--junitxml=junit.xml", timeout=180)
    result.assert_outcomes(passed=3, failed=3)
    index = session_index(pytester.path)
    assert len(index["tests"]) == 3
    assert {t["worker"] for t in index["tests"]} <= {"gw0", "gw1"}
    for t in index["tests"]:
        assert (pytester.path / "faildiag-out" / t["slug"] / "report.json").is_file()
    result.stdout.fnmatch_lines(["3 failures, 1 cause:"])
    assert result.stdout.str().count("- faildiag -") == 3  # sections travelled from the workers
    assert (pytester.path / "junit.xml").read_text().count('name="faildiag.category"') == 3


def test_a_worker_killed_by_sigkill_is_still_diagnosed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k=KILLER)
    result = pytester.runpytest_subprocess("--faildiag", "-n", "2", timeout=180)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running*test_killed*"])
    entry = entry_for(session_index(pytester.path), "test_killed")
    assert entry["when"] == "crash"
    snap = pytester.path / "faildiag-out" / entry["slug"]
    report = json.loads((snap / "report.json").read_text())
    assert "run1.stderr" in report["sources"]  # the command output the dead worker journaled
    assert entry["category"] == "resource" and entry["type"] == "oom", entry


def test_a_killed_session_is_named_by_recover_and_by_the_next_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k=KILLER)
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", timeout=180)
    assert result.ret == -9 or result.ret == 137
    out = pytester.path / "faildiag-out"
    assert not (out / "session.json").exists()  # nothing written at session end survived

    # pytester ran the session with --basetemp=<its folder>/runpytest-0 (and HOME set to its folder, so it is
    # no "project"): the folder holding the journaled output files is named, as a user with --basetemp does
    proc = subprocess.run([sys.executable, "-m", "pytest_faildiag.cli", "recover", "--out", str(out), "--format",
                           "json", "--root", str(pytester.path / "runpytest-0")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    killed = json.loads(proc.stdout)["killed"]
    assert [k["nodeid"] for k in killed] == ["test_k.py::test_killed"]
    assert killed[0]["type"] == "oom"
    assert (out / killed[0]["slug"] / "report.json").is_file()

    pytester.makepyfile(test_k="def test_fine():\n    pass\n")
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", timeout=180)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["previous session died while running test_k.py::test_killed*"])
    recovered = session_index(pytester.path)["recovered"]
    assert [r["nodeid"] for r in recovered] == ["test_k.py::test_killed"]
    assert (out / "journal.prev.jsonl").is_file()


def test_recover_without_a_journal_is_a_one_line_usage_error(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest_faildiag.cli", "recover", "--out", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no journal.jsonl" in proc.stderr
    assert "Traceback" not in proc.stderr
