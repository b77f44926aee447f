"""Reading a log's structure (issue #13, stackk2): the stack the matched rules declare, chained exceptions
read at their root cause in pytest's format as in Python's, JAX's filtered tracebacks, and the stage of a
fixture pytest cannot find. Real logs only: train logs of the thread corpus, real pytest runs (pytester) and
real Python processes run here."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_a_rules_declared_stack_counts_as_evidence_of_the_framework():
    """JAX's "Unable to load cuDNN" names no ``jax.`` module: the rule that knows the message says it is
    JAX's (the log was read as ``other`` before)."""
    diag, label = train_log("jax/jax_cuda_backend_unable_to_load_cudnn")
    assert label["stack"] == "jax"
    assert diag.profile.stack == "jax"


def test_frames_of_a_library_built_on_a_framework_name_that_framework():
    """A flax/orbax traceback runs on JAX; torchvision/timm/vllm frames on PyTorch."""
    diag, label = train_log("jax/orbax_restore_flax_msgpack_ckpt_zarray_missing")
    assert (label["stack"], diag.profile.stack) == ("jax", "jax")


def test_nccl_tests_alone_are_not_a_pytorch_run():
    """NCCL's own words do not make a run PyTorch's: nccl-tests link NCCL without any framework."""
    diag, label = train_log("distributed/nccl_tests_docker_no_host_network")
    assert (label["stack"], diag.profile.stack) == ("other", "other")


def test_pytests_own_report_without_its_header_is_a_pytest_run():
    diag, label = train_log("pytest_python/pt_modnotfound_tests_conftest_no_init")
    assert (label["stack"], diag.profile.stack) == ("pytest", "pytest")


@pytest.fixture
def torch_first():
    """torch imported before ``pytester`` snapshots sys.modules (a fixture listed before it): the in-process run
    then reuses it. Imported only inside the run, torch would be dropped from sys.modules at teardown while its
    C extension stays loaded, and the next import of torch in this worker fails ("SystemError: … bad call flags")
    and then crashes the worker."""
    return pytest.importorskip("torch")


def test_a_pytest_run_that_hits_a_torch_error_stays_a_pytest_run(torch_first, pytester):
    pytester.makepyfile(
        test_torch="""
        import torch

        def test_matmul():
            torch.ones(2, 3) @ torch.ones(2, 3)
        """
    )
    result = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider")
    report = "\n".join(result.outlines)
    assert "RuntimeError" in report and "mat1 and mat2 shapes cannot be multiplied" in report
    diag = diagnose(texts={"pytest.log": report}, exit_code=int(result.ret), command="pytest")
    assert diag.profile.stack == "pytest"


JAX_LOGS = Path(__file__).resolve().parents[1] / "data" / "jax_filtered"  # real JAX output (see its README)


def test_jaxs_filtered_traceback_banner_alone_names_jax():
    """A ValueError raised by the program's own code inside a jitted function: JAX removed its frames, so
    the only sign of JAX is its banner ("JAX has removed its internal frames"), a line only JAX prints."""
    log = JAX_LOGS / "userraise.default.log"
    assert "jax" not in log.read_text().lower().replace("jax_traceback_filtering", "").replace("jax has", "")
    diag = diagnose([str(log)], exit_code=1)
    assert diag.profile.stack == "jax"


CHAINED = {
    "helper_lib": """
        def load(path):
            with open(path) as f:
                return f.read()
        """,
    "test_chain": """
        from helper_lib import load

        class ConfigError(Exception):
            pass

        def read_config(path):
            try:
                return load(path)
            except FileNotFoundError as exc:
                raise ConfigError(f"cannot read the configuration {path}") from exc

        def test_config():
            assert read_config("/nonexistent/conf.yaml")
        """,
}


@pytest.mark.parametrize("tb", ["long", "short"])
def test_a_chain_in_pytests_report_is_read_at_its_root_cause_as_pythons_format_is(pytester, tb):
    """The test's code wraps the program's FileNotFoundError in its own ConfigError: the root cause (raised
    in the program's ``helper_lib.py``) decides, as in Python's format; the outer raise site (the test
    module) is context. Before, pytest's format was read at the outer raise site: the test's code."""
    pytester.makepyfile(**CHAINED)
    result = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider", f"--tb={tb}")
    report = "\n".join(result.outlines)
    assert "The above exception was the direct cause of the following exception" in report
    diag = diagnose(texts={"pytest.log": report}, exit_code=int(result.ret), command="pytest")
    where = [e.excerpt for c in diag.root_causes for e in c.evidence if "raised in" in e.excerpt]
    assert where and all("FileNotFoundError raised in the program's own code at helper_lib.py" in w for w in where)
    checks = {v.name for c in diag.root_causes for v in c.validation_checks}
    assert "context:raiser:under_test" in checks and "context:raiser:test" not in checks


def test_an_error_of_the_programs_code_inside_a_jitted_function_is_raised_at_trace_time():
    """JAX runs a jitted function's Python code only to trace it: the program's ValueError, printed with
    JAX's filtered traceback (the user's frames only), was raised at trace time, the contract's compile."""
    diag = diagnose([str(JAX_LOGS / "userraise.default.log")], exit_code=1)
    assert (diag.profile.stack, diag.profile.stage) == ("jax", "compile")


def test_an_execution_error_through_the_same_filter_stays_runtime():
    """jax_debug_nans re-runs the computation and raises FloatingPointError: not a tracing error, though
    JAX filtered its traceback the same way."""
    diag = diagnose([str(JAX_LOGS / "nans.default.log")], exit_code=1)
    assert (diag.profile.stack, diag.profile.stage) == ("jax", "runtime")


def test_jaxs_unfiltered_stack_trace_is_read_as_the_exception_it_wraps():
    """JAX_TRACEBACK_FILTERING=remove_frames prints ``UnfilteredStackTrace: TypeError: …`` (the original
    traceback with JAX's frames) chained as the cause of the real exception: the wrapper is that exception."""
    from pytest_faildiag.parse.scan import ScanResult, scan_file
    from pytest_faildiag.rules import load_ruleset

    for name, exc in (("shapes", "TypeError"), ("tracebool", "jax.errors.TracerBoolConversionError")):
        scan = ScanResult()
        scan_file(str(JAX_LOGS / f"{name}.remove_frames.log"), "log", load_ruleset(), scan)
        assert [tb.exc_type for tb in scan.tracebacks] == [exc, exc]
        assert any("jax/_src/" in fr.file for fr in scan.tracebacks[0].frames)  # the unfiltered frames
        diag = diagnose([str(JAX_LOGS / f"{name}.remove_frames.log")], exit_code=1)
        assert diag.profile.stage == "compile"
        assert not any("UnfilteredStackTrace" in (c.error or "") for c in diag.root_causes)


def test_a_train_log_of_a_jaxpr_parameter_error_in_pytests_format_is_compile():
    """pytest's report of a TypeError JAX raised while binding a primitive (tracing), with JAX's banner in
    its E lines; the banner is not the message."""
    diag, label = train_log("jax/jax_eqx_noinline_unhashable_param_jax_0_7_2_needs_equinox_update")
    assert label["stage"] == "compile"
    assert (diag.profile.stack, diag.profile.stage) == ("jax", "compile")
    assert diag.profile.first_failure.excerpt.startswith("TypeError: As of JAX v0.7, parameters to jaxpr")
    # with no rule that knows the message (a rule's cause carries none), the reasoning's own causes quote it
    bare, _ = train_log("jax/jax_eqx_noinline_unhashable_param_jax_0_7_2_needs_equinox_update", "70-jax.toml")
    assert bare.root_causes[0].error.startswith("TypeError: As of JAX v0.7, parameters to jaxpr equations")


def test_a_chain_printed_in_a_tests_captured_output_does_not_join_two_tests(pytester):
    """test_a prints a chained traceback to its captured stderr and fails; test_b fails on its own. The
    chain's header between their raise sites is Python's (captured output), not pytest's: test_b's
    exception is read, not test_a's."""
    pytester.makepyfile(
        test_two="""
        import traceback

        def test_a():
            try:
                try:
                    {}["k"]
                except KeyError as exc:
                    raise ValueError("wrapped") from exc
            except ValueError:
                traceback.print_exc()
            assert False, "a failed"

        def test_b():
            open("/nonexistent/b.txt")
        """
    )
    result = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider")
    report = "\n".join(result.outlines)
    assert "Captured stderr call" in report and "The above exception was the direct cause" in report
    from pytest_faildiag.engine.reason import _pytest_facts
    from pytest_faildiag.parse.scan import ScanResult, scan_text
    from pytest_faildiag.rules import load_ruleset

    rs = load_ruleset()
    scan = ScanResult()
    scan_text(report, "pytest.log", rs, scan)
    exc, msg, frames, _src, _line = _pytest_facts(scan, rs.reasoning)  # pytest's report, read alone
    assert (exc, frames[-1].file) == ("FileNotFoundError", "test_two.py"), (exc, msg, frames)


def test_jaxs_simplified_traceback_under_python_3_10_is_a_note_not_the_cause():
    """Under Python < 3.11 JAX chains ``jax.errors.SimplifiedTraceback`` as the cause of the exception it
    filtered: the exception below the chain's header is the failure, not a re-raise of JAX's note."""
    from pytest_faildiag.parse.scan import ScanResult, scan_file
    from pytest_faildiag.rules import load_ruleset

    for name, exc in (("userraise", "ValueError"), ("tracebool", "jax.errors.TracerBoolConversionError")):
        log = JAX_LOGS / f"{name}.py310.log"
        assert log.read_text().startswith("jax.errors.SimplifiedTraceback: For simplicity")
        scan = ScanResult()
        scan_file(str(log), "log", load_ruleset(), scan)
        assert [(tb.exc_type, tb.chained) for tb in scan.tracebacks] == [(exc, False)]
        diag = diagnose([str(log)], exit_code=1)
        assert (diag.profile.stack, diag.profile.stage) == ("jax", "compile")
        assert not any("SimplifiedTraceback" in (c.error or "") for c in diag.root_causes)
