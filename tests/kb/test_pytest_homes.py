"""Where a pytest failure's cause lives, failed for real with pytester: pytest's and pluggy's own words
(unregistered markers, async tests without a plugin, hooks pluggy rejects), the code under test raising
(the test stays a home beside it), and warnings turned into errors (a deprecation, an exception nothing
could catch). Each test asserts the distinct homes the top three must hold, not one home twice."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import train_log


def _diagnose(result):
    out = "\n".join(result.outlines)
    err = "\n".join(result.errlines)
    diag = diagnose(texts={"stdout.txt": out, "stderr.txt": err}, exit_code=int(result.ret), command="pytest")
    return diag, [c.category for c in diag.root_causes], {c.rule for c in diag.root_causes}


def test_an_unregistered_marker_under_strict_markers_is_the_configuration_first(pytester):
    pytester.makepyfile(test_m="import pytest\n\n@pytest.mark.slowish\ndef test_x():\n    pass\n")
    diag, cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag", "--strict-markers"))
    assert "pytest.strict_markers" in rules
    assert "slowish" in diag.root_causes[0].summary
    assert cats[0] == "config"
    # a misspelt marker (the test) and a plugin that registers it (the installation) are the alternatives,
    # and the generic collection error ("a test module failed to import") does not compete with them
    assert {"test_code", "environment"} <= set(cats[:3])
    assert "pytest.collection_error" not in rules


def test_a_plugins_own_marker_under_strict_markers_is_the_missing_plugin(pytester):
    """``django_db`` is registered by pytest-django when it loads (not installed here): unknown under
    --strict-markers, the installation leads and a run that keeps the plugin out follows; the generic reading
    (register the marker) yields to it."""
    pytester.makepyfile(test_m="import pytest\n\n@pytest.mark.django_db\ndef test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:faildiag", "--strict-markers")
    assert "'django_db' not found in `markers` configuration option" in "\n".join(result.outlines + result.errlines)
    diag, cats, rules = _diagnose(result)
    assert "pytest.plugin_marker_unregistered" in rules and "pytest.strict_markers" not in rules
    assert "django_db" in diag.root_causes[0].summary
    assert cats[:2] == ["environment", "config"], cats


def test_train_log_an_asyncio_marker_with_only_pytest_cov_loaded_is_the_missing_plugin():
    """gittyup's suite marks tests ``asyncio`` under --strict-markers; the header's plugins line holds only
    pytest-cov: pytest-asyncio was not installed (the maintainers added it to the dev dependencies)."""
    diag, label = train_log("pytest_python/pytest_asyncio_marker_not_found_plugin_missing_strict_markers")
    assert label["category"] == "environment"
    assert [c.category for c in diag.root_causes[:2]] == ["environment", "config"]
    assert diag.root_causes[0].rule == "pytest.plugin_marker_unregistered"


def test_an_async_test_without_a_plugin_is_the_installation_then_its_mode(pytester):
    pytester.makepyfile(test_a="async def test_x():\n    assert True\n")
    diag, cats, rules = _diagnose(
        pytester.runpytest("-p", "no:faildiag", "-W", "error::pytest.PytestUnhandledCoroutineWarning")
        if _pytest_before(8, 4)
        else pytester.runpytest("-p", "no:faildiag")
    )
    assert "pytest.async_unsupported" in rules
    assert cats[0] == "environment"
    assert {"config", "test_code"} <= set(cats[:3])


def _pytest_before(major: int, minor: int) -> bool:
    return tuple(int(x) for x in pytest.__version__.split(".")[:2]) < (major, minor)


def test_a_hook_pluggy_rejects_in_the_tests_conftest_is_the_tests_code(pytester):
    pytester.makeconftest("def pytest_frobnicate(config):\n    pass\n")
    pytester.makepyfile(test_h="def test_x():\n    pass\n")
    diag, cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.plugin_validation_conftest" in rules
    # the INTERNALERROR's generic reading (a plugin's bug) is silenced: pluggy named the conftest
    assert "pytest.internalerror" not in rules
    assert cats[0] == "test_code"
    assert "environment" in cats[:3]


def test_a_hook_pluggy_rejects_in_a_plugin_weighs_versions_and_the_plugin():
    # train log: pluggy rejects a plugin's module-level name as an unknown hook (a pytest regression)
    diag, label = train_log("pytest_python/pt_unknown_hook_pytest_config_variable")
    cats = [c.category for c in diag.root_causes]
    assert any(c.rule == "pytest.plugin_validation" for c in diag.root_causes)
    assert {"environment", "library", "test_code"} == set(cats[:3])
    assert label["category"] in cats[:3]


def test_an_exception_in_the_code_under_test_keeps_the_test_among_the_homes(pytester):
    pytester.makepyfile(
        shop="def unit_price(total, count):\n    return {'price': total / count}['price']\n",
        test_shop="from shop import unit_price\n\ndef test_price():\n    assert unit_price(10, 0) == 0\n",
    )
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert diag.profile.type == "runtime_error"
    assert cats[0] == "model"
    assert "test_code" in cats[:3]
    top = {c.category: c for c in diag.root_causes}
    moved = {v.name: v.status for v in top["model"].validation_checks}
    assert moved.get("context:raiser:under_test") == "passed"


def test_a_deprecation_made_fatal_offers_the_call_the_release_and_the_filter(pytester):
    pytester.makepyfile(
        legacy=textwrap.dedent(
            """\
            import warnings

            def old_api():
                warnings.warn("old_api() is deprecated, use new_api()", DeprecationWarning, stacklevel=2)
                return 1

            def run():
                return old_api()
            """
        ),
        test_legacy="from legacy import run\n\ndef test_run():\n    assert run() == 1\n",
    )
    diag, cats, _rules = _diagnose(pytester.runpytest("-p", "no:faildiag", "-W", "error::DeprecationWarning"))
    assert any(c.rule == "differential:deprecation" for c in diag.root_causes)
    assert {"model", "environment", "config"} == set(cats[:3])


def test_a_deprecation_made_fatal_in_a_script_has_no_test_among_its_homes(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(
        "import warnings\n\n"
        "def old_api():\n"
        "    warnings.warn('old_api() is deprecated', DeprecationWarning, stacklevel=2)\n\n"
        "old_api()\n"
    )
    p = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", str(script)], capture_output=True, text=True)
    assert p.returncode != 0
    diag = diagnose(texts={"stderr.txt": p.stderr}, exit_code=p.returncode, command="python job.py")
    cats = [c.category for c in diag.root_causes]
    assert any(c.rule == "differential:deprecation" for c in diag.root_causes)
    assert cats[0] == "model"
    assert "test_code" not in cats[:3]


def test_an_exception_nothing_could_catch_is_the_code_first(pytester):
    pytester.makepyfile(
        conn="class Conn:\n    def __del__(self):\n        raise ValueError('close on a closed socket')\n",
        test_conn="from conn import Conn\n\ndef test_open():\n    Conn()\n",
    )
    diag, cats, _rules = _diagnose(
        pytester.runpytest("-p", "no:faildiag", "-W", "error::pytest.PytestUnraisableExceptionWarning")
    )
    assert diag.profile.type == "runtime_error"
    assert cats[0] == "model"
    assert len(set(cats[:3])) == 3


_DEADLOCK = "import threading\n\nLOCK = threading.Lock()\n\ndef work():\n    with LOCK:\n        with LOCK:\n            return 1\n"


def test_a_time_limit_hit_in_the_code_under_test_is_that_code_first(pytester):
    pytest.importorskip("pytest_timeout")
    pytester.makepyfile(
        worker=_DEADLOCK, test_worker="from worker import work\n\ndef test_w():\n    assert work() == 1\n"
    )
    # signal method: pytest-timeout raises at the frame it interrupted, which is the code under test
    diag, cats, rules = _diagnose(pytester.runpytest_subprocess("-p", "no:faildiag", "--timeout=2"))
    assert diag.profile.type == "hang"
    assert "pytest.timeout" in rules
    assert cats[:2] == ["model", "test_code"]


def test_a_dumped_stack_stuck_in_the_code_under_test_names_its_owner(pytester):
    pytest.importorskip("pytest_timeout")
    pytester.makepyfile(
        worker=_DEADLOCK, test_worker="from worker import work\n\ndef test_w():\n    assert work() == 1\n"
    )
    # thread method: the stacks are dumped; the innermost frame is worker.py (the program's own file)
    diag, cats, _rules = _diagnose(
        pytester.runpytest_subprocess("-p", "no:faildiag", "--timeout=2", "--timeout-method=thread")
    )
    assert diag.profile.type == "hang"
    assert diag.root_causes[0].rule == "stuck_frame"
    assert cats[0] == "model"
    assert "worker.py" in diag.root_causes[0].summary
    assert "test_code" in cats[:3]


def test_a_dumped_stack_stuck_in_the_test_is_the_test(pytester):
    pytest.importorskip("pytest_timeout")
    pytester.makepyfile(test_spin="def test_spin():\n    n = 0\n    while n >= 0:\n        n += 1\n")
    diag, cats, _rules = _diagnose(
        pytester.runpytest_subprocess("-p", "no:faildiag", "--timeout=2", "--timeout-method=thread")
    )
    assert diag.profile.type == "hang"
    assert cats[0] == "test_code"
    assert "model" in cats[:3]


def test_a_utf8_file_read_in_the_locale_codec_is_the_reading_code(tmp_path):
    (tmp_path / "notes.txt").write_bytes("café\n".encode())
    (tmp_path / "job.py").write_text('print(open("notes.txt").read())\n')
    env = {**os.environ, "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0"}
    env.pop("PYTHONUTF8", None)
    p = subprocess.run(
        [sys.executable, "-X", "utf8=0", "job.py"], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert p.returncode != 0 and "codec can't decode" in p.stderr
    diag = diagnose(texts={"stderr.txt": p.stderr}, exit_code=p.returncode, command="python job.py")
    top = diag.root_causes[0]
    assert top.category == "model"
    assert {v.name: v.status for v in top.validation_checks}.get("context:cue:locale_codec") == "passed"
    assert "test_code" not in [c.category for c in diag.root_causes[:3]]


def test_a_plugin_named_with_p_and_loaded_by_its_entry_point_is_the_command_line(pytester):
    pytest.importorskip("pytest_timeout")
    pytester.makepyfile(test_t="def test_x():\n    pass\n")
    # the installed plugin autoloads through its entry point; naming it again with -p registers it twice
    diag, cats, rules = _diagnose(pytester.runpytest_subprocess("-p", "no:faildiag", "-p", "pytest_timeout"))
    assert "pytest.plugin_registered_twice" in rules
    assert cats[0] == "config"
    assert {"environment", "test_code"} <= set(cats[:3])


def test_an_error_in_a_fixture_offers_the_set_up_the_service_and_the_code(pytester):
    pytester.makepyfile(
        store="def connect(url):\n    raise ConnectionRefusedError(111, 'Connection refused: ' + url)\n"
    )
    pytester.makeconftest(
        "import pytest\nfrom store import connect\n\n@pytest.fixture\ndef db():\n    return connect('db:5432')\n"
    )
    pytester.makepyfile(test_store="def test_read(db):\n    assert db is not None\n")
    diag, cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.setup_error" in rules
    # the service the fixture needs (the machine's) and the set-up (a fixture) are both homes
    assert {"test_code", "environment"} <= set(cats[:3])
    setup = next(c for c in diag.root_causes if c.rule == "pytest.setup_error")
    assert "setup of test_read" in setup.summary


def test_an_error_in_a_plugins_fixture_puts_the_plugin_before_the_tests_set_up(pytester):
    site = pytester.mkdir("venv").joinpath("site-packages")
    site.mkdir()
    site.joinpath("pytest_fakeclient.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef fake_client():\n    raise RuntimeError('client backend not started')\n"
    )
    pytester.syspathinsert(site)
    pytester.makepyfile(test_c="def test_call(fake_client):\n    pass\n")
    diag, cats, rules = _diagnose(pytester.runpytest("-p", "no:faildiag", "-p", "pytest_fakeclient"))
    assert "pytest.setup_error" in rules
    # a site-packages frame raised: the plugin and its versions lead, the tests' set-up stays a home
    assert cats[:2] in (["library", "environment"], ["environment", "library"])
    assert "test_code" in cats[:3]
