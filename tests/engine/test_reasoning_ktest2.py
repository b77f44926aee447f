"""The tests' code and layout without a signature (engine/reason.py and 05-reasoning.toml, "ktest2").

Each test shows the reasoning on a real log with the rules that explain it left out (as
``bench/confusion.py --without-rules`` reads it), or on output produced here by the real tool (pytest through
pytester, Python's multiprocessing):

* pytest's section headers in the error lines ("ERROR collecting <node>", "ERROR at setup of <test>") say that
  tests ran and in which phase;
* pytest's list of available fixtures holding a family named after the missing fixture says that the plugin is
  installed: the tests request a name its release does not offer (test_code, not a missing install);
* a pickling error while multiprocessing starts a child by spawn or forkserver is the Process's creator's
  object (the test's, the program's), not the installation.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

from bench.ablate_rules import OWN, dropping
from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fact_statuses, top3, train_log_path, train_log_with_rules, train_log_without_rules


def _without(rules: set[str], **kw):
    with warnings.catch_warnings(), dropping(rules):
        warnings.simplefilter("ignore")
        return diagnose(**kw)


# --- pytest's section headers -------------------------------------------------------------------------------


def test_an_error_collecting_header_says_tests_ran_at_collection():
    # only "ERROR collecting <test module>" is left without the rules (import file mismatch: a basename twice)
    name = "pytest_python/bmad_regression_test_duplicate_basename_test_lcavity"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "test_code"
    assert diag.profile.stage == "collection"
    checks = fact_statuses(diag)
    assert "passed" in checks.get("run:tests", set()), checks
    assert "run:no_tests" not in checks
    assert "test_code" in top3(diag), [(c.category, c.rule) for c in diag.root_causes]


def test_a_real_import_file_mismatch_reads_as_collection_of_tests(pytester):
    # two test modules with one basename in folders without __init__.py: pytest's "import file mismatch"
    pytester.makepyfile(**{"a/test_same": "def test_a():\n    pass\n", "b/test_same": "def test_b():\n    pass\n"})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--import-mode=prepend")
    out = "\n".join(result.outlines)
    assert "ERROR collecting" in out and "import file mismatch" in out, out[-2000:]
    diag = _without({"pytest.import_mismatch", "pytest.collection_error"}, texts={"out.txt": out})
    assert diag.profile.stage == "collection"
    assert "test_code" in top3(diag), [(c.category, c.rule) for c in diag.root_causes]


def test_a_setup_header_is_read_in_the_error_lines():
    # "ERROR at setup of <test>" heads the section; the failing message below it is the fixture lookup's
    diag, _label = train_log_without_rules("pytest_python/pt_event_loop_fixture_removed_asyncio10")
    assert "passed" in fact_statuses(diag).get("cue:test_setup", set())


# --- the available fixtures ------------------------------------------------------------------------------------


def test_a_family_of_the_missing_fixture_says_the_plugin_is_installed():
    # pytest-asyncio 1.0 lists _function_event_loop, _module_event_loop, event_loop_policy but not event_loop
    name = "pytest_python/py_asyncio_fixture_event_loop_not_found_pytest_asyncio_1_0_removed"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "test_code"
    checks = fact_statuses(diag)
    assert "passed" in checks.get("fixture:provider_installed", set()), checks
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]
    with_rules, _ = train_log_with_rules(name)
    assert top3(with_rules)[0] == "test_code"


def test_no_family_in_the_list_leaves_the_missing_plugin():
    # requests_mock is not named in any listed fixture: the plugin is not installed (environment)
    diag, label = train_log_without_rules("pytest_python/pt_requests_mock_fixture_unreleased_version")
    assert label["category"] == "environment"
    assert "fixture:provider_installed" not in fact_statuses(diag)
    assert top3(diag)[0] == "environment"


def test_a_real_fixture_lookup_error_lists_the_installed_family(pytester):
    # a plugin module providing scoped variants of a fixture whose plain name it no longer offers
    pytester.makepyfile(
        myplugin=textwrap.dedent(
            """
            import pytest

            @pytest.fixture
            def _function_event_loop():
                return 1

            @pytest.fixture
            def _module_event_loop():
                return 2

            @pytest.fixture
            def event_loop_policy():
                return 3
            """
        ),
        test_loop="def test_uses_loop(event_loop):\n    assert event_loop\n",
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "myplugin")
    out = "\n".join(result.outlines)
    assert "fixture 'event_loop' not found" in out and "available fixtures:" in out, out[-2000:]
    diag = diagnose(texts={"out.txt": out}, command="pytest")
    assert "passed" in fact_statuses(diag).get("fixture:provider_installed", set())
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]
    # a paste that lost pytest's "> " markers, with more output after the report: the hint rule keeps the list
    pasted = "\n".join(
        line.removeprefix(">").strip() if "available fixtures" in line else line for line in result.outlines
    )
    pasted += "\n" + "\n".join(f"progress line {i}" for i in range(60))
    diag = diagnose(texts={"out.txt": pasted}, command="pytest")
    assert "passed" in fact_statuses(diag).get("fixture:provider_installed", set())


def test_one_relative_is_not_a_family(pytester):
    # a single listed name sharing the missing one's words (aiohttp_client beside client) is not a provider's family
    pytester.makepyfile(
        conftest="import pytest\n\n@pytest.fixture\ndef aiohttp_client():\n    return 1\n",
        test_c="def test_uses_client(client):\n    assert client\n",
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    out = "\n".join(result.outlines)
    assert "fixture 'client' not found" in out, out[-2000:]
    diag = diagnose(texts={"out.txt": out}, command="pytest")
    assert "fixture:provider_installed" not in fact_statuses(diag)


# --- a child process that could not be pickled ------------------------------------------------------------


def test_a_forkserver_pickling_error_in_a_test_run_is_the_tests():
    # Python 3.14's forkserver default: the tests' Process objects held a module; only stdlib frames are shown
    name = "pytest_python/py_pexpect_tests_cannot_pickle_module_py314_forkserver_default"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "test_code"
    checks = fact_statuses(diag)
    assert "passed" in checks.get("spawn:unpicklable_test", set()), checks
    assert "raiser:library_only" not in checks
    assert "test_code" in top3(diag) and "environment" not in top3(diag)[:1]
    with_rules, _ = train_log_with_rules(name)
    assert "test_code" in top3(with_rules)


_SPAWN_LAMBDA = """
import multiprocessing as mp


def {func}():
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=lambda: None)
    p.start()
    p.join()
"""


def test_a_real_spawn_of_a_lambda_in_a_test_is_the_tests(pytester):
    pytester.makepyfile(test_spawn=_SPAWN_LAMBDA.format(func="test_spawn_child"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    out = "\n".join(result.outlines)
    assert "pickle" in out and "popen_spawn" in out, out[-2000:]
    diag = diagnose(texts={"out.txt": out}, command="pytest")
    assert "passed" in fact_statuses(diag).get("spawn:unpicklable_test", set())
    assert "test_code" in top3(diag), [(c.category, c.rule) for c in diag.root_causes]
    # the rules that know the message (a test's local object; a DataLoader worker's unpicklable state, which stands
    # aside for it) are dropped together: a suppressed rule left alone would read the message again
    rules = {c.rule for c in diag.root_causes if not c.rule.startswith(OWN)} | {"torch.msg.unpicklable_worker_state"}
    alone = _without(rules, texts={"out.txt": out}, command="pytest")
    assert top3(alone)[0] == "test_code", [(c.category, c.rule) for c in alone.root_causes]


def test_a_real_spawn_of_a_lambda_in_a_program_is_the_programs(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(_SPAWN_LAMBDA.format(func="main") + '\n\nif __name__ == "__main__":\n    main()\n')
    run = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode != 0 and "pickle" in run.stderr, run.stderr[-2000:]
    diag = diagnose(texts={"stderr.txt": run.stderr}, exit_code=run.returncode, command="python prog.py")
    checks = fact_statuses(diag)
    assert "passed" in checks.get("spawn:unpicklable_user", set()), checks
    assert top3(diag)[0] == "model", [(c.category, c.rule) for c in diag.root_causes]


def test_a_pickling_error_outside_a_child_start_is_not_read():
    # the reasoning needs multiprocessing's spawn/forkserver frames: a train log of pickle without them stays
    assert train_log_path("pytest_python/fairsoft_spack_py38_macos_pickle_child_process")
    diag, _label = train_log_without_rules("pytest_python/fairsoft_spack_py38_macos_pickle_child_process")
    assert not any(f.startswith("spawn:") for f in fact_statuses(diag))
