"""Reading a log's structure (issue #13, stackk2): the stack the matched rules declare, chained exceptions
read at their root cause in pytest's format as in Python's, JAX's filtered tracebacks, and the stage of a
fixture pytest cannot find. Real logs only: train logs of the thread corpus, real pytest runs (pytester) and
real Python processes run here."""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose

from .corpus_logs import train_log


def test_a_fixture_pytest_cannot_find_fails_at_the_tests_set_up_which_is_runtime(pytester):
    """pytest looks a fixture up when it sets a test up (``ERROR at setup of …``), after collection and in
    the run of the tests: the contract's ``runtime``, not the program's start-up."""
    pytester.makepyfile(
        test_fix="""
        def test_uses_a_fixture_nobody_defines(no_such_fixture_here):
            assert no_such_fixture_here
        """
    )
    result = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider")
    report = "\n".join(result.outlines)
    assert "fixture 'no_such_fixture_here' not found" in report and "ERROR at setup of" in report
    diag = diagnose(texts={"pytest.log": report}, exit_code=int(result.ret), command="pytest")
    assert diag.profile.stage == "runtime"
    assert diag.profile.stack == "pytest"


def test_a_train_log_of_a_missing_plugin_fixture_is_runtime():
    diag, label = train_log("pytest_python/pt_mocker_not_found_pytest_mock_not_in_setup")
    assert label["stage"] == "runtime"
    assert diag.profile.stage == "runtime"
