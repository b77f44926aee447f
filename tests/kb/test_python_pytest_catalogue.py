"""CPython's, pytest's, xdist's and coverage.py's own messages, each failed for real (a child interpreter,
pytester, the coverage command line) and diagnosed from what the run printed: the rule that knows the
message fires, and the top causes hold the homes the catalogue gives it (circular imports and asyncio
misuse are the program's, a parametrize that names no argument is the test's, an unparsable warnings filter
is the configuration, an unavailable locale is the machine's)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.analyze import analyze
from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse.scan import ScanResult, scan_text
from pytest_faildiag.rules import _builtin_packs, build_ruleset, load_ruleset
from tests.engine.corpus_logs import THREADS, train_log
from tests.kb.kb_helpers import context_facts

NEW_RULES = {
    "pytest.test_definition",
    "pytest.return_not_none",
    "pytest.unknown_mark_as_error",
    "pytest.xpass_strict",
    "pytest.filterwarnings_invalid",
    "xdist.collection_differs",
    "coverage.no_data",
    "coverage.fail_under",
    "py.circular_import",
    "py.asyncio_different_loop",
    "py.asyncio_loop_closed",
    "py.asyncio_nested_loop",
    "py.asyncio_no_current_loop",
    "py.unpicklable_object",
    "py.mp_context_already_set",
    "py.locale_unsupported",
    "errno.text_file_busy",
    "py.asyncio_task_destroyed",
    "py.coroutine_never_awaited",
    "pip.conflict_user_pin",
    "pip.conflict_package_dependency",
    "pytest.conftest_hook_raised",
    "errno.addr_not_available",
    "errno.bad_file_descriptor",
    "errno.device_busy",
    "errno.file_too_large",
    "errno.symlink_loop",
    "net.ssl_wrong_version",
    "net.ssl_unexpected_eof",
    "jax.traced_in_library",
    "py.stdlib_module_removed",
    "py.pkg_resources_missing",
    "py.legacy_codepage_codec",
    "py.stdlib_api_removed",
    "unittest.removed_alias",
    "pip.invalid_requirement",
    "pip.not_a_project_dir",
    "build.pyproject_invalid",
    "py.generic_alias_old_python",
    "py.union_operator_old_python",
    "py.relative_import_without_package",
}


def test_the_catalogue_rules_load_without_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = {r.id for r in build_ruleset(_builtin_packs()).rules}
    assert NEW_RULES <= ids
    assert not caught, [str(w.message) for w in caught]


def _diagnosed(stdout: str, stderr: str, rc: int, command: str):
    diag = diagnose(texts={"stdout.txt": stdout, "stderr.txt": stderr}, exit_code=rc, command=command)
    return diag, [c.category for c in diag.root_causes], {c.rule for c in diag.root_causes}


def _python(tmp_path: Path, files: dict[str, str], main: str = "main.py"):
    """Run a small program in a child interpreter, in its own folder, and diagnose its output."""
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, main], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode != 0, p.stdout + p.stderr
    return _diagnosed(p.stdout, p.stderr, p.returncode, f"python {main}")


def _pytest(pytester, *args: str):
    result = pytester.runpytest_subprocess("-p", "no:faildiag", "-p", "no:cacheprovider", *args)
    assert result.ret != 0
    return _diagnosed("\n".join(result.outlines), "\n".join(result.errlines), int(result.ret), "pytest")


# --- CPython ---------------------------------------------------------------------------------------


def test_modules_that_import_each_other_are_the_programs_circular_import(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "a.py": "from b import g\ndef f(): return 1\n",
            "b.py": "from a import f\ndef g(): return 2\n",
            "main.py": "import a\n",
        },
    )
    assert "py.circular_import" in rules
    assert "partially initialized module" in diag.profile.first_failure.excerpt
    assert (diag.profile.type, diag.profile.stage, cats[0]) == ("runtime_error", "startup", "model")


def test_a_file_named_like_the_module_it_imports_is_the_programs_and_names_the_module(tmp_path):
    # json.py in the working folder shadows the standard library's json and imports itself
    diag, cats, rules = _python(tmp_path, {"json.py": "import json\njson.dumps({})\n"}, main="json.py")
    assert "py.circular_import" in rules
    assert cats[0] == "model"
    assert "'json'" in diag.root_causes[0].summary
    # the frame that runs json.py says the module is the program's own file (module:own_file): no install or
    # library release is the cause, so neither comes second
    assert "module:own_file" in context_facts(diag)
    assert not {"library", "environment"} & set(cats[:2])


def test_a_future_awaited_on_another_event_loop_is_the_program_then_the_tests_loop_scope(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import asyncio
            async def make():
                return asyncio.get_running_loop().create_future()
            fut = asyncio.run(make())
            async def use():
                await fut
            asyncio.run(use())
            """
        },
    )
    assert "py.asyncio_different_loop" in rules
    assert cats[0] == "model"


def test_asyncio_run_inside_a_running_loop_is_the_program_or_a_notebook(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import asyncio
            async def inner():
                pass
            async def outer():
                asyncio.run(inner())
            asyncio.run(outer())
            """
        },
    )
    assert "py.asyncio_nested_loop" in rules
    assert cats[:2] == ["model", "environment"]


def test_a_closed_event_loop_reused_is_the_program(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import asyncio
            loop = asyncio.new_event_loop()
            loop.close()
            loop.run_until_complete(asyncio.sleep(0))
            """
        },
    )
    assert "py.asyncio_loop_closed" in rules
    assert cats[0] == "model"


def test_get_event_loop_in_a_thread_is_the_program_then_the_python_version(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import asyncio, sys, threading
            errors = []
            def work():
                try:
                    asyncio.get_event_loop()
                except RuntimeError as exc:
                    errors.append(exc)
                    raise
            t = threading.Thread(target=work)
            t.start()
            t.join()
            sys.exit(1 if errors else 0)
            """
        },
    )
    assert "py.asyncio_no_current_loop" in rules
    assert cats[0] == "model"
    assert "environment" in cats[:3]


def test_pickling_an_object_that_holds_a_lock_is_the_program(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import pickle, threading
            class Worker:
                def __init__(self):
                    self.lock = threading.Lock()
            pickle.dumps(Worker())
            """
        },
    )
    assert "py.unpicklable_object" in rules
    assert cats[0] == "model"
    assert "_thread.lock" in diag.root_causes[0].summary


def test_setting_the_start_method_twice_is_the_program(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import multiprocessing as mp
            if __name__ == "__main__":
                mp.set_start_method("spawn")
                mp.set_start_method("fork")
            """
        },
    )
    assert "py.mp_context_already_set" in rules
    assert (diag.profile.stage, cats[0]) == ("startup", "model")


def test_a_locale_the_machine_lacks_is_the_environment_then_the_locale_variables(tmp_path):
    diag, cats, rules = _python(
        tmp_path, {"main.py": "import locale\nlocale.setlocale(locale.LC_ALL, 'xx_XX.UTF-8')\n"}
    )
    assert "py.locale_unsupported" in rules
    assert cats[:2] == ["environment", "config"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ETXTBSY on writing a running binary is Linux's")
def test_writing_an_executable_while_it_runs_is_text_file_busy(tmp_path):
    sleep = shutil.which("sleep")
    if sleep is None:
        pytest.skip("no sleep executable to copy")
    shutil.copy(sleep, tmp_path / "tool")
    (tmp_path / "tool").chmod(0o755)
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import subprocess
            p = subprocess.Popen(["./tool", "30"])
            try:
                open("tool", "wb")
            finally:
                p.kill()
            """
        },
    )
    assert "errno.text_file_busy" in rules
    assert cats[0] == "model"
    assert "harness" in cats[:3]


# --- pytest, xdist, coverage -------------------------------------------------------------------------


def test_parametrize_naming_no_argument_is_the_tests_own_definition(pytester):
    pytester.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.parametrize("value", [1, 2])
        def test_x(val):
            assert val
        """
    )
    diag, cats, rules = _pytest(pytester)
    assert "pytest.test_definition" in rules
    assert (diag.profile.stage, cats[0]) == ("collection", "test_code")
    assert diag.root_causes[0].confidence >= 0.5


def test_a_generator_test_is_the_tests_own_definition(pytester):
    pytester.makepyfile(test_a="def test_x():\n    yield 1\n")
    diag, cats, rules = _pytest(pytester)
    assert "pytest.test_definition" in rules
    assert cats[0] == "test_code"


def test_a_test_returning_a_value_under_warnings_as_errors_is_the_test(pytester):
    pytester.makepyfile(test_a="def test_x():\n    return 5\n")
    diag, cats, rules = _pytest(pytester, "-W", "error::pytest.PytestReturnNotNoneWarning")
    assert "pytest.return_not_none" in rules
    assert cats[0] == "test_code"


def test_a_returned_value_as_a_plain_warning_is_not_the_failure(pytester):
    # the warning in the summary of a run that failed for another reason names no cause of its own
    pytester.makepyfile(test_a="def test_x():\n    return 5\n\ndef test_y():\n    assert 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:faildiag", "-p", "no:cacheprovider")
    assert "PytestReturnNotNoneWarning" in result.stdout.str()
    diag, cats, rules = _diagnosed(result.stdout.str(), result.stderr.str(), int(result.ret), "pytest")
    assert "pytest.return_not_none" not in rules


def test_an_unknown_mark_raised_as_an_error_is_configuration_or_the_test(pytester):
    pytester.makepyfile(test_a="import pytest\n\n@pytest.mark.slwo\ndef test_x():\n    pass\n")
    diag, cats, rules = _pytest(pytester, "-W", "error::pytest.PytestUnknownMarkWarning")
    assert "pytest.unknown_mark_as_error" in rules
    assert set(cats[:2]) <= {"test_code", "config"}
    assert "environment" in cats[:3]


def test_a_strict_xfail_that_passes_is_a_stale_mark_in_the_test(pytester):
    pytester.makepyfile(
        test_a="""
        import pytest
        @pytest.mark.xfail(strict=True, reason="issue 12")
        def test_x():
            assert 1 + 1 == 2
        """
    )
    diag, cats, rules = _pytest(pytester)
    assert "pytest.xpass_strict" in rules
    assert cats[0] == "test_code"
    assert "issue 12" in diag.root_causes[0].summary
    assert {"environment", "model"} <= set(cats[:3])


def test_an_unparsable_warnings_filter_is_the_configuration(pytester):
    pytester.makeini("[pytest]\nfilterwarnings =\n    error::NoSuchWarningCategory\n")
    pytester.makepyfile(test_a="def test_x():\n    pass\n")
    diag, cats, rules = _pytest(pytester)
    assert "pytest.filterwarnings_invalid" in rules
    assert (diag.profile.stage, cats[0]) == ("startup", "config")


def test_xdist_workers_collecting_different_ids_is_the_tests_parametrization(pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(
        test_a="""
        import uuid
        import pytest
        @pytest.mark.parametrize("x", [uuid.uuid4().hex])
        def test_x(x):
            assert x
        """
    )
    diag, cats, rules = _pytest(pytester, "-n", "2")
    assert "xdist.collection_differs" in rules
    assert (diag.profile.stage, cats[0]) == ("collection", "test_code")


def _coverage(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "coverage", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env
    )


def _coverage_project(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("def f(x):\n    if x:\n        return 1\n    return 2\n")
    (tmp_path / "test_mod.py").write_text("import mod\n\ndef test_f():\n    assert mod.f(1) == 1\n")


def test_coverage_that_measured_nothing_is_its_source_setting(tmp_path):
    _coverage_project(tmp_path)
    run = _coverage(
        tmp_path, "run", "--source=not_the_package", "-m", "pytest", "-p", "no:faildiag", "-p", "no:cacheprovider"
    )
    report = _coverage(tmp_path, "report")
    assert report.returncode != 0
    diag, cats, rules = _diagnosed(
        run.stdout + report.stdout, run.stderr + report.stderr, report.returncode, "coverage report"
    )
    assert "coverage.no_data" in rules
    assert cats[0] == "config"
    assert "not_the_package" in diag.root_causes[0].summary or "No data" in diag.profile.first_failure.excerpt


def test_total_coverage_below_fail_under_is_the_tests_reach(tmp_path):
    _coverage_project(tmp_path)
    assert (
        _coverage(
            tmp_path, "run", "--source=.", "-m", "pytest", "-p", "no:faildiag", "-p", "no:cacheprovider"
        ).returncode
        == 0
    )
    report = _coverage(tmp_path, "report", "--fail-under=100")
    assert report.returncode == 2
    diag, cats, rules = _diagnosed(report.stdout, report.stderr, report.returncode, "coverage report --fail-under=100")
    assert "coverage.fail_under" in rules
    assert cats[:2] == ["test_code", "config"]
    assert "100" in diag.root_causes[0].summary


def test_a_task_destroyed_while_pending_and_a_coroutine_never_awaited_are_the_program(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import asyncio, gc
            async def forever():
                await asyncio.sleep(3600)
            async def work():
                return 1
            def main():
                loop = asyncio.new_event_loop()
                loop.create_task(forever())
                loop.run_until_complete(asyncio.sleep(0))
                loop.close()
                work()
            main()
            gc.collect()
            raise SystemExit(1)
            """
        },
    )
    assert {"py.asyncio_task_destroyed", "py.coroutine_never_awaited"} <= rules
    assert cats[0] == "model"


# --- pip's resolver: which side of a conflict the install asked for --------------------------------------


def _pip_conflict(tmp_path: Path, *requested: str) -> subprocess.CompletedProcess:
    """Build four tiny wheels offline (a needs c==1.0, b needs c==2.0) and ask pip, without installing
    anything (--dry-run, --no-index), to resolve the requested set."""
    wheels = tmp_path / "wheels"
    for name, version, dep in (("a", "1.0", "c==1.0"), ("b", "1.0", "c==2.0"), ("c", "1.0", ""), ("c", "2.0", "")):
        src = tmp_path / f"src_{name}_{version}"
        (src / name).mkdir(parents=True)
        (src / name / "__init__.py").write_text("")
        deps = f'dependencies = ["{dep}"]\n' if dep else ""
        (src / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\n{deps}'
        )
        pip = [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check"]
        built = subprocess.run(
            [*pip, "wheel", "-q", "--no-index", "--no-build-isolation", "--no-deps", "-w", str(wheels), str(src)],
            capture_output=True,
            text=True,
            timeout=180,
        )
        if built.returncode != 0:
            pytest.skip(f"cannot build a wheel offline here: {built.stderr.strip()[-200:]}")
    p = subprocess.run(
        [*pip, "install", "--dry-run", "--no-index", "--find-links", str(wheels), *requested],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "ResolutionImpossible" in p.stdout + p.stderr
    return p


def test_a_conflict_between_two_packages_dependencies_is_the_libraries(tmp_path):
    p = _pip_conflict(tmp_path, "a", "b")
    assert "The user requested" not in p.stdout + p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode or 1, "pip install a b")
    assert "pip.conflict_package_dependency" in _fired(p.stdout + p.stderr, 1)
    assert cats[:2] == ["library", "config"]


def test_a_conflict_with_a_requested_pin_is_the_requirements(tmp_path):
    p = _pip_conflict(tmp_path, "a", "c==2.0")
    assert "The user requested c==2.0" in p.stdout
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode or 1, "pip install a c==2.0")
    fired = _fired(p.stdout + p.stderr, 1)
    assert "pip.conflict_user_pin" in fired and "pip.conflict_package_dependency" not in fired
    assert cats[:2] == ["config", "library"]


def _fired(text: str, exit_code: int) -> set[str]:
    """Every rule whose finding counts for this output (a merged cause names only its first rule)."""
    rs = load_ruleset()
    res = ScanResult()
    scan_text(text, "stderr.txt", rs, res)
    return {f.rule.id for f in analyze(res, rs, exit_code=exit_code, command=None).findings}


def test_a_conftest_hook_raising_is_the_tests_setup_not_a_plugin(pytester):
    pytester.makeconftest("def pytest_collection_modifyitems(items):\n    raise ValueError('boom in hook')\n")
    pytester.makepyfile(test_a="def test_x():\n    pass\n")
    diag, cats, rules = _pytest(pytester)
    assert "pytest.conftest_hook_raised" in rules
    assert cats[0] == "test_code"
    assert "pytest_collection_modifyitems" in diag.root_causes[0].summary
    # the session ran no test because it aborted: the empty run is not a cause of its own
    text = "\n".join(pytester_outlines(pytester))
    assert "no tests ran" in text
    assert "pytest.no_tests" not in _fired(text, 3)


def test_an_empty_run_after_a_usage_error_is_the_usage_error(pytester):
    pytester.makepyfile(test_a="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:faildiag", "-p", "no:cacheprovider", "tests/not_there.py")
    text = result.stdout.str() + "\n" + result.stderr.str()
    assert int(result.ret) == 4
    fired = _fired(text, 4)
    # a path that is not there has its own rule (pytest.path_arg_not_found), which stands for pytest's usage error
    assert {"pytest.usage_error", "pytest.path_arg_not_found"} & fired and "pytest.no_tests" not in fired


def test_an_empty_selection_is_still_an_empty_run(pytester):
    pytester.makepyfile(test_a="def helper():\n    pass\n")  # a test module without a test
    result = pytester.runpytest_subprocess("-p", "no:faildiag", "-p", "no:cacheprovider")
    assert int(result.ret) == 5
    assert "pytest.no_tests" in _fired(result.stdout.str() + "\n" + result.stderr.str(), 5)


def pytester_outlines(pytester) -> list[str]:
    result = pytester.runpytest_subprocess("-p", "no:faildiag", "-p", "no:cacheprovider")
    return result.outlines + result.errlines


# --- errno values and OpenSSL reasons ------------------------------------------------------------------


def _python_raw(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "main.py").write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env
    )


def test_binding_an_address_this_host_lacks_is_the_configuration(tmp_path):
    p = _python_raw(tmp_path, 'import socket\nsocket.socket().bind(("10.254.254.254", 29500))\n')
    if "Errno 99" not in p.stderr:
        pytest.skip("this host owns the address or reports another errno")
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python main.py")
    assert "errno.addr_not_available" in rules
    assert cats[0] == "config"


def test_writing_to_a_closed_descriptor_is_the_program(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": 'import os\nfd = os.open("x.txt", os.O_CREAT | os.O_WRONLY)\nos.close(fd)\nos.write(fd, b"data")\n'
        },
    )
    assert "errno.bad_file_descriptor" in rules
    assert cats[0] == "model"


def test_removing_a_mount_point_is_busy_the_runners_mount_or_the_program(tmp_path):
    p = _python_raw(tmp_path, 'import os\nos.rmdir("/dev/shm")\n')
    if "Errno 16" not in p.stderr:
        pytest.skip("/dev/shm is not a mount point this process may try to remove here")
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python main.py")
    assert "errno.device_busy" in rules
    assert set(cats[:2]) == {"harness", "model"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE and SIGXFSZ as on Linux")
def test_a_write_past_the_file_size_limit_is_a_resource_or_the_runners_limit(tmp_path):
    diag, cats, rules = _python(
        tmp_path,
        {
            "main.py": """
            import resource, signal
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
            with open("big.bin", "wb") as f:
                f.write(b"0" * 4096)
            """
        },
    )
    assert "errno.file_too_large" in rules
    assert cats[:2] == ["resource", "harness"]


def test_a_symbolic_link_to_itself_is_a_path_that_loops(tmp_path):
    diag, cats, rules = _python(tmp_path, {"main.py": 'import os\nos.symlink("loop", "loop")\nopen("loop")\n'})
    assert "errno.symlink_loop" in rules
    assert {"config", "model", "dataset"} == set(cats[:3])


_TLS_CLIENT = """
import socket, threading, urllib.request
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
port = srv.getsockname()[1]
def serve():
    conn, _ = srv.accept()
    conn.recv(1024)
    conn.sendall(REPLY)
    conn.close()
threading.Thread(target=serve, daemon=True).start()
urllib.request.urlopen(f"https://127.0.0.1:{port}/", timeout=20)
"""


def test_tls_to_a_plain_http_port_is_the_url_or_proxy_setting(tmp_path):
    reply = 'REPLY = b"HTTP/1.1 400 Bad Request\\r\\nContent-Length: 0\\r\\n\\r\\n" * 20\n'
    diag, cats, rules = _python(tmp_path, {"main.py": reply + _TLS_CLIENT})
    assert "net.ssl_wrong_version" in rules
    assert cats[:2] == ["config", "environment"]


def test_tls_closed_during_the_handshake_is_the_network_on_the_way(tmp_path):
    diag, cats, rules = _python(tmp_path, {"main.py": 'REPLY = b""\n' + _TLS_CLIENT})
    assert "net.ssl_unexpected_eof" in rules
    assert cats[0] == "environment"
    assert "harness" in cats[:3]


# --- JAX: a tracer error in a function a library traces itself ---------------------------------------


def test_a_tracer_error_in_a_function_numpyro_traces_itself_is_the_librarys():
    # jax is not installed here: a train log of the thread corpus (numpyro's own body_fn, traced by its MCMC)
    diag, label = train_log("jax/jax_concretization_bool_numpyro_validate_sample_omnistaging_jax02")
    rules = {c.rule for c in diag.root_causes}
    assert "jax.traced_in_library" in rules and "jax.tracer" not in rules
    assert [c.category for c in diag.root_causes][0] == label["category"] == "library"
    assert "numpyro" in diag.root_causes[0].summary
    assert "model" in [c.category for c in diag.root_causes[:3]]


def test_a_tracer_error_under_a_wrapper_of_the_programs_function_is_not_counted_as_the_wrappers():
    # haiku's transform traces the program's network under the name apply_fn: the wrapper is not the owner
    diag, _ = train_log("jax/graphcast_xarray_jax_tracer_array_conversion")
    assert "jax.traced_in_library" not in {c.rule for c in diag.root_causes}
    assert (
        "tracing the function apply_fn at"
        in (THREADS / "jax/graphcast_xarray_jax_tracer_array_conversion.log").read_text()
    )


# --- modules no pip install brings back, legacy code pages ---------------------------------------------


def _pyenv_python(version: str) -> str | None:
    """An interpreter of another minor version that really runs here (pyenv's or the system's; a pyenv
    shim without that version selected fails, so each candidate is asked for its version)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [str(p) for p in sorted(root.glob(f"{version}.*/bin/python"))] if root.is_dir() else []
    candidates += [c for c in [shutil.which(f"python{version}")] if c]
    for python in candidates:
        try:
            out = subprocess.run(
                [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return python
    return None


def test_a_package_importing_distutils_under_python_312_is_the_package_not_a_missing_install(tmp_path):
    python = _pyenv_python("3.12") or _pyenv_python("3.13")
    if python is None:
        pytest.skip("no Python >= 3.12 on this machine")
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "oldpkg").mkdir(parents=True)
    (site / "oldpkg" / "__init__.py").write_text("from distutils.version import LooseVersion\n")
    (tmp_path / "main.py").write_text("import oldpkg\n")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}
    p = subprocess.run([python, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert "No module named 'distutils'" in p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python main.py")
    assert "py.stdlib_module_removed" in rules and "py.module_not_found" not in rules
    assert cats[:2] == ["library", "environment"]
    assert all("pip install the distribution" not in h for c in diag.root_causes for h in c.fix_hints)


def test_a_module_removed_by_pep_594_is_known_as_removed(tmp_path):
    python = _pyenv_python("3.13")
    if python is None:
        pytest.skip("no Python 3.13 on this machine")
    p = subprocess.run([python, "-c", "import imghdr"], capture_output=True, text=True, timeout=60)
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python -c 'import imghdr'")
    assert "py.stdlib_module_removed" in rules
    assert {"library", "environment"} <= set(cats[:3])


def test_pkg_resources_missing_is_setuptools_or_the_package_that_still_uses_it(tmp_path):
    p = subprocess.run([sys.executable, "-c", "import pkg_resources"], capture_output=True, text=True, timeout=60)
    if p.returncode == 0:
        pytest.skip("the installed setuptools still ships pkg_resources")
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python -c 'import pkg_resources'")
    assert "py.pkg_resources_missing" in rules and "py.module_not_found" not in rules
    assert cats[:2] == ["environment", "library"]


def test_text_printed_through_a_legacy_code_page_is_the_code_or_the_locale(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONIOENCODING": "cp1252"}
    p = subprocess.run([sys.executable, "-c", "print('\\u4e2d')"], capture_output=True, text=True, timeout=60, env=env)
    assert "'charmap' codec can't encode" in p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python -c print")
    assert "py.legacy_codepage_codec" in rules
    assert set(cats[:2]) == {"model", "environment"}


def test_a_package_using_collections_abc_aliases_is_old_code_not_a_missing_name(tmp_path):
    # collections.Mapping & co. left collections in Python 3.10: a package written before fails at import
    site = tmp_path / "lib" / "site-packages"
    (site / "oldlib").mkdir(parents=True)
    (site / "oldlib" / "__init__.py").write_text("from collections import Mapping\n")
    (tmp_path / "main.py").write_text("import oldlib\n")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}
    p = subprocess.run([sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert "cannot import name 'Mapping' from 'collections'" in p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python main.py")
    assert "py.stdlib_api_removed" in rules and "py.import_error" not in rules
    assert "library" in cats[:2] and "environment" in cats[:2]
    assert "'Mapping'" in next(c.summary for c in diag.root_causes if c.category == "library")


def test_the_programs_own_use_of_a_removed_stdlib_function_keeps_its_own_code_in_view(tmp_path):
    diag, cats, rules = _python(
        tmp_path, {"main.py": "import inspect\ndef f(a, b=1):\n    pass\nprint(inspect.getargspec(f))\n"}
    )
    assert "py.stdlib_api_removed" in rules
    assert {"model", "environment", "library"} == set(cats[:3])


def test_unittest_aliases_removed_in_python_312_are_the_tests(tmp_path):
    python = _pyenv_python("3.12") or _pyenv_python("3.13")
    if python is None:
        pytest.skip("no Python >= 3.12 on this machine")
    (tmp_path / "test_old.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        self.assertEquals(1, 1)\n\n"
        "unittest.main()\n"
    )
    p = subprocess.run([python, "test_old.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "has no attribute 'assertEquals'" in p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python test_old.py")
    assert "unittest.removed_alias" in rules
    assert cats[:2] == ["test_code", "environment"]


# --- pip and setuptools refusing what they were given -------------------------------------------------


def _pip(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_requirement_pip_cannot_parse_is_the_requirements_syntax(tmp_path):
    p = _pip(tmp_path, "install", "--dry-run", "--no-index", "foo bar baz")
    assert "Invalid requirement" in p.stdout + p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "pip install 'foo bar baz'")
    assert "pip.invalid_requirement" in rules
    assert (diag.profile.stage, cats[:2]) == ("startup", ["config", "environment"])


def test_a_folder_without_a_project_is_the_path_given_to_pip(tmp_path):
    (tmp_path / "empty").mkdir()
    p = _pip(tmp_path, "install", "--dry-run", "--no-index", "./empty")
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "pip install ./empty")
    assert "pip.not_a_project_dir" in rules
    assert cats[:2] == ["config", "harness"]


def test_a_pyproject_the_build_backend_rejects_is_its_table_first(tmp_path):
    project = tmp_path / "bad"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "bad name!"\nversion = "0.1"\n'
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    p = _pip(tmp_path, "wheel", "--no-index", "--no-build-isolation", "--no-deps", "-w", "wheels", "./bad")
    if "configuration error" not in p.stdout + p.stderr:
        pytest.skip("the installed setuptools does not validate [project] here")
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "pip wheel ./bad")
    assert "build.pyproject_invalid" in rules
    assert cats[0] == "config"
    assert "project.name" in diag.root_causes[0].summary
    assert "library" in cats[:3]


# --- newer-Python syntax on an older interpreter; relative imports ---------------------------------------


def test_a_package_using_union_types_on_python_38_is_the_interpreter_or_the_package(tmp_path):
    python = _pyenv_python("3.8") or _pyenv_python("3.9")
    if python is None:
        pytest.skip("no Python < 3.10 on this machine")
    site = tmp_path / "lib" / "python3.8" / "site-packages"
    (site / "newpkg").mkdir(parents=True)
    (site / "newpkg" / "__init__.py").write_text("def f(x: int | None = None):\n    return x\n")
    (tmp_path / "main.py").write_text("import newpkg\n")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}
    p = subprocess.run([python, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert "unsupported operand type(s) for |" in p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python main.py")
    assert "py.union_operator_old_python" in rules
    assert cats[:2] == ["environment", "library"]


def test_a_builtin_generic_on_python_38_is_the_interpreter_or_the_code(tmp_path):
    python = _pyenv_python("3.8")
    if python is None:
        pytest.skip("no Python 3.8 on this machine")
    (tmp_path / "main.py").write_text("def f(x: list[int]):\n    return x\n")
    p = subprocess.run([python, "main.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "'type' object is not subscriptable" in p.stderr
    diag, cats, rules = _diagnosed(p.stdout, p.stderr, p.returncode, "python main.py")
    assert "py.generic_alias_old_python" in rules
    assert set(cats[:2]) == {"environment", "model"}


def test_a_package_module_run_as_a_script_is_how_the_program_is_run(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "util.py").write_text("")
    diag, cats, rules = _python(tmp_path, {"pkg/main.py": "from . import util\n"}, main="pkg/main.py")
    assert "py.relative_import_without_package" in rules and "py.import_error" not in rules
    assert (diag.profile.stage, cats[0]) == ("startup", "model")
