"""Under pytest-timeout the stack dump before its deadline is written by a Python timer thread, never by
faulthandler's C thread (which reads a busy thread's frames without the GIL and crashed xdist workers at the
deadline). Real pytest-timeout, real pytest-xdist workers, CPU-busy tests."""

from __future__ import annotations

import pytest

from .conftest import session_index

pytestmark = pytest.mark.usefixtures("isolated")
pytest.importorskip("pytest_timeout")
pytest.importorskip("xdist")

BUSY = """
import threading
import time

import pytest


def feeder():
    while True:
        time.sleep(0.01)


def spin(n):
    return 0 if n == 0 else spin(n - 1) + 1


@pytest.mark.parametrize("i", range(4))
def test_busy(i):
    threading.Thread(target=feeder, name="feeder", daemon=True).start()
    while True:
        spin(200)  # frames pushed and popped all the time: what the C-thread dump must not walk
"""


def test_busy_workers_reach_the_pytest_timeout_deadline_with_a_python_stack_dump(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_busy=BUSY)
    result = pytester.runpytest_subprocess(
        "--faildiag",
        "--faildiag-rerun",
        "0",
        "-n",
        "2",
        "--timeout",
        "1",
        "--timeout-method",
        "signal",
        "-p",
        "no:cacheprovider",
        timeout=180,
    )
    result.assert_outcomes(failed=4)  # each a Timeout failure, none a crashed worker
    out = result.stdout.str()
    assert "crashed" not in out and "Timeout" in out
    tests = session_index(pytester.path)["tests"]
    assert len(tests) == 4 and {t["type"] for t in tests} == {"hang"}
    for entry in tests:
        stacks = (pytester.path / "faildiag-out" / entry["slug"] / "evidence" / "hang-stacks.txt").read_text()
        assert "[feeder]" in stacks  # the Python dump names every thread; faulthandler's names none
        assert "in test_busy" in stacks and "format_current_stacks" not in stacks  # not the dumping thread
        assert "timeout_sigalrm" not in stacks  # the deadline's handler is not where the test was
