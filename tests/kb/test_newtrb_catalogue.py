"""Catalogue facts added for the fresh train misses of pytest/Python, environment/install and JAX (#13): each
rule is shown on output produced for real here (a locale without UTF-8, a port bound twice, isinstance with a
typing alias, pytest sessions run with pytester or in a subprocess) or on a real train log of the thread
corpus (the split is checked by ``train_log``, so a dev log never becomes a test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids, train_log
from tests.kb.kb_helpers import pack_rules

NEW_RULES = {
    "30-python.toml": {
        "py.ascii_locale_codec",
        "py.isinstance_subscripted_generic",
        "py.daemonic_children",
        "py.process_pool_worker_died",
    },
    "35-system-catalogue.toml": {
        "cudnn.sublibrary_load_failed",
        "opencl.no_device",
        "tensorrt.builder_out_of_memory",
        "shell.zsh_abort",
        "shell.zsh_fatal_signal",
        "mlir.op_verification",
        "errno.address_in_use",
        "conda.unsatisfiable_python",
        "pip.hash_mismatch",
        "net.ssl_certificate_verify_failed",
        "errno.file_exists",
    },
    "40-pytest.toml": {
        "pytest.removed_asyncio_event_loop",
        "pytest.plugin_unknown_hook_installed",
        "pytest.plugin_hook_registration",
        "pytest.did_not_raise_timeout",
        "pytest.crash_while_collecting",
        "pytest.arg_not_found",
        "pytest.pytest_plugins_non_top_conftest",
        "pytest.unknown_config_option",
        "pytest.option_defined_twice",
        "hypothesis.deadline_exceeded",
        "hypothesis.flaky",
        "hypothesis.failed_health_check",
    },
    "45-ecosystem.toml": {"errno.too_many_open_files"},
    "70-jax.toml": {"jax.err.unhashable_eqn_params"},
}


def _rules(diag) -> list[str]:
    return [c.rule for c in diag.root_causes]


def _cats(diag) -> list[str]:
    return [c.category for c in diag.root_causes]


def _run(tmp_path: Path, body: str, env: dict[str, str] | None = None) -> tuple[str, int]:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    p = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


def _pytester_diag(result):
    out = "\n".join(result.outlines)
    err = "\n".join(result.errlines)
    return diagnose(texts={"stdout.txt": out, "stderr.txt": err}, exit_code=int(result.ret), command="pytest")


# ------------------------------------------------------------------------------------------------ the packs


def test_the_packs_load_without_a_warning_and_hold_the_new_rules():
    ids = loaded_rule_ids()
    for pack, rules in NEW_RULES.items():
        assert rules <= {r.id for r in pack_rules(pack)}, pack
        assert rules <= ids


# ------------------------------------------------------------------------------- Python, made here for real


def test_the_ascii_codec_under_a_c_locale_reads_as_the_machines_locale(tmp_path):
    """A real process under LC_ALL=C without UTF-8 mode: os.mkdir of a non-ASCII name fails in the ASCII
    file-system encoding; the locale (environment) leads, the code's implicit encoding is the alternative."""
    err, rc = _run(tmp_path, "import os\nos.mkdir('f\\xf6\\xf6')\n", env={"LC_ALL": "C", "PYTHONUTF8": "0"})
    assert "'ascii' codec can't encode" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "py.ascii_locale_codec" in _rules(diag)
    assert _cats(diag)[0] == "environment", _cats(diag)
    assert "model" in _cats(diag)[:3]


def test_a_port_bound_twice_is_a_servers_port_not_a_rendezvous(tmp_path):
    """Two real sockets bound to one port: Python's OSError EADDRINUSE is a server's bind failing at start-up
    (a runtime error, not a collective's communication failure: torch.distributed's rule stands aside); the
    configured port and the process holding it are the two homes."""
    err, rc = _run(
        tmp_path,
        """
        import socket
        a = socket.socket(); a.bind(("127.0.0.1", 0)); a.listen()
        b = socket.socket(); b.bind(("127.0.0.1", a.getsockname()[1]))
        """,
    )
    assert "Address already in use" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "errno.address_in_use" in _rules(diag)
    assert "dist.address_in_use" not in _rules(diag)
    assert diag.profile.type == "runtime_error"
    assert diag.profile.stage == "startup"
    assert _cats(diag)[:2] == ["config", "resource"], _cats(diag)


def test_isinstance_with_a_typing_alias_names_the_call_site_not_the_data(tmp_path):
    """typing's own TypeError for isinstance(x, List[int]) (real): the code that made the check or a changed
    dependency, never the data or a configuration."""
    err, rc = _run(tmp_path, "from typing import List\nisinstance([1], List[int])\n")
    assert "Subscripted generics cannot be used" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "py.isinstance_subscripted_generic" in _rules(diag)
    assert {"dataset", "config"}.isdisjoint(_cats(diag)[:3]), _cats(diag)
    assert "model" in _cats(diag)[:3]


def test_running_out_of_descriptors_outside_a_dataloader_names_no_data_stage(tmp_path):
    """A real EMFILE from a plain loop of open() calls: the errno rule fires, and the stage is not `data`
    (only the DataLoader's own descriptor path is the data stage)."""
    err, rc = _run(
        tmp_path,
        """
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        handles = [open(__file__) for _ in range(200)]
        """,
    )
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "errno.too_many_open_files" in _rules(diag)
    assert "host.file_handles" not in _rules(diag)
    assert diag.profile.stage != "data"
    # EMFILE is the per-process limit reached by the process's own descriptors (kland5): the leak, then the limit
    assert _cats(diag)[:2] == ["model", "resource"], _cats(diag)


def test_a_wheel_that_does_not_match_its_pinned_hash_is_the_lock_or_the_download(tmp_path):
    """pip run offline against a local wheel with a requirement pinned to another hash (real pip output)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    dist = "fdhash-1.0.dist-info"
    with zipfile.ZipFile(wheels / "fdhash-1.0-py3-none-any.whl", "w") as z:
        z.writestr(f"{dist}/METADATA", "Metadata-Version: 2.1\nName: fdhash\nVersion: 1.0\n")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    (tmp_path / "req.txt").write_text("fdhash==1.0 --hash=sha256:" + "0" * 64 + "\n")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-index",
            "--find-links",
            str(wheels),
            "-r",
            "req.txt",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"},
        timeout=180,
    )
    assert p.returncode != 0 and "DO NOT MATCH THE HASHES" in p.stdout + p.stderr, p.stdout + p.stderr
    diag = diagnose(texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode, command="pip")
    assert "pip.hash_mismatch" in _rules(diag)
    assert diag.profile.stage == "startup"
    assert _cats(diag)[:2] == ["config", "environment"], _cats(diag)


def test_an_untrusted_tls_certificate_is_the_machines_trust_not_the_network(tmp_path):
    """A real HTTPS server on localhost with a self-signed certificate (openssl), fetched with urllib: the
    server answered, so the network is not the question; the client's trust store or the endpoint is."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "k.pem", "-out", "c.pem"]
        + ["-days", "1", "-subj", "/CN=localhost"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
        timeout=60,
    )
    err, rc = _run(
        tmp_path,
        """
        import http.server, ssl, threading, urllib.request
        srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain("c.pem", "k.pem")
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        urllib.request.urlopen(f"https://127.0.0.1:{srv.server_address[1]}/", timeout=10)
        """,
    )
    assert "CERTIFICATE_VERIFY_FAILED" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "net.ssl_certificate_verify_failed" in _rules(diag)
    assert "py.offline_hub" not in _rules(diag)
    assert _cats(diag)[0] == "environment", _cats(diag)
    assert "config" in _cats(diag)[:3]


def test_creating_a_folder_that_exists_is_the_codes_mkdir(tmp_path):
    (tmp_path / "out").mkdir()
    err, rc = _run(tmp_path, "import os\nos.mkdir('out')\n")
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "errno.file_exists" in _rules(diag)
    assert _cats(diag)[:2] == ["model", "config"], _cats(diag)


def test_a_process_pool_worker_killed_is_a_crash_read_as_memory_first(tmp_path):
    """A real ProcessPoolExecutor whose worker is killed with SIGKILL (what the OOM killer does)."""
    err, rc = _run(
        tmp_path,
        """
        import os, signal
        from concurrent.futures import ProcessPoolExecutor

        def task(x):
            os.kill(os.getpid(), signal.SIGKILL)

        if __name__ == "__main__":
            with ProcessPoolExecutor(1) as ex:
                list(ex.map(task, [1]))
        """,
    )
    assert "terminated abruptly" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "py.process_pool_worker_died" in _rules(diag)
    assert diag.profile.type == "crash"
    assert _cats(diag)[0] == "resource", _cats(diag)
    assert {"library", "model"} <= set(_cats(diag)[:3])


def test_processes_started_inside_a_pool_worker_are_the_programs_nesting(tmp_path):
    err, rc = _run(
        tmp_path,
        """
        import multiprocessing as mp

        def task(x):
            p = mp.Process(target=print)
            p.start()
            p.join()

        if __name__ == "__main__":
            with mp.Pool(1) as pool:
                pool.map(task, [1])
        """,
    )
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "py.daemonic_children" in _rules(diag)
    assert _cats(diag)[0] == "model", _cats(diag)
    assert "library" in _cats(diag)[:3]


# ------------------------------------------------------------------------------------ pytest, made for real


def test_the_removed_asyncio_event_loop_fixture_is_the_tests_code_at_setup(pytester):
    """A real session whose test requests `event_loop` (pytest-asyncio 1.0 removed it; here the plugin is
    absent too): the tests' code leads, the install is the alternative, and the stage is the test's setup."""
    pytester.makepyfile(test_loop="def test_x(event_loop):\n    assert event_loop\n")
    diag = _pytester_diag(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.removed_asyncio_event_loop" in _rules(diag)
    assert diag.profile.stage == "runtime"
    assert _cats(diag)[0] == "test_code", _cats(diag)
    assert "environment" in _cats(diag)[:3]


def test_a_missing_fixture_fails_at_the_tests_setup_not_at_startup(pytester):
    """pytest resolves fixtures in each test's setup, after collection: the run's stage."""
    pytester.makepyfile(test_fx="def test_x(faildiag_no_such_fixture):\n    pass\n")
    diag = _pytester_diag(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.fixture_not_found" in _rules(diag)
    assert diag.profile.stage == "runtime"


def test_a_timeout_that_did_not_fire_is_a_timing_dependent_test(pytester):
    """pytest.raises(TimeoutError) around a block that finishes at once (real): "DID NOT RAISE" for a
    timeout is a timing-dependent expectation of the test; the code under test is the alternative."""
    pytester.makepyfile(
        test_t="import pytest\n\ndef test_x():\n    with pytest.raises(TimeoutError):\n        sum(range(10))\n"
    )
    diag = _pytester_diag(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.did_not_raise_timeout" in _rules(diag)
    assert _cats(diag)[0] == "test_code", _cats(diag)
    assert "model" in _cats(diag)[:3]


def test_a_crash_while_pytest_collects_is_the_collection_stage(tmp_path):
    """A test module that segfaults at import, run by a real `pytest -v` with its streams joined as on a
    terminal: faulthandler's "Fatal Python error" lands on the unfinished "collecting ..." line."""
    (tmp_path / "test_seg.py").write_text("import ctypes\nctypes.string_at(0)\n\n\ndef test_x():\n    pass\n")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:faildiag", "-p", "no:cacheprovider", "test_seg.py"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode != 0 and "collecting ... Fatal Python error" in p.stdout, p.stdout
    diag = diagnose(texts={"stdout.txt": p.stdout}, exit_code=p.returncode)
    assert "pytest.crash_while_collecting" in _rules(diag)
    assert diag.profile.type == "crash"
    assert diag.profile.stage == "collection"
    assert "test_code" in _cats(diag)[:3]


def test_a_test_id_that_matches_nothing_is_the_commands_selection(pytester):
    pytester.makepyfile(test_sel="def test_x():\n    pass\n")
    diag = _pytester_diag(pytester.runpytest("-p", "no:faildiag", "test_sel.py::test_renamed"))
    assert "pytest.arg_not_found" in _rules(diag)
    assert diag.profile.stage == "collection"
    assert _cats(diag)[0] == "config", _cats(diag)
    assert "test_code" in _cats(diag)[:3]


def test_pytest_plugins_in_a_nested_conftest_is_the_tests_layout(pytester):
    pytester.mkpydir("sub")
    pytester.path.joinpath("sub", "conftest.py").write_text('pytest_plugins = ["pytester"]\n')
    pytester.path.joinpath("sub", "test_s.py").write_text("def test_s():\n    pass\n")
    diag = _pytester_diag(pytester.runpytest("-p", "no:faildiag"))
    assert "pytest.pytest_plugins_non_top_conftest" in _rules(diag)
    assert diag.profile.stage == "collection"
    assert _cats(diag)[0] == "test_code", _cats(diag)


def test_an_unknown_ini_option_under_strict_config_is_a_plugin_or_a_typo(pytester):
    pytester.makeini("[pytest]\nfaildiag_no_such_option = 1\n")
    pytester.makepyfile(test_ok="def test_x():\n    pass\n")
    diag = _pytester_diag(pytester.runpytest("-p", "no:faildiag", "--strict-config"))
    assert "pytest.unknown_config_option" in _rules(diag)
    assert set(_cats(diag)[:2]) == {"environment", "config"}, _cats(diag)


def test_a_conftest_option_that_a_plugin_defines_is_a_clash(pytester):
    """pytest-timeout (installed here) defines --timeout; a conftest adding it again fails at start-up."""
    pytester.makeconftest('def pytest_addoption(parser):\n    parser.addoption("--timeout", default=1)\n')
    pytester.makepyfile(test_ok="def test_x():\n    pass\n")
    diag = _pytester_diag(pytester.runpytest_subprocess("-p", "no:faildiag"))
    assert "pytest.option_defined_twice" in _rules(diag)
    assert diag.profile.stage == "startup"
    assert _cats(diag)[0] == "test_code", _cats(diag)
    assert "environment" in _cats(diag)[:3]


def test_hypothesis_deadline_flakiness_and_health_checks_are_the_property_tests(pytester):
    """Three real Hypothesis failures: an example slower than its deadline, an example that fails once and
    passes on replay (state kept between calls), a function-scoped fixture under @given."""
    pytester.makepyfile(
        test_hyp="""
        import time
        from hypothesis import given, settings, strategies as st

        state = {"n": 0}

        @given(st.integers())
        @settings(deadline=20, derandomize=True)
        def test_slow(x):
            time.sleep(0.1)

        @given(st.integers())
        def test_flaky(x):
            state["n"] += 1
            assert state["n"] != 1

        @given(st.integers())
        def test_fixture(tmp_path, x):
            pass
        """
    )
    expected = {
        "test_slow": "hypothesis.deadline_exceeded",
        "test_flaky": "hypothesis.flaky",
        "test_fixture": "hypothesis.failed_health_check",
    }
    for test, rule in expected.items():
        diag = _pytester_diag(pytester.runpytest("-p", "no:faildiag", f"test_hyp.py::{test}"))
        assert rule in _rules(diag), (test, _rules(diag))
        assert _cats(diag)[0] == "test_code", (test, _cats(diag))
        assert diag.profile.stage == "runtime"


# ---------------------------------------------------------------------------------- real train logs


def test_cudnn_aborting_on_a_sub_library_it_cannot_load_is_a_crash_of_the_install():
    diag, label = train_log("environment/env_gi4_whisper_libcudnn_ops_infer_so8_missing_abort")
    assert "cudnn.sublibrary_load_failed" in _rules(diag)
    assert "torch.cuda_build_mismatch" not in _rules(diag)
    assert "cuda.runtime_library_unloadable" not in _rules(diag)  # cuDNN's own loader line is the more specific
    assert (diag.profile.type, diag.profile.stage) == (label["type"], label["stage"]) == ("crash", "startup")
    assert _cats(diag)[0] == "environment"


def test_no_opencl_device_is_a_backend_start_up_failure_of_the_install():
    diag, label = train_log("environment/env_lightgbm_gpu_no_opencl_device_missing_nvidia_icd")
    assert "opencl.no_device" in _rules(diag)
    assert (diag.profile.type, diag.profile.stage) == ("backend", "startup")
    assert _cats(diag)[0] == label["category"] == "environment"


def test_tensorrt_out_of_memory_while_building_is_the_workspace_setting():
    diag, label = train_log("environment/env_tensorrt_engine_build_outofmemory_workspace_larger_than_gpu")
    assert "tensorrt.builder_out_of_memory" in _rules(diag)
    assert (diag.profile.type, diag.profile.stage) == ("oom", "compile")
    assert _cats(diag)[0] == label["category"] == "config"
    assert "resource" in _cats(diag)[:3]


def test_conda_without_a_build_for_the_environments_python_is_the_environment():
    diag, label = train_log("environment/env_conda_unsatisfiable_enum34_py27_only_in_py37_env")
    assert "conda.unsatisfiable_python" in _rules(diag)
    assert "conda.unsatisfiable" not in _rules(diag)
    assert _cats(diag)[0] == label["category"] == "environment"


def test_an_installed_plugins_unknown_hook_is_the_plugins_release_at_collection():
    diag, label = train_log("pytest_python/py_internalerror_pytest_randomly_330_xdist_hook_without_xdist")
    assert "pytest.plugin_unknown_hook_installed" in _rules(diag)
    assert diag.profile.stage == label["stage"] == "collection"
    assert _cats(diag)[0] == label["category"] == "library"
    assert "environment" in _cats(diag)[:3]


def test_a_zsh_abort_after_an_mlir_verifier_error_is_a_crash_in_the_ops_lowering():
    diag, label = train_log("jax/jax_metal_tile_uint8_6d_reshape_abort_fixed_in_jax_metal_0_1_1")
    assert {"shell.zsh_abort", "mlir.op_verification"} <= set(_rules(diag))
    assert (diag.profile.type, diag.profile.stage) == ("crash", "compile")
    assert _cats(diag)[0] == label["category"] == "operator"


def test_unhashable_primitive_parameters_under_jax_07_are_the_primitives_package():
    diag, label = train_log("jax/jax_eqx_noinline_unhashable_param_jax_0_7_2_needs_equinox_update")
    assert "jax.err.unhashable_eqn_params" in _rules(diag)
    assert diag.profile.stage == "compile"
    assert _cats(diag)[0] == label["category"] == "library"
    assert "environment" in _cats(diag)[:3]
