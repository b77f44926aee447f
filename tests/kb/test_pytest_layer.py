"""The pytest layer, failed for real with pytester: collection errors, missing fixtures (and the plugin
that provides them), import file mismatch, an option of a plugin that is not installed."""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose


def _diagnose(result):
    out = "\n".join(result.outlines)
    err = "\n".join(result.errlines)
    diag = diagnose(texts={"stdout.txt": out, "stderr.txt": err}, exit_code=int(result.ret), command="pytest")
    return diag, [c.category for c in diag.root_causes]


def test_it_reports_a_test_module_that_imports_a_missing_package(pytester):
    pytester.makepyfile(test_a="import faildiag_missing_pkg_abc\n\ndef test_x():\n    pass\n")
    diag, cats = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.profile.stage == "collection"
    assert cats[0] == "environment"
    assert "test_code" in cats[:3]


def test_it_reports_a_syntax_error_in_a_test_module_as_test_code(pytester):
    pytester.makepyfile(test_b="def test_x(:\n    pass\n")
    diag, cats = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.profile.stage == "collection"
    assert cats[0] == "test_code"


def test_it_names_the_plugin_of_a_missing_fixture(pytester):
    pytester.makepyfile(test_c="def test_x(mocker):\n    pass\n")
    diag, cats = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert cats[0] == "environment"
    assert any("pytest-mock" in h for h in diag.root_causes[0].fix_hints)


def test_it_reports_a_misspelt_project_fixture_as_test_code_among_the_causes(pytester):
    pytester.makepyfile(test_d="def test_x(databse_url):\n    pass\n")
    diag, cats = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert "test_code" in cats[:2]


def test_it_reports_an_import_file_mismatch_as_test_code(pytester):
    for sub in ("a", "b"):
        pytester.mkdir(sub)
        (pytester.path / sub / "test_same.py").write_text("def test_x():\n    pass\n")
    diag, cats = _diagnose(pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider", "--import-mode=prepend"))
    assert cats[0] == "test_code"
    assert diag.profile.stage == "collection"


def test_it_names_the_plugin_of_an_unrecognised_option(pytester):
    pytester.makepyfile(test_e="def test_x():\n    pass\n")
    diag, cats = _diagnose(pytester.runpytest("-p", "no:faildiag", "--cov-faildiag-nothing=1", "--reruns", "2"))
    assert cats[0] == "environment"
    assert any("pytest-rerunfailures" in h for h in diag.root_causes[0].fix_hints)
