"""Hangs: ``--faildiag-timeout`` dumps the stacks, fails the hung test and lets the session go on; with
pytest-timeout active, its deadline is used and its failure is diagnosed with our stack dump."""

from __future__ import annotations

import pytest

from .conftest import entry_for, recover_killed, session_index

pytestmark = pytest.mark.usefixtures("isolated")

HUNG_SUITE = """
    import subprocess
    import threading
    import time

    def wait_for_ready(flag):
        while not flag.is_set():
            time.sleep(0.05)

    def test_first():
        pass

    def test_waits_forever():
        child = subprocess.Popen(["sleep", "60"])
        try:
            wait_for_ready(threading.Event())
        finally:
            child.kill()
            child.wait()

    def test_after_the_hang():
        pass
"""


def test_a_hung_test_is_failed_with_its_stuck_line_and_the_session_goes_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_hang=HUNG_SUITE)
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-timeout", "1.5", "-p", "no:timeout", timeout=120)
    result.assert_outcomes(passed=2, failed=1)
    assert "faildiag: hang detected: call of the test exceeded its faildiag timeout of 1.5s" in result.stdout.str()
    entry = entry_for(session_index(pytester.path), "test_waits_forever")
    assert entry["type"] == "hang" and entry["hang"] is True
    assert (entry["file"], entry["line"]) == ("test_hang.py", 7)  # inside wait_for_ready: where it waited
    evidence = pytester.path / "faildiag-out" / entry["slug"] / "evidence"
    stacks = (evidence / "hang-stacks.txt").read_text()
    assert "(most recent call first)" in stacks and "wait_for_ready" in stacks
    processes = (evidence / "processes.txt").read_text()
    assert "sleep 60" in processes  # the child the test started, with its state
    assert not list(pytester.path.glob("faildiag-out/.stacks-*"))  # the per-process dump file is cleaned up


def test_a_thread_deadlock_is_interrupted_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_lock="""
        import threading

        def test_deadlock():
            lock = threading.Lock()
            lock.acquire()
            lock.acquire()

        def test_next():
            pass
    """
    )
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-timeout", "1", "-p", "no:timeout", timeout=120)
    result.assert_outcomes(passed=1, failed=1)
    entry = entry_for(session_index(pytester.path), "test_deadlock")
    assert entry["type"] == "hang" and entry["line"] == 6


def test_a_fast_suite_is_not_disturbed_by_the_watchdog(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fast="import time\n\ndef test_a():\n    time.sleep(0.2)\n\ndef test_b():\n    pass\n")
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-timeout", "2", timeout=120)
    result.assert_outcomes(passed=2)
    assert session_index(pytester.path)["tests"] == []


def test_with_pytest_timeout_active_its_deadline_wins_and_gets_our_stack_dump(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_hang=HUNG_SUITE)
    result = pytester.runpytest_subprocess(
        "--faildiag", "--faildiag-timeout", "30", "--timeout", "1.5", "--timeout-method", "signal", timeout=120
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*Timeout*1.5*"])
    assert "faildiag: hang detected" not in result.stdout.str()  # pytest-timeout fired, not our watchdog
    entry = entry_for(session_index(pytester.path), "test_waits_forever")
    assert entry["type"] == "hang"
    stacks = (pytester.path / "faildiag-out" / entry["slug"] / "evidence" / "hang-stacks.txt").read_text()
    assert "wait_for_ready" in stacks


def test_a_marker_sets_the_timeout_of_one_test_without_a_session_timeout(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_m="""
        import time
        import pytest

        @pytest.mark.faildiag_timeout(1)
        def test_polls_forever():
            while True:
                time.sleep(0.05)

        def test_unmarked_is_not_timed():
            time.sleep(1.5)
    """
    )
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:timeout", "--strict-markers", timeout=120)
    result.assert_outcomes(passed=1, failed=1)
    entry = entry_for(session_index(pytester.path), "test_polls_forever")
    assert entry["type"] == "hang" and entry["line"] == 7


def test_pytest_timeouts_thread_method_kills_the_process_and_recover_names_the_hang(pytester: pytest.Pytester) -> None:

    pytester.makepyfile(
        test_t="""
        import time

        def wait_forever():
            while True:
                time.sleep(0.05)

        def test_first():
            pass

        def test_stuck():
            wait_forever()
    """
    )
    result = pytester.runpytest_subprocess("--faildiag", "--timeout", "1.5", "--timeout-method", "thread", timeout=120)
    assert "+++ Timeout +++" in result.stdout.str() + result.stderr.str()
    out = pytester.path / "faildiag-out"
    assert not (out / "session.json").exists()  # pytest-timeout ended the process (os._exit): no session end
    [killed] = recover_killed(out)
    assert killed["nodeid"] == "test_t.py::test_stuck" and killed["type"] == "hang"
    stacks = (out / killed["slug"] / "evidence" / "hang-stacks.txt").read_text()
    assert "[MainThread]" in stacks and "wait_forever" in stacks


DEBUGGED = """
    import pdb
    import pytest

    @pytest.mark.faildiag_timeout(1)
    def test_stepped_through():
        pdb.set_trace()
        assert True  # pdb stops here and waits for the person at the prompt
"""


def test_no_hang_verdict_while_pdb_holds_the_test(pytester: pytest.Pytester) -> None:
    """A real pdb prompt held past the deadline (the answer comes 3 s later, the timeout is 1 s): the test
    passes, as with pytest-timeout; without the check, the alarm failed it inside pdb's input()."""
    import os
    import subprocess
    import sys
    import time

    pytester.makepyfile(test_debugged=DEBUGGED)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--faildiag",
            "--faildiag-rerun",
            "0",
            "-p",
            "no:timeout",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "test_debugged.py",
        ],
        cwd=pytester.path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    time.sleep(3)
    out, _ = proc.communicate(b"continue\n", timeout=120)
    text = out.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert "(Pdb)" in text and "hang detected" not in text
    assert "1 passed" in text
