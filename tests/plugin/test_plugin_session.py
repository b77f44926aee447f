"""``pytest --faildiag`` on real failing sessions (inline runs through ``pytester``)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from pytest_faildiag.integrations.pytest_warn import PytestFaildiagWarning

from .conftest import entry_for, session_index

pytestmark = pytest.mark.usefixtures("isolated")

SESSION_KEYS = {
    "nodeid",
    "slug",
    "when",
    "outcome",
    "category",
    "type",
    "summary",
    "confidence",
    "cause_id",
    "file",
    "line",
    "fix_hints",
    "snapshot",
}


def test_it_attaches_a_section_properties_and_a_snapshot_to_a_failed_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        import json

        def test_parse():
            print("loading config")
            json.loads("{'lr': 0.1}")

        def test_fine():
            pass
    """
    )
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*- faildiag -*", "faildiag: *", "*snapshot: *faildiag-out*"])
    index = session_index(pytester.path)
    assert index["schema"] == "faildiag.session/1"
    entry = entry_for(index, "test_parse")
    assert SESSION_KEYS <= set(entry)
    assert entry["file"] == "test_a.py" and entry["line"] == 5
    assert entry["when"] == "call" and entry["outcome"] == "failed"
    report = json.loads((pytester.path / "faildiag-out" / entry["slug"] / "report.json").read_text())
    assert report["schema"] == "faildiag.report/1"
    assert report["summary"] == entry["summary"]
    evidence = pytester.path / "faildiag-out" / entry["slug"] / "evidence"
    assert "loading config" in (evidence / "stdout-call.txt").read_text()
    assert "JSONDecodeError" in (evidence / "exception.txt").read_text()


def test_it_leaves_no_snapshot_for_passing_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ok="def test_one():\n    pass\n\ndef test_two():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(passed=2)
    out = pytester.path / "faildiag-out"
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == []
    assert session_index(pytester.path)["tests"] == []
    assert "- faildiag -" not in result.stdout.str()


def test_it_does_nothing_without_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_bad():\n    assert 0\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert not (pytester.path / "faildiag-out").exists()
    assert "- faildiag -" not in result.stdout.str() and "= faildiag =" not in result.stdout.str()


def test_it_turns_on_from_the_ini_file_and_p_no_faildiag_turns_it_off(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nfaildiag = true\nfaildiag_out = diag\n")
    pytester.makepyfile(test_a="def test_bad():\n    assert 0\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    assert entry_for(session_index(pytester.path, "diag"), "test_bad")["category"] == "test_code"

    pytester.makeini("[pytest]\nfaildiag = true\nfaildiag_out = diag2\n")
    result = pytester.runpytest("-p", "no:faildiag")
    result.assert_outcomes(failed=1)
    assert not (pytester.path / "diag2").exists()
    assert "- faildiag -" not in result.stdout.str()


def test_junitxml_carries_the_diagnosis_properties(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        def test_div():
            total, count = 10, 0
            assert total / count > 1

        def test_ok():
            pass
    """
    )
    result = pytester.runpytest("--faildiag", "--junitxml=junit.xml")
    result.assert_outcomes(failed=1, passed=1)
    tree = ET.parse(pytester.path / "junit.xml")
    cases = {c.get("name"): c for c in tree.iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["test_div"].iter("property")}
    entry = entry_for(session_index(pytester.path), "test_div")
    assert props["faildiag.category"] == entry["category"]
    assert props["faildiag.type"] == entry["type"]
    assert props["faildiag.summary"] == entry["summary"] and "ZeroDivisionError" in entry["summary"] + str(entry)
    assert list(cases["test_ok"].iter("property")) == []


def test_it_diagnoses_setup_and_teardown_errors_in_their_own_folders(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.fixture
        def broken_setup():
            raise FileNotFoundError(2, "No such file or directory", "/data/train.csv")

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("could not release the port")

        def test_a(broken_setup):
            pass

        def test_b(broken_teardown):
            assert 0
    """
    )
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(errors=2, failed=1)
    index = session_index(pytester.path)
    whens = sorted((t["nodeid"].split("::")[1], t["when"]) for t in index["tests"])
    assert whens == [("test_a", "setup"), ("test_b", "call"), ("test_b", "teardown")]
    slugs = [t["slug"] for t in index["tests"]]
    assert len(set(slugs)) == 3
    assert all((pytester.path / "faildiag-out" / s / "report.json").is_file() for s in slugs)
    setup = entry_for(index, "test_a")
    assert setup["line"] == 5  # the raise in the fixture, not the test's def line


def test_it_points_at_the_users_frame_not_the_library(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        helpers="""
        import json

        def load(text):
            return json.loads(text)
    """,
        test_a="""
        from helpers import load

        def test_load():
            load("not json")
    """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1)
    entry = entry_for(session_index(pytester.path), "test_load")
    assert (entry["file"], entry["line"]) == ("helpers.py", 4)


def test_the_summary_groups_failures_by_root_cause(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.parametrize("n", [0, 0, 0])
        def test_ratio(n):
            assert 1 / n

        def test_shape():
            assert [1, 2] == [1, 2, 3]
    """
    )
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*= faildiag =*", "4 failures, 2 causes:", "*: 3 test(s)", "*: 1 test(s)"])
    groups = session_index(pytester.path)["groups"]
    assert sorted(g["count"] for g in groups) == [1, 3]


def test_outcomes_are_the_same_with_and_without_faildiag(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        import pytest

        def test_pass(): pass
        def test_fail(): assert 0
        @pytest.mark.xfail
        def test_xfail(): assert 0
        @pytest.mark.xfail(strict=True)
        def test_xpass_strict(): pass
        def test_skip(): pytest.skip("no")
        @pytest.fixture
        def boom(): raise ValueError("x")
        def test_error(boom): pass
    """
    )
    plain = pytester.runpytest().parseoutcomes()
    with_diag = pytester.runpytest("--faildiag").parseoutcomes()
    with_diag.pop("warnings", None)
    plain.pop("warnings", None)
    assert with_diag == plain


def test_an_internal_error_becomes_a_warning_and_the_outcome_stands(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_faildiag.engine.api as api

    def broken(*args, **kwargs):
        raise RuntimeError("engine exploded")

    monkeypatch.setattr(api, "diagnose", broken)
    pytester.makepyfile(test_a="def test_bad():\n    assert 0\n\ndef test_good():\n    pass\n")
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*PytestFaildiagWarning*engine exploded*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_unwritable_output_folder_gives_warnings_not_failures(pytester: pytest.Pytester) -> None:
    (pytester.path / "blocked").write_text("a file where the output folder should be")
    pytester.makepyfile(test_a="def test_bad():\n    assert 0\n\ndef test_good():\n    pass\n")
    # the session index is written after the inner session's warning capture has closed: its warning reaches
    # the process's own warnings (stderr in a real run), here this test's
    with pytest.warns(PytestFaildiagWarning, match="session index not written"):
        result = pytester.runpytest("--faildiag", "--faildiag-out", "blocked")
    result.assert_outcomes(failed=1, passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "PytestFaildiagWarning" in result.stdout.str()
    assert "- faildiag -" in result.stdout.str()  # the diagnosis still reaches the terminal
    assert (pytester.path / "blocked").is_file()


def test_the_run_fixture_captures_a_command_and_feeds_its_output_to_the_diagnosis(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        import sys

        def test_train(faildiag_run):
            r = faildiag_run([sys.executable, "-c",
                              "print('epoch 1'); import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
            assert r.signal == "SIGSEGV" and r.returncode == -11
            assert "epoch 1" in r.stdout
            assert "Fatal Python error: Segmentation fault" in r.stderr
            assert r.ok, r.describe()
    """
    )
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1)
    entry = entry_for(session_index(pytester.path), "test_train")
    snap = pytester.path / "faildiag-out" / entry["slug"]
    report = json.loads((snap / "report.json").read_text())
    assert any("run1.stderr" in s for s in report["sources"])
    assert entry["type"] == "crash", entry
    assert "SIGSEGV" in (snap / "evidence" / "commands.txt").read_text()


def test_the_run_fixture_works_without_faildiag_turned_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        import sys

        def test_child(faildiag_run):
            r = faildiag_run([sys.executable, "-c", "print('ok')"], timeout=60)
            assert r.ok and r.stdout.strip() == "ok" and r.signal is None
    """
    )
    pytester.runpytest().assert_outcomes(passed=1)
    assert not (pytester.path / "faildiag-out").exists()


def test_github_annotations_come_out_when_asked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_bad():\n    assert 1 == 2\n")
    result = pytester.runpytest("--faildiag", "--faildiag-github")
    result.assert_outcomes(failed=1)
    assert any(line.startswith("::error") for line in result.outlines), result.stdout.str()[-2000:]


def test_a_failing_ci_reporter_is_a_warning_and_the_outcome_stands(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_faildiag.ci import html

    def broken(out_dir, html_path):
        raise ValueError("template missing")

    monkeypatch.setattr(html, "write_html", broken)
    pytester.makepyfile(test_a="def test_bad():\n    assert 0\n\ndef test_good():\n    pass\n")
    result = pytester.runpytest("--faildiag", "--faildiag-html", "report.html")
    result.assert_outcomes(failed=1, passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*faildiag: warning: pytest_faildiag.ci.html.write_html failed*template missing*"])


def test_a_renamed_html_renderer_is_reported_not_silently_skipped(pytester: pytest.Pytester) -> None:
    # in a subprocess: in-process, an earlier pytester run can leave the package attribute and sys.modules
    # holding two different module objects, and the patch would miss the one the plugin loads
    pytester.makeconftest("import pytest_faildiag.ci.html as html\n\ndel html.write_html\n")
    pytester.makepyfile(test_a="def test_bad():\n    assert 0\n")
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-html", "report.html")
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*faildiag: warning: pytest_faildiag.ci.html.write_html failed*has no write_html*"])
    assert not (pytester.path / "report.html").exists()


def test_a_module_that_fails_to_import_is_diagnosed_as_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_broken="import torchvision_that_is_not_installed\n\ndef test_x():\n    pass\n",
        test_fine="def test_ok():\n    pass\n",
    )
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(errors=1)
    entry = entry_for(session_index(pytester.path), "test_broken.py")
    assert entry["when"] == "collect" and entry["file"] == "test_broken.py"
    assert (
        "ModuleNotFoundError"
        in (pytester.path / "faildiag-out" / entry["slug"] / "evidence" / "longrepr.txt").read_text()
    )


QUIET = """
    def test_broken():
        assert 1 == 2

    def test_also_broken():
        raise KeyError("missing column label")
"""


@pytest.mark.parametrize("flag", ["-qq", "--tb=no"])
def test_quiet_modes_get_one_faildiag_line(pytester: pytest.Pytester, flag: str) -> None:
    pytester.makepyfile(test_q=QUIET)
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "1", flag)
    assert result.ret == 1
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        ["faildiag: 2 failures, 2 causes; reruns: deterministic 2; details: *faildiag-out*session.json"]
    )
    assert "= faildiag =" not in out and "faildiag reruns (" not in out and "rerunning" not in out
    assert session_index(pytester.path)["tests"][0]["rerun"]["verdict"] == "deterministic"  # the work is done


def test_under_github_actions_pytests_final_line_stays_the_last(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_q=QUIET)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-rerun", "1", "-p", "no:cacheprovider")
    assert result.ret == 1
    lines = [ln for ln in result.outlines if ln.strip()]
    assert lines[-1].startswith("=") and "2 failed" in lines[-1], lines[-3:]
    annotations = [i for i, ln in enumerate(lines) if ln.startswith("::error ")]
    token = lines[0].split("::")[2]  # the session's own ::stop-commands:: comes first
    resume = [i for i, ln in enumerate(lines) if ln == f"::{token}::"]
    short_summary = lines.index(next(ln for ln in lines if "short test summary info" in ln))
    assert len(annotations) == 2 and len(resume) == 1
    assert short_summary < resume[0] < annotations[0]  # what the run printed stays inside stop-commands
    assert lines.index(next(ln for ln in lines if ln.startswith("faildiag reruns ("))) < short_summary


def test_a_plain_python_unit_test_gets_no_rank_advice(pytester: pytest.Pytester) -> None:
    """A single-process unit test of plain Python: the next actions speak of the run and the code under test,
    never of ranks or layers (the run:single_process fact and the pytest stack pick them)."""
    pytester.makepyfile(
        test_plain="""
        def chunked(items, n):
            return [items[i:i + n + 1] for i in range(0, len(items), n)]  # off by one

        def test_chunked():
            assert chunked([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]

        def test_lookup():
            raise KeyError("missing column label")
    """
    )
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "0")
    result.assert_outcomes(failed=2)
    for name in ("test_chunked", "test_lookup"):
        report = json.loads(
            (
                pytester.path / "faildiag-out" / entry_for(session_index(pytester.path), name)["slug"] / "report.json"
            ).read_text()
        )
        text = (" ".join(report["next_actions"]) + " " + json.dumps(report["root_causes"])).replace(
            str(pytester.path), "<dir>"
        )  # this test's own folder name says "rank"
        assert "rank" not in text and "layer" not in text and "model code" not in text, report["next_actions"]
    lookup = json.loads(
        (
            pytester.path
            / "faildiag-out"
            / entry_for(session_index(pytester.path), "test_lookup")["slug"]
            / "report.json"
        ).read_text()
    )
    # the KeyError is raised by the test's own body, not by code it called: the advice sends the reader there
    assert any("the test's frame that raised" in a for a in lookup["next_actions"]), lookup["next_actions"]
