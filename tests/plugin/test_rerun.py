"""``--faildiag-rerun``: real reruns in fresh processes, real git repositories, real coverage."""

from __future__ import annotations

import json
import os
import signal
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .conftest import entry_for, git, session_index

pytestmark = pytest.mark.usefixtures("isolated")


def _report(root: Path, entry: dict) -> dict:
    return json.loads((root / "faildiag-out" / entry["slug"] / "report.json").read_text(encoding="utf-8"))


def _props(junit: Path, name: str) -> dict[str, str]:
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.get("name") == name:
            return {p.get("name"): p.get("value") for p in case.iter("property")}
    raise AssertionError(f"{name} not in {junit}")


@pytest.fixture(autouse=True)
def _plugin_default_reruns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Here the plugin's own default applies (the suite's conftest turns reruns off elsewhere)."""
    monkeypatch.delenv("FAILDIAG_RERUN", raising=False)


def test_a_deterministic_regression_is_named_with_the_changed_line_it_ran(pytester: pytest.Pytester) -> None:
    pytester.mkpydir("shop")
    cart = pytester.path / "shop" / "cart.py"
    cart.write_text(
        "def total(items):\n    return sum(price * qty for price, qty in items)\n\n\n"
        "def count(items):\n    return len(items)\n"
    )
    pytester.makepyfile(
        test_cart="""
        from shop.cart import count, total

        def test_total():
            assert total([(2, 3), (1, 1)]) == 7

        def test_count():
            assert count([1, 2]) == 2
    """
    )
    (pytester.path / ".gitignore").write_text("faildiag-out/\n__pycache__/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-qm", "green")
    green = git(pytester.path, "rev-parse", "HEAD")
    pytester.runpytest("--faildiag", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    assert json.loads((pytester.path / "faildiag-out" / "last-green.git.json").read_text())["revision"] == green

    cart.write_text(cart.read_text().replace("price * qty for", "price * (qty + 1) for"))  # the regression
    git(pytester.path, "commit", "-qam", "refactor totals")
    result = pytester.runpytest("--faildiag", "--junitxml=junit.xml", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)  # the session's outcome is untouched
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "faildiag reruns (*",
            "  deterministic: test_cart.py::test_total (failed 2 of 2 reruns alone)",
            f"      the failing test ran shop/cart.py:2, changed since the last green run at {green[:12]}",
        ]
    )
    entry = entry_for(session_index(pytester.path), "test_total")
    assert entry["rerun"]["verdict"] == "deterministic" and entry["category"] == "model"
    report = _report(pytester.path, entry)
    assert report["rerun"] == {
        "verdict": "deterministic",
        "runs": 2,
        "passed": 0,
        "polluter": None,
        "detail": "failed 2 of 2 reruns alone",
        "seconds": report["rerun"]["seconds"],
    }
    assert report["suspects"][0] == {"file": "shop/cart.py", "line": 2, "changed_since": green, "score": 0.7}
    assert [s["line"] for s in report["suspects"]] == [2]  # count() was not changed, line 1 only ran on import
    top = report["root_causes"][0]
    assert top["category"] == "model" and top["evidence"][0]["kind"] == "direct"
    assert "shop/cart.py:2" in top["summary"]
    assert _props(pytester.path / "junit.xml", "test_total")["faildiag.suspect"] == "shop/cart.py:2"
    assert _props(pytester.path / "junit.xml", "test_total")["faildiag.rerun"] == "deterministic"
    assert _props(pytester.path / "junit.xml", "test_total")["faildiag.category"] == "model"
    assert not (pytester.path / ".pytest_cache").exists()  # the reruns wrote only under the output folder
    left = {p.name for p in pytester.path.iterdir()} - {"__pycache__"}
    assert left == {".git", ".gitignore", "faildiag-out", "junit.xml", "shop", "test_cart.py"}


def test_the_changed_lines_step_says_why_it_was_skipped_without_git(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a():\n    assert 1 == 2\n")
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "1")
    result.stdout.fnmatch_lines(
        [
            "  deterministic: test_a.py::test_a (failed 1 of 1 reruns alone)",
            "  changed lines not checked: * is not in a git repository",
        ]
    )
    report = _report(pytester.path, entry_for(session_index(pytester.path), "test_a"))
    assert report["suspects"] == []
    assert any("not in a git repository" in n for n in report["notes"])


def test_a_test_failing_one_run_in_three_is_intermittent(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_flaky="""
        from pathlib import Path

        def test_sometimes():
            counter = Path(__file__).with_name("count.txt")
            n = int(counter.read_text()) if counter.exists() else 0
            counter.write_text(str(n + 1))
            assert n % 3 != 0, f"run {n} failed"
    """
    )
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "3", "--junitxml=junit.xml")
    result.assert_outcomes(failed=1)
    assert (pytester.path / "count.txt").read_text() == "4"  # the session + 3 reruns
    result.stdout.fnmatch_lines(["  intermittent: test_flaky.py::test_sometimes (passed 2 of 3 reruns alone)"])
    report = _report(pytester.path, entry_for(session_index(pytester.path), "test_sometimes"))
    assert (report["rerun"]["verdict"], report["rerun"]["runs"], report["rerun"]["passed"]) == ("intermittent", 3, 2)
    assert any(
        e["source"] == "faildiag rerun" and "intermittent" in e["excerpt"] for e in report["root_causes"][0]["evidence"]
    )
    assert report["next_actions"][0].startswith("intermittent")
    props = _props(pytester.path / "junit.xml", "test_sometimes")
    assert props["faildiag.rerun"] == "intermittent"
    # the one line CI shows of the test says it too (it once read like a failure of every run)
    assert report["summary"].startswith("intermittent (passed 2 of 3 reruns alone): "), report["summary"]
    assert props["faildiag.summary"] == report["summary"]


ORDER = """
    import settings

    def test_unrelated():
        assert True

    def test_pollutes():
        settings.CURRENCY = "EUR"  # never restored

    def test_victim():
        assert settings.CURRENCY == "USD"
"""


def test_an_order_dependent_pair_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_order=ORDER, settings="CURRENCY = 'USD'\n")
    result = pytester.runpytest("--faildiag", "--junitxml=junit.xml")
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(
        [
            "  order_dependent: test_order.py::test_victim (passed 2 of 2 reruns alone, "
            "failed when run after test_order.py::test_pollutes, polluted by test_order.py::test_pollutes)"
        ]
    )
    entry = entry_for(session_index(pytester.path), "test_victim")
    report = _report(pytester.path, entry)
    assert report["rerun"]["verdict"] == "order_dependent"
    assert report["rerun"]["polluter"] == "test_order.py::test_pollutes"
    assert report["root_causes"][0]["id"] == "pytest.order_dependent" and entry["category"] == "test_code"
    assert _props(pytester.path / "junit.xml", "test_victim")["faildiag.rerun"] == "order_dependent"


def test_under_xdist_the_controller_reruns_after_the_same_workers_tests(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_order=ORDER, settings="CURRENCY = 'USD'\n")
    result = pytester.runpytest_subprocess("--faildiag", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=2)
    report = _report(pytester.path, entry_for(session_index(pytester.path), "test_victim"))
    assert report["rerun"]["polluter"] == "test_order.py::test_pollutes"
    assert result.stdout.str().count("order_dependent: test_order.py::test_victim") == 1  # once, by the controller


def test_a_marked_test_is_never_rerun_and_zero_turns_reruns_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_once="""
        import pytest
        from pathlib import Path

        @pytest.mark.faildiag_no_rerun
        def test_charges_the_card():
            counter = Path(__file__).with_name("charged.txt")
            counter.write_text(counter.read_text() + "x" if counter.exists() else "x")
            assert False
    """
    )
    result = pytester.runpytest("--faildiag", "--strict-markers")
    result.assert_outcomes(failed=1)
    assert (pytester.path / "charged.txt").read_text() == "x"
    report = _report(pytester.path, entry_for(session_index(pytester.path), "test_charges_the_card"))
    assert report["rerun"]["verdict"] == "not_run" and report["rerun"]["detail"] == "marked faildiag_no_rerun"

    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "0")
    assert "faildiag reruns" not in result.stdout.str()
    assert "rerun" not in entry_for(session_index(pytester.path), "test_charges_the_card")


def test_the_environment_variable_sets_reruns_and_the_option_wins(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_env="def test_broken():\n    assert 1 == 2\n")
    monkeypatch.setenv("FAILDIAG_RERUN", "0")
    result = pytester.runpytest("--faildiag")
    assert "faildiag reruns" not in result.stdout.str()
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "1")
    assert "faildiag reruns" in result.stdout.str()
    report = _report(pytester.path, entry_for(session_index(pytester.path), "test_broken"))
    assert report["rerun"]["verdict"] == "deterministic"


def test_a_test_that_hangs_again_alone_is_not_rerun_further(pytester: pytest.Pytester) -> None:
    """A test that hangs every time cost the whole time limit once per rerun (a new user's suite of always-hanging
    tests got slow): once it hangs alone as it did in the session, the remaining reruns are skipped and the
    verdict says why. A test that fails fast still gets all its reruns."""
    pytester.makepyfile(
        test_hangs="""
        import time, pytest
        from pathlib import Path

        @pytest.mark.faildiag_timeout(1)
        def test_hangs():
            with open(Path(__file__).with_name("runs.txt"), "a") as f:
                f.write("run\\n")
            time.sleep(60)

        def test_fails():
            assert False
    """
    )
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "3")
    result.assert_outcomes(failed=2)
    assert (pytester.path / "runs.txt").read_text().count("run") == 2  # the session and one rerun, not four
    index = session_index(pytester.path)
    hung = _report(pytester.path, entry_for(index, "test_hangs"))["rerun"]
    assert (hung["verdict"], hung["runs"]) == ("deterministic", 1), hung
    assert "hung alone: not rerun further" in hung["detail"]
    fast = _report(pytester.path, entry_for(index, "test_fails"))["rerun"]
    assert (fast["verdict"], fast["runs"]) == ("deterministic", 3), fast


def test_a_hung_rerun_is_killed_with_its_process_group(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_stuck="""
        import os, subprocess, sys, time, pytest
        from pathlib import Path

        @pytest.mark.faildiag_timeout(1)
        def test_stuck():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            with open(Path(__file__).with_name("pids.txt"), "a") as f:
                f.write(f"{child.pid}\\n")
            time.sleep(60)
    """
    )
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "1")
    result.assert_outcomes(failed=1)
    report = _report(pytester.path, entry_for(session_index(pytester.path), "test_stuck"))
    assert (
        report["rerun"]["verdict"] == "deterministic" and "hung" in report["root_causes"][0]["evidence"][-1]["excerpt"]
    )
    assert report["rerun"]["seconds"] < 20
    session_child, rerun_child = (int(p) for p in (pytester.path / "pids.txt").read_text().split())
    os.kill(session_child, signal.SIGKILL)  # the session's own test left it behind: not ours to clean up
    deadline = time.monotonic() + 5
    while _alive(rerun_child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(rerun_child)  # the rerun's process group went with it


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_hang_whose_producer_thread_died_names_that_exception_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_hang="""
        import queue, threading, pytest

        def producer(q):
            q.put(1)
            raise ConnectionError("lost the connection to the feature store")

        @pytest.mark.faildiag_timeout(2)
        def test_consumer():
            q = queue.Queue()
            threading.Thread(target=producer, args=(q,), name="producer", daemon=True).start()
            [q.get() for _ in range(2)]
    """
    )
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "0")
    result.assert_outcomes(failed=1)
    report = _report(pytester.path, entry_for(session_index(pytester.path), "test_consumer"))
    first = report["profile"]["first_failure"]
    assert report["profile"]["type"] == "hang"
    assert first["source"] == "thread-exceptions.txt"
    assert first["excerpt"] == "ConnectionError: lost the connection to the feature store"
    assert report["root_causes"][0]["evidence"][0]["excerpt"].startswith("thread producer died: ConnectionError")
    assert "thread producer died with ConnectionError" in report["summary"]


@pytest.mark.parametrize("xdist", [False, True])
def test_the_output_folder_after_a_space_is_not_a_test_path(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, xdist: bool
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    outside = tmp_path_factory.mktemp("outside-out")  # exists, outside the project
    pytester.makeini("[pytest]\naddopts = -k keep -p no:cacheprovider\nmarkers =\n    slow: a slow test\n")
    pytester.makepyfile(
        test_a="import pytest\n\n@pytest.mark.slow\ndef test_keep():\n    pass\n\ndef test_drop():\n    pass\n"
    )
    extra = ["-n", "2"] if xdist else []
    result = pytester.runpytest_subprocess(*extra, "--faildiag", "--faildiag-out", str(outside), "--strict-markers")
    result.stdout.fnmatch_lines([f"rootdir: {pytester.path}*"])
    result.assert_outcomes(passed=1, deselected=None if xdist else 1)  # addopts' -k still applies
    assert (outside / "session.json").is_file()


EXAMPLES = Path(__file__).resolve().parents[2] / "conftest_examples"


def test_the_examples_order_dependent_pair_is_named_by_the_examples_own_budget(pytester: pytest.Pytester) -> None:
    """conftest_examples/test_order_dependent.py with conftest_examples/pytest.ini (one rerun each): the README's
    main command must print the polluter."""
    pytester.makepyfile(test_order_dependent=(EXAMPLES / "test_order_dependent.py").read_text(encoding="utf-8"))
    (pytester.path / "pytest.ini").write_text((EXAMPLES / "pytest.ini").read_text(encoding="utf-8"))
    result = pytester.runpytest()  # the ini turns faildiag on
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(
        [
            "faildiag reruns (4 run(s), *",
            "  order_dependent: test_order_dependent.py::test_invoice_uses_the_default_currency (passed 1 of 1 "
            "reruns alone, failed when run after test_order_dependent.py::test_a_eur_customer_sees_prices_in_eur, "
            "polluted by test_order_dependent.py::test_a_eur_customer_sees_prices_in_eur)",
        ]
    )


def test_the_quickest_failures_are_rerun_first_and_shown_in_session_order(pytester: pytest.Pytester) -> None:
    """The budget is spent on as many failures as possible: a slow failure (a torchrun job) is rerun last."""
    pytester.makepyfile(
        test_mixed="""
        import time

        def test_slow():
            time.sleep(1.5)
            assert False

        def test_quick():
            assert False
    """
    )
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "1")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["  deterministic: test_mixed.py::test_slow *", "  deterministic: test_mixed.py::test_quick *"]
    )
    index = session_index(pytester.path)
    started = {
        name: (pytester.path / "faildiag-out" / entry_for(index, name)["slug"] / "rerun" / "alone-1" / "spec.json")
        .stat()
        .st_mtime_ns
        for name in ("test_slow", "test_quick")
    }
    assert started["test_quick"] < started["test_slow"]
