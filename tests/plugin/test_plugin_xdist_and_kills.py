"""pytest-xdist workers, a worker killed with SIGKILL, and a whole session killed: the journal names the
test that was running and the evidence it left is diagnosed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import entry_for, recover_killed, session_index

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
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.parametrize("i", range(6))
        def test_many(i):
            assert i % 2 == 0, f"odd {i}"
    """
    )
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
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_faildiag.cli",
            "recover",
            "--out",
            str(out),
            "--format",
            "json",
            "--root",
            str(pytester.path / "runpytest-0"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
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


TERMINATED = """
    import os
    import signal
    import threading
    import time

    def test_waits():
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        time.sleep(120)
"""


def test_a_session_terminated_from_outside_is_not_read_as_out_of_memory(pytester: pytest.Pytester) -> None:
    """``timeout``, a CI cancel or Slurm end a stuck session with SIGTERM: nothing in the journal says memory
    ran out, so recover must not say so (its statement once listed the OOM killer among possible killers, and
    the engine read that list as evidence)."""
    pytester.makepyfile(test_t=TERMINATED)
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", timeout=180)
    assert result.ret in (-15, 143)
    out = pytester.path / "faildiag-out"
    killed = recover_killed(out)
    assert [k["nodeid"] for k in killed] == ["test_t.py::test_waits"]
    report = json.loads((out / killed[0]["slug"] / "report.json").read_text())
    assert report["profile"]["type"] != "oom", report["summary"]
    assert "memory" not in report["summary"].lower(), report["summary"]
    assert [c["category"] for c in report["root_causes"][:1]] != ["resource"], report["summary"]


def test_recover_without_a_journal_is_a_one_line_usage_error(tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "recover", "--out", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no journal.jsonl" in proc.stderr
    assert "Traceback" not in proc.stderr


def _junit_props(junit, test_name: str) -> list[tuple[str, str]]:
    import xml.etree.ElementTree as ET

    cases = [c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == test_name]
    assert len(cases) == 1, f"{len(cases)} testcases named {test_name}"
    return [(p.get("name"), p.get("value")) for p in cases[0].iter("property")]


def test_a_crashed_workers_junit_testcase_carries_the_properties_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k=KILLER)
    result = pytester.runpytest_subprocess(
        "--faildiag", "-n", "2", "--junitxml=junit.xml", "--faildiag-rerun", "0", timeout=180
    )
    result.assert_outcomes(passed=2, failed=1)
    props = _junit_props(pytester.path / "junit.xml", "test_killed")
    names = [n for n, _ in props]
    assert names.count("faildiag.category") == 1 and names.count("faildiag.summary") == 1, props
    assert ("faildiag.category", "resource") in props and ("faildiag.type", "oom") in props
    assert _junit_props(pytester.path / "junit.xml", "test_after") == []


FLAKY = """
    from pathlib import Path

    def test_always_fails():
        assert 1 == 2

    def test_passes_the_second_time():
        counter = Path(__file__).with_name("attempts.txt")
        counter.write_text(counter.read_text() + "x" if counter.exists() else "x")
        assert len(counter.read_text()) >= 2
"""

# What pytest-rerunfailures does, through pytest's own runtestprotocol: each attempt runs setup, call and
# teardown again; a failed report of an attempt that will be retried is logged as "rerun", the rest not at all.
RERUNNING_CONFTEST = """
    import pytest
    from _pytest.runner import runtestprotocol

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(item, nextitem):
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for attempt in range(3):
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
            retry = attempt < 2 and any(r.failed for r in reports)
            for report in reports:
                if retry and report.failed:
                    report.outcome = "rerun"
                    item.ihook.pytest_runtest_logreport(report=report)
                    break
                item.ihook.pytest_runtest_logreport(report=report)
            if not retry:
                break
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def pytest_report_teststatus(report):
        if report.outcome == "rerun":
            return "rerun", "R", "RERUN"
"""


def _assert_one_set_on_the_final_failure(junit) -> None:
    props = _junit_props(junit, "test_always_fails")
    assert [n for n, _ in props].count("faildiag.category") == 1, props
    assert _junit_props(junit, "test_passes_the_second_time") == []


def test_a_test_retried_in_the_session_carries_one_set_of_properties_on_its_final_outcome(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_flaky=FLAKY)
    pytester.makeconftest(RERUNNING_CONFTEST)
    result = pytester.runpytest("--faildiag", "--junitxml=junit.xml", "--faildiag-rerun", "0", "-p", "no:xdist")
    assert result.parseoutcomes() == {"failed": 1, "passed": 1, "rerun": 3}
    _assert_one_set_on_the_final_failure(pytester.path / "junit.xml")


def test_with_pytest_rerunfailures_only_the_final_failure_carries_properties(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_rerunfailures")
    pytester.makepyfile(test_flaky=FLAKY)
    result = pytester.runpytest("--faildiag", "--junitxml=junit.xml", "--faildiag-rerun", "0", "--reruns", "2")
    assert result.parseoutcomes() == {"failed": 1, "passed": 1, "rerun": 3}
    _assert_one_set_on_the_final_failure(pytester.path / "junit.xml")


def test_each_failing_subtest_gets_its_own_snapshot(pytester: pytest.Pytester) -> None:
    if not hasattr(pytest, "Subtests"):
        pytest.skip("this pytest has no built-in subtests (pytest 9+)")
    pytester.makepyfile(
        test_sub="""
        def test_shapes(subtests):
            for width in (3, 4, 5):
                with subtests.test(msg="width", width=width):
                    print(f"checking width {width}")
                    assert width == 4, f"width {width} is not 4"
    """
    )
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "0", "-p", "no:xdist")
    assert result.ret == 1
    entries = [t for t in session_index(pytester.path)["tests"] if t["nodeid"].endswith("test_shapes")]
    assert [e.get("subtest") for e in entries] == [1, 2]
    assert len({e["slug"] for e in entries}) == 2
    for e, width in zip(entries, (3, 5), strict=True):
        evidence = pytester.path / "faildiag-out" / e["slug"] / "evidence"
        assert f"width {width} is not 4" in (evidence / "longrepr.txt").read_text()
