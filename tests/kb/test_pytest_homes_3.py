"""Test code or code under test, third pass (kpytest3): pytest's and unittest's own messages failed for real
(pytester runs, `python -m unittest` in a child interpreter) and train logs, plus the float-rounding check:
an exact equality between floats that differ only by rounding is the test's comparison, not the result."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.checks import float_rounding_pairs
from tests.kb.kb_helpers import fired, top3, train_log_path


def _diagnose(result):
    out = "\n".join(result.outlines)
    err = "\n".join(result.errlines)
    diag = diagnose(texts={"stdout.txt": out, "stderr.txt": err}, exit_code=int(result.ret), command="pytest")
    return diag, [c.category for c in diag.root_causes], {c.rule for c in diag.root_causes}


def _cause(diag, rule: str):
    return next(c for c in diag.root_causes if c.rule == rule)


def _unittest(tmp_path, source: str, *args: str) -> tuple[str, int]:
    (tmp_path / "test_u.py").write_text(textwrap.dedent(source))
    argv = [sys.executable, "-m", "unittest", *(args or ("test_u",))]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


# --- the float-rounding check: both sides parsed and compared as numbers -------------------------------


def test_float_rounding_pairs_tells_rounding_from_a_real_difference():
    assert float_rounding_pairs("0.30000000000000004", "0.3") == [(0.30000000000000004, 0.3)]
    # pytest leaves an expression of literals unevaluated: "(0.1 + 0.2)" is computed here
    assert float_rounding_pairs("(0.1 + 0.2)", "0.3") == [(0.1 + 0.2, 0.3)]
    # sequences: every differing pair must be a rounding pair, equal ones are skipped
    assert float_rounding_pairs("0.30000000000000004, 1.0", "0.3, 1.0") == [(0.30000000000000004, 0.3)]
    assert float_rounding_pairs("0.30000000000000004, 2.0", "0.3, 1.0") is None
    # a NumPy float32 scalar rounds at 2**-24; the same distance between float64 values is a real difference
    assert float_rounding_pairs("np.float32(0.30000001)", "np.float32(0.3)")
    assert float_rounding_pairs("0.30000001", "0.3") is None
    assert float_rounding_pairs("np.float16(0.3003)", "np.float16(0.3)")
    # NaN never equals itself
    pairs = float_rounding_pairs("nan", "nan")
    assert pairs and pairs[0][0] != pairs[0][0]
    assert float_rounding_pairs("2.5", "2.0") is None
    assert float_rounding_pairs("1", "2") is None
    assert float_rounding_pairs("'a'", "0.3") is None


_FLOATS = """
def add(a, b):
    return a + b

def test_sum():
    assert add(0.1, 0.2) == 0.3
"""


def test_an_exact_float_equality_off_by_rounding_is_the_tests_comparison(pytester):
    pytester.makepyfile(test_f=_FLOATS)
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    top = diag.root_causes[0]
    assert top.rule == "pytest.float_exact_equality"
    assert cats[0] == "test_code"
    assert [v.status for v in top.validation_checks if v.name == "float-rounding"] == ["passed"]
    assert any("approx" in h for h in top.fix_hints)
    # the code under test stays a hypothesis
    assert "model" in cats[:3]


@pytest.mark.parametrize(
    "body",
    [
        "def test_x():\n    assert 0.1 + 0.2 == 0.3\n",  # pytest prints "assert (0.1 + 0.2) == 0.3"
        "def test_x():\n    assert [0.1 + 0.2, 1.0] == [0.3, 1.0]\n",  # "At index 0 diff: …"
    ],
)
def test_the_classic_forms_are_computed_not_matched(pytester, body):
    pytester.makepyfile(test_f=body)
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.root_causes[0].rule == "pytest.float_exact_equality"
    assert cats[0] == "test_code"


def test_unittest_assert_equal_on_floats_is_the_tests_comparison(tmp_path):
    err, rc = _unittest(
        tmp_path,
        """
        import unittest

        class T(unittest.TestCase):
            def test_eq(self):
                self.assertEqual(sum([0.1, 0.2]), 0.3)
        """,
    )
    assert "0.30000000000000004 != 0.3" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert diag.root_causes[0].rule == "pytest.float_exact_equality"
    assert top3(diag)[0] == "test_code"


def test_a_real_difference_between_floats_refutes_the_rounding_cause(pytester):
    pytester.makepyfile(test_f="def add(a, b):\n    return a + b\n\ndef test_x():\n    assert add(1.5, 1.0) == 2.0\n")
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert cats[0] == "model"  # the result is wrong, not the comparison
    if fired(diag, "pytest.float_exact_equality"):
        cause = _cause(diag, "pytest.float_exact_equality")
        assert [v.status for v in cause.validation_checks if v.name == "float-rounding"] == ["failed"]
        assert cause.confidence < diag.root_causes[0].confidence / 2


def test_a_failed_approx_comparison_is_not_an_exact_one(pytester):
    pytester.makepyfile(test_f="import pytest\n\ndef test_x():\n    assert 0.35 == pytest.approx(0.3)\n")
    diag, _cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.float_exact_equality" not in rules


# --- pytest's own messages -------------------------------------------------------------------------------


def test_a_path_that_is_not_there_is_the_checkout_or_the_command(pytester):
    pytester.makepyfile(test_a="def test_x():\n    pass\n")
    diag, cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag", "tests_gone/"))
    assert diag.root_causes[0].rule == "pytest.path_arg_not_found"
    assert diag.profile.stage == "collection"
    # pytest's usage error in general reads as a plugin's option: not here
    assert "pytest.usage_error" not in rules
    assert {"test_code", "config"} <= set(cats[:3])


def test_a_tests_folder_missing_from_a_release_train_log():
    diag = diagnose([str(train_log_path("pytest_python/pytest_tests_dir_missing_from_public_release"))])
    assert diag.root_causes[0].rule == "pytest.path_arg_not_found"
    assert top3(diag)[0] == "test_code"
    assert diag.profile.stage == "collection"


def test_a_fixture_called_directly_is_the_tests_code_at_run_time(pytester):
    pytester.makepyfile(
        test_fx="import pytest\n\n@pytest.fixture\ndef value():\n    return 1\n\ndef test_x():\n    assert value() == 1\n"
    )
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.root_causes[0].rule == "pytest.fixture_called_directly"
    assert cats[0] == "test_code"
    assert diag.profile.stage == "runtime"


def test_a_fixture_called_directly_train_log():
    diag = diagnose([str(train_log_path("pytest_python/pytest_fixture_called_directly_plasmapy"))])
    assert diag.root_causes[0].rule == "pytest.fixture_called_directly"
    assert top3(diag)[0] == "test_code"
    assert diag.profile.stage == "runtime"


def test_a_fixture_called_at_a_test_modules_top_level_is_collection_train_log():
    # the caller's frame places the stage: a default argument evaluated while pytest imports the module
    diag = diagnose([str(train_log_path("pytest_python/py_collection_error_fixture_called_directly_pytest4_pyhf"))])
    assert diag.root_causes[0].rule == "pytest.fixture_called_directly"
    assert top3(diag)[0] == "test_code"
    assert diag.profile.stage == "collection"


def test_a_plugin_constructing_pytests_private_class_is_the_plugin_train_log():
    # pytest 7.3 added retention arguments to TempPathFactory; a plugin built it with the old signature
    diag = diagnose([str(train_log_path("pytest_python/pytest73_plugin_temppathfactory_missing_retention_args"))])
    assert diag.root_causes[0].rule == "pytest.private_class_constructed"
    assert top3(diag)[:2] == ["library", "environment"]


def test_a_conftest_constructing_pytests_private_class_keeps_the_tests_among_the_homes(pytester):
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef factory():\n    return pytest.TempPathFactory(None, trace=print)\n"
    )
    pytester.makepyfile(test_p="def test_x(factory):\n    pass\n")
    diag, cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.private_class_constructed" in rules
    assert "test_code" in cats[:3]


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (
            "import pytest\n\n@pytest.mark.parametrize('a', [1, 2], ids=['one'])\ndef test_x(a):\n    pass\n",
            "with different number of ids",
        ),
        (
            "import pytest\n\n@pytest.mark.parametrize('a', [1])\ndef test_x(a=3):\n    pass\n",
            "with a default value",
        ),
        (
            "import pytest\n\n@pytest.fixture\ndef f():\n    yield 1\n    yield 2\n\ndef test_x(f):\n    pass\n",
            "more than one 'yield'",
        ),
        ("import pytest\n\n@pytest.mark.parametrise('a', [1])\ndef test_x(a):\n    pass\n", "did you mean"),
    ],
)
def test_pytest_refusing_how_a_test_is_written_is_the_tests_code(pytester, source, words):
    pytester.makepyfile(test_d=source)
    result = pytester.runpytest("-p", "no:faildiag")
    assert words in "\n".join(result.outlines + result.errlines)
    diag, cats, rules = _diagnose(result)
    assert "pytest.test_definition_errors" in rules
    assert cats[0] == "test_code"


def test_an_async_fixture_no_plugin_handles_names_the_decorator_and_the_plugin(pytester):
    pytester.makepyfile(
        test_af="import pytest\n\n@pytest.fixture\nasync def conn():\n    return 1\n\ndef test_x(conn):\n    pass\n"
    )
    result = pytester.runpytest("-p", "no:faildiag", "-p", "no:asyncio", "-p", "no:anyio")
    diag, cats, rules = _diagnose(result)
    assert "pytest.async_fixture_unhandled" in rules
    assert {"test_code", "environment"} <= set(cats[:3])


def test_reading_stdin_in_a_test_is_the_tests_set_up(pytester):
    pytester.makepyfile(
        test_in="def ask():\n    return input('continue? ')\n\ndef test_x():\n    assert ask() == 'y'\n"
    )
    diag, cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.root_causes[0].rule == "pytest.stdin_read_while_captured"
    assert cats[0] == "test_code"
    assert "model" in cats[:3]


@pytest.mark.parametrize(
    "ini", ["[pytest]\nminversion = 99.0\n", "[pytest]\nrequired_plugins = pytest-nonexistent-kpytest3\n"]
)
def test_a_configuration_the_environment_does_not_meet(pytester, ini):
    pytester.makefile(".ini", pytest=ini)
    pytester.makepyfile(test_a="def test_x():\n    pass\n")
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.root_causes[0].rule == "pytest.config_file_rejected"
    assert {"environment", "config"} == set(cats[:2])


@pytest.mark.parametrize(
    "args",
    [("-c", "missing.ini"), ("--rootdir", "no_such_dir"), ("-o", "novalue"), ("test_a.py[1]",)],
)
def test_a_command_line_value_pytest_rejects_is_the_command(pytester, args):
    pytester.makepyfile(test_a="def test_x():\n    pass\n")
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag", *args))
    assert diag.root_causes[0].rule == "pytest.command_option_rejected"
    assert cats[0] == "config"
    assert "harness" in cats[:3]


# --- unittest's and unittest.mock's own messages ---------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "m = mock.Mock()\n                m.assret_called_once()",
        "with mock.patch('os.getcwd', spec=True, autospec=True):\n                    pass",
        "self.assertAlmostEqual(1.0, 1.1, places=2, delta=0.1)",
    ],
)
def test_a_test_misusing_mock_or_unittest_is_the_tests_code(tmp_path, body):
    err, rc = _unittest(
        tmp_path,
        f"""
        import unittest
        from unittest import mock

        class T(unittest.TestCase):
            def test_m(self):
                {body}
        """,
    )
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert diag.root_causes[0].rule == "unittest.mock_misuse"
    assert top3(diag)[0] == "test_code"


def test_a_patch_of_a_missing_attribute_is_the_tests_patch_path(tmp_path):
    err, rc = _unittest(
        tmp_path,
        """
        import unittest
        from unittest import mock

        class T(unittest.TestCase):
            def test_m(self):
                with mock.patch("os.path.no_such_function_kpytest3"):
                    pass
        """,
    )
    assert "does not have the attribute" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert diag.root_causes[0].rule == "unittest.patch_target_missing"
    assert top3(diag)[0] == "test_code"
    assert "no_such_function_kpytest3" in diag.root_causes[0].summary


@pytest.mark.parametrize(
    "expr", ["{'a': {'b': 1.0}} == pytest.approx({'a': {'b': 1.0}})", "1.1 == pytest.approx(1.0, rel=-1)"]
)
def test_an_expectation_pytest_approx_cannot_use_is_the_tests_code(pytester, expr):
    pytester.makepyfile(test_ap=f"import pytest\n\ndef test_x():\n    assert {expr}\n")
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.root_causes[0].rule == "pytest.approx_misuse"
    assert cats[0] == "test_code"


def test_a_refuting_check_moves_its_cause_further_than_a_failed_one_and_stays_out_of_the_report():
    """The validator owns how far a check moves a cause: a refuted premise (``refutes``) drops it to about a
    tenth, an unsupported one to the failed factor; report.json keeps the contract's three fields."""
    from pytest_faildiag.engine.validate import FAILED_FACTOR, REFUTED_FACTOR, CheckContext, run_checks
    from pytest_faildiag.model import RootCause, ValidationCheck

    def refuting(_ctx, _cause, _finding):
        return ValidationCheck("premise", "failed", "the premise does not hold", refutes=True)

    def failing(_ctx, _cause, _finding):
        return ValidationCheck("support", "failed", "no support")

    ctx = CheckContext(scan=None, profile=None, checks={"premise": refuting, "support": failing})
    refuted = RootCause("r", "test_code", 0.5, "s")
    unsupported = RootCause("u", "test_code", 0.5, "s")
    run_checks(ctx, refuted, ["premise"], {})
    run_checks(ctx, unsupported, ["support"], {})
    assert refuted.confidence == pytest.approx(0.5 * REFUTED_FACTOR)
    assert unsupported.confidence == pytest.approx(0.5 * FAILED_FACTOR)
    assert refuted.to_dict()["validation_checks"] == [
        {"name": "premise", "status": "failed", "detail": "the premise does not hold"}
    ]
