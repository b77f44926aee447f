"""kpy6: whose code a pytest or pluggy refusal points at (rules/41-pytest-ownership.toml).

Each fact comes from pytest's, pluggy's or CPython's own source and documentation (the pack's comments name them)
and is shown on real outputs produced here (tests/data/kb/kpy6/README.md says how) and on the train logs it moves:

* pluggy names the plugin whose hook it refuses; pytest registers a conftest under its path, so a conftest.py
  name puts the hook in the tests' code, an entry point's name in an installed plugin (pytest 9.1 removed the
  py.path hook arguments deprecated in 7.0).
* pytest's usage error ends with its parser's "  inifile: <path>" line whatever program started it.
* a pytest API the installed pytest removed (deprecations.rst) is the calling code's; one it does not have yet
  (changelog: from_parent 5.4, Stash 7.0, ...) says the installed pytest is too old.
* an import-file mismatch between an installed copy and a source tree is the run's layout, two test files with one
  basename the tests'.
* a ResourceWarning's frame is where the last reference was dropped: the test's or the code under test's.
* an xdist worker that died in a test's call: faulthandler's frames say whose native call ended it.
* a Test*/test_* name pytest cannot collect is the test module's; a selection that leaves no test is the command's.
* a conftest.py under docs/ or examples/ is reached only when nothing limits collection (testpaths).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, first_cause, pack_rules, top3, train_diagnosis

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kpy6"


def _real(name: str):
    return diagnose([str(DATA / name)], exit_code=1)


def test_the_pack_loads_with_its_rules():
    assert {r.id for r in pack_rules("41-pytest-ownership.toml")} == {
        "pluggy.hookimpl_conftest_rejected",
        "pluggy.hookimpl_argument_not_in_spec",
        "pluggy.hookimpl_declaration",
        "pytest.usage_error_extra_info",
        "pytest.removed_api_called",
        "pytest.api_newer_than_installed",
        "pytest.import_mismatch_run_layout",
        "python.resource_warning_unclosed",
        "xdist.worker_crashed_running_test",
        "pytest.name_not_collectable",
        "pytest.all_deselected",
        "pytest.conftest_outside_tests_collected",
    }


# --- pluggy's refusals, by who implements the hook ----------------------------------------------------------------


@pytest.mark.parametrize("log", ["conftest_hook_path_arg.log", "conftest_wrapper_not_generator.log"])
def test_a_hook_pluggy_refuses_in_the_tests_conftest_is_the_tests_code(log):
    d = _real(log)
    assert first_cause(d) == ("test_code", "pluggy.hookimpl_conftest_rejected")
    assert d.profile.stage == "startup" and d.profile.stack == "pytest"
    # not a plugin missing from the command line (45-ecosystem's usage error), not a bug of an installed plugin
    assert not fired(d, "pytest.usage_error") and not fired(d, "pluggy.hookimpl_argument_not_in_spec")
    assert "library" not in top3(d)[:2]


def test_an_installed_plugins_hook_with_a_removed_argument_is_the_plugin_pytest_fit():
    d = _real("oldplug_path_arg.log")
    assert first_cause(d) == ("environment", "pluggy.hookimpl_argument_not_in_spec")
    assert "9.1" in d.root_causes[0].summary
    assert "library" in top3(d)
    assert not fired(d, "pytest.usage_error")


# --- pytest's usage error, whatever started it --------------------------------------------------------------------


def test_pytests_usage_error_under_another_program_name_is_a_plugin_option():
    d = _real("runtests_usage_error_pytest62.log")
    assert first_cause(d) == ("environment", "pytest.usage_error_extra_info")
    assert d.profile.stack == "pytest" and d.profile.stage == "startup"
    assert not fired(d, "py.config_key")
    assert "config" in top3(d)


def test_todoman_setup_py_usage_error_leads_with_the_missing_plugin():
    d = train_diagnosis("pytest_python/todoman_pytest_cov_addopts_missing_plugin")
    assert first_cause(d) == ("environment", "pytest.usage_error_extra_info")


# --- pytest's API: removed by the installed pytest, or newer than it ------------------------------------------------


@pytest.mark.parametrize(
    "log", ["test_fail_msg_removed.log", "test_warns_none_removed.log", "test_pytest_instance_removed.log"]
)
def test_a_removed_pytest_api_called_by_a_test_is_the_tests_code(log):
    d = _real(log)
    assert first_cause(d) == ("test_code", "pytest.removed_api_called")
    assert "environment" in top3(d)


def test_a_removed_pytest_api_called_by_an_installed_plugin_is_not_the_tests():
    d = _real("plugin_skip_msg.log")
    cats = top3(d)
    assert cats[0] in {"environment", "library"} and "library" in cats[:2], cats
    assert fired(d, "pytest.removed_api_called")


def test_a_pytest_api_newer_than_the_installed_pytest_is_the_environment():
    d = _real("newapi_stash.log")
    assert first_cause(d) == ("environment", "pytest.api_newer_than_installed")


def test_pytest_asyncio_from_parent_on_old_pytest_is_the_environment():
    d = train_diagnosis("pytest_python/pytest_asyncio_011_from_parent_old_pytest_402")
    assert first_cause(d) == ("environment", "pytest.api_newer_than_installed")


# --- import file mismatch: the installed copy vs two test files ------------------------------------------------------


def test_import_mismatch_with_an_installed_copy_is_the_runs_layout():
    d = _real("import_mismatch_installed.log")
    assert first_cause(d) == ("config", "pytest.import_mismatch_run_layout")
    assert "test_code" in top3(d)


def test_import_mismatch_of_two_test_files_stays_the_tests_layout():
    d = _real("import_mismatch_basename.log")
    assert first_cause(d)[0] == "test_code"
    assert "config" in top3(d)


def test_sopel_source_tree_beside_its_install_is_the_runs_layout():
    d = train_diagnosis("pytest_python/sopel_nix_pytest_source_tree_collects_installed_test_tools")
    assert first_cause(d)[0] == "config"


def test_versa_duplicate_basenames_with_a_cut_report_stay_the_tests():
    d = train_diagnosis("pytest_python/versa_duplicate_test_basenames_import_mismatch")
    assert first_cause(d)[0] == "test_code"


# --- ResourceWarning: whose frame dropped the open resource -----------------------------------------------------------


def test_a_file_left_open_by_the_test_is_the_tests_code():
    d = _real("test_resource_leak.log")
    assert first_cause(d) == ("test_code", "python.resource_warning_unclosed")
    assert not fired(d, "pytest.unraisable_exception")


def test_a_file_left_open_by_the_code_under_test_is_the_program():
    d = _real("code_resource_leak.log")
    assert first_cause(d) == ("model", "python.resource_warning_unclosed")
    assert "test_code" in top3(d)


def test_pytest_mpl_unclosed_image_in_the_test_is_the_tests_code():
    d = train_diagnosis("pytest_python/pytest_mpl_unraisable_resourcewarning_unclosed_image_in_test")
    assert first_cause(d) == ("test_code", "python.resource_warning_unclosed")


# --- pytest-xdist: a worker that died in a test's call ------------------------------------------------------------------


def test_a_worker_killed_by_the_projects_native_call_is_the_code_under_test():
    d = _real("xdist_worker_segv.log")
    assert first_cause(d) == ("model", "xdist.worker_crashed_running_test")
    assert d.profile.type == "crash" and d.profile.stage == "runtime"
    assert "library" in top3(d)


def test_a_worker_killed_by_a_librarys_native_call_is_the_library():
    d = _real("xdist_worker_segv_library.log")
    assert first_cause(d)[0] == "library"
    assert d.profile.stage == "runtime"
    assert "model" in top3(d)


# --- names pytest cannot collect, selections that match nothing ---------------------------------------------------------


def test_a_helper_class_named_like_a_test_under_warnings_as_errors_is_the_tests_code():
    d = _real("test_class_init_collect_error.log")
    assert diagnose([str(DATA / "test_class_init_collect_error.log")], exit_code=2).root_causes[0].rule == (
        "pytest.name_not_collectable"
    )
    assert first_cause(d)[0] == "test_code"
    assert d.profile.stage == "collection"
    assert "config" in top3(d)[:2]


def test_a_marker_expression_that_selects_nothing_is_the_selection():
    d = diagnose([str(DATA / "all_deselected_marker.log")], exit_code=5)
    assert first_cause(d) == ("config", "pytest.all_deselected")
    assert d.profile.stage == "collection"


# --- a conftest of a documentation or example folder --------------------------------------------------------------------


def test_pytest_plugins_in_a_docs_conftest_is_the_collection_scope():
    d = diagnose([str(DATA / "pytest_plugins_docs_conftest.log")], exit_code=2)
    assert first_cause(d) == ("config", "pytest.conftest_outside_tests_collected")
    assert "test_code" in top3(d)
    assert d.profile.stage == "collection"


def test_pytest_plugins_in_a_test_folders_conftest_stays_the_tests():
    d = diagnose([str(DATA / "pytest_plugins_tests_conftest.log")], exit_code=2)
    assert first_cause(d) == ("test_code", "pytest.pytest_plugins_non_top_conftest")
    assert not fired(d, "pytest.conftest_outside_tests_collected")


def test_execnet_doc_example_conftest_is_the_collection_scope():
    d = train_diagnosis("pytest_python/execnet_pytest_plugins_non_top_level_conftest_no_testpaths")
    assert first_cause(d) == ("config", "pytest.conftest_outside_tests_collected")


def test_a_resource_warning_in_the_summary_of_a_passing_test_is_not_the_failure():
    d = _real("mixed_warning_and_assert.log")
    assert not fired(d, "python.resource_warning_unclosed")
    assert first_cause(d)[0] == "model"
