"""pytest's, coverage.py's and Hypothesis's own messages (kpyt): each rule on output the real tools print here
(pytester for pytest runs, a subprocess in a temporary folder for coverage), plus a train log for the
coverage data-file family. Each test asserts the rule fires and where its lead cause lives."""

from __future__ import annotations

import subprocess
import sys

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, train_log_path


def _diagnose_run(result):
    out = "\n".join(result.outlines)
    err = "\n".join(result.errlines)
    diag = diagnose(texts={"stdout.txt": out, "stderr.txt": err}, exit_code=int(result.ret), command="pytest")
    return diag, [c.category for c in diag.root_causes]


def _read_pytest(pytester, says: str):
    """Run the real pytest in ``pytester`` (faildiag's plugin off), check that it printed ``says``, and
    diagnose its output: (diagnosis, categories)."""
    result = pytester.runpytest("-p", "no:faildiag")
    assert says in result.stdout.str()
    return _diagnose_run(result)


def _diagnose_text(text: str, exit_code: int, command: str):
    diag = diagnose(texts={"stdout.txt": text}, exit_code=exit_code, command=command)
    return diag, [c.category for c in diag.root_causes]


def test_a_module_level_skip_without_allow_module_level_is_the_tests_code(pytester):
    pytester.makepyfile(test_s="import pytest\npytest.skip('no device')\n\ndef test_x():\n    pass\n")
    diag, cats = _read_pytest(pytester, "Using pytest.skip outside of a test")
    assert fired(diag, "pytest.module_level_skip")
    assert diag.root_causes[0].rule == "pytest.module_level_skip"
    assert cats[0] == "test_code"
    assert diag.profile.stage == "collection"
    # the generic "a test module failed to import" reading is silenced: the module imported, it asked to skip
    assert not fired(diag, "pytest.collection_error")


def test_parametrize_values_that_do_not_fit_the_names_are_the_tests_code(pytester):
    pytester.makepyfile(
        test_p="import pytest\n\n@pytest.mark.parametrize('a,b', [(1, 2), (3,)])\ndef test_x(a, b):\n    pass\n"
    )
    diag, cats = _read_pytest(pytester, 'in "parametrize" the number of names')
    assert diag.root_causes[0].rule == "pytest.parametrize_arguments"
    assert cats[0] == "test_code"
    assert not fired(diag, "pytest.collection_error")


def test_an_indirect_name_parametrize_does_not_take_is_the_tests_code(pytester):
    pytester.makepyfile(
        test_i="import pytest\n\n@pytest.mark.parametrize('a', [1], indirect=['c'])\ndef test_y(a):\n    pass\n"
    )
    diag, cats = _read_pytest(pytester, "indirect fixture 'c' doesn't exist")
    assert diag.root_causes[0].rule == "pytest.parametrize_arguments"
    assert cats[0] == "test_code"


def test_a_fixture_decorated_twice_is_the_tests_code_and_an_older_pytest_the_alternative(pytester):
    pytester.makepyfile(
        test_f="import pytest\n\n@pytest.fixture\n@pytest.fixture\ndef thing():\n    return 1\n\ndef test_x(thing):\n    pass\n"
    )
    diag, cats = _read_pytest(pytester, "applied more than once to the same function")
    assert diag.root_causes[0].rule == "pytest.fixture_definition"
    assert cats[0] == "test_code"
    assert "environment" in cats[:3]


_ITEM = (
    "import pytest\n\nclass YamlItem(pytest.Item):\n    def runtest(self):\n        pass\n\n"
    "def pytest_collect_file(parent, file_path):\n    if file_path.suffix == '.yaml':\n"
    "        return YamlItem(name='x', parent=parent)\n"
)


def test_a_conftest_constructing_a_node_directly_is_the_tests_code(pytester):
    pytester.makeconftest(_ITEM)
    pytester.makefile(".yaml", test_a="")
    diag, cats = _read_pytest(pytester, "Direct construction of conftest.YamlItem")
    assert diag.root_causes[0].rule == "pytest.node_direct_construction_conftest"
    assert cats[0] == "test_code"
    assert not fired(diag, "pytest.node_direct_construction")


def test_a_plugin_constructing_a_node_directly_predates_from_parent(pytester, monkeypatch):
    pytester.makepyfile(yamlplug=_ITEM)
    pytester.makefile(".yaml", test_a="")
    monkeypatch.syspath_prepend(str(pytester.path))
    result = pytester.runpytest_subprocess("-p", "no:faildiag", "-p", "yamlplug")
    assert "Direct construction of yamlplug.YamlItem" in result.stdout.str()
    diag, cats = _diagnose_run(result)
    assert diag.root_causes[0].rule == "pytest.node_direct_construction"
    # a plugin written before Node.from_parent: the plugin, then the pytest installed beside it
    assert cats[0] == "library"
    assert "environment" in cats[:3]


def test_a_hypothesis_strategy_given_arguments_it_refuses_is_the_tests_code(pytester):
    pytester.makepyfile(
        test_h="from hypothesis import given, strategies as st\n\n"
        "@given(st.integers(min_value=5, max_value=1))\ndef test_i(x):\n    pass\n"
    )
    diag, cats = _read_pytest(pytester, "hypothesis.errors.InvalidArgument")
    assert diag.root_causes[0].rule == "hypothesis.invalid_argument"
    assert cats[0] == "test_code"
    assert "max_value=1" in diag.root_causes[0].summary


def _coverage(args, cwd):
    return subprocess.run([sys.executable, "-m", "coverage", *args], cwd=cwd, capture_output=True, text=True)


def test_coverage_with_no_source_for_a_measured_file_is_the_path_mapping(tmp_path):
    (tmp_path / "mod.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "run.py").write_text("import mod\nassert mod.f(1) == 2\n")
    assert _coverage(["run", "run.py"], tmp_path).returncode == 0
    (tmp_path / "mod.py").rename(tmp_path / "mod_moved.py")
    proc = _coverage(["report"], tmp_path)
    assert proc.returncode != 0 and "No source for code" in proc.stdout + proc.stderr
    diag, cats = _diagnose_text(proc.stdout + proc.stderr, proc.returncode, "coverage report")
    assert diag.root_causes[0].rule == "coverage.no_source"
    assert cats[0] == "config"
    assert "harness" in cats[:3]


def test_coverage_combining_branch_and_statement_data_is_the_runs_settings(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\nif x:\n    y = 2\n")
    assert _coverage(["run", "-p", "m.py"], tmp_path).returncode == 0
    assert _coverage(["run", "-p", "--branch", "m.py"], tmp_path).returncode == 0
    proc = _coverage(["combine"], tmp_path)
    assert proc.returncode != 0 and "Can't combine" in proc.stdout + proc.stderr
    diag, cats = _diagnose_text(proc.stdout + proc.stderr, proc.returncode, "coverage combine")
    assert diag.root_causes[0].rule == "coverage.data_file_unusable"
    assert cats[0] == "config"


def test_coverage_reading_a_file_that_is_not_its_database(tmp_path):
    (tmp_path / ".coverage").write_text("garbage\n")
    proc = _coverage(["report"], tmp_path)
    assert proc.returncode != 0 and "Couldn't use data file" in proc.stdout + proc.stderr
    diag, cats = _diagnose_text(proc.stdout + proc.stderr, proc.returncode, "coverage report")
    assert diag.root_causes[0].rule == "coverage.data_file_unusable"
    assert {"config", "harness"} <= set(cats[:3])


def test_coverage_failing_on_a_malformed_parallel_data_file_keeps_the_library_first():
    # a train log: coverage 7.0.x warned about a malformed parallel data file, then failed an internal
    # assertion (pytest-cov's INTERNALERROR): the data-file family is read, and coverage's own failure leads
    text = train_log_path("pytest_python/pt_cov_internalerror_malformed_data_file_coverage7").read_text()
    diag, cats = _diagnose_text(text, 1, "pytest")
    assert fired(diag, "coverage.data_file_unusable")
    assert cats[0] == "library"


def test_two_conftests_in_same_named_packages_are_the_tests_layout_then_the_command(pytester):
    for tree in ("a", "b"):
        pkg = pytester.path / tree / "tests"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "conftest.py").write_text("X = 1\n")
        (pkg / f"test_{tree}.py").write_text("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:faildiag", "--import-mode=prepend", "a/tests", "b/tests")
    assert "ImportPathMismatchError" in result.stdout.str() + result.stderr.str()
    diag, cats = _diagnose_run(result)
    assert diag.root_causes[0].rule == "pytest.import_path_mismatch"
    assert cats[0] == "test_code"
    assert {"config", "environment"} <= set(cats[:3])
