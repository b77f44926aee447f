"""The kland4 block (engine/reason.py, rules/05-reasoning.toml, rules/19-native-abort-catalogue.toml; docs/engine.md):
facts found on the misses of the train logs scored on landing (session 9).

- Apple's Metal Performance Shaders frameworks report a graph or array they refuse as "<File>.mm:N: failed assertion
  `…'" and abort(): the op's MPS implementation (``mps.framework_failed_assertion``).
- glog's and Abseil's FATAL lines ("F<date> file:line] Check failed: …") end the process in abort(): a crash, even
  where the line quotes a runtime's error code (``glog.fatal_abort``).
- asyncio's "There is no current event loop in thread 'MainThread'": in a test run an earlier asyncio.run() unset
  the loop (``cue:test_loop_unset``); from a Python 3.14+ asyncio the calling code was written for the implicit loop
  of older Pythons (``cue:loop_changed_at_release``).
- A constructor that the main script's top level calls before any progress is start-up
  (``main_constructor_startup``); autocast's bfloat16 check lists the program's unguarded default dtype.

Shown on train logs (with and without the explaining rules, as ``bench/confusion.py --without-rules`` reads them)
and on real runs of pytest and of torch on the CPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine import reason
from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fact_statuses, fired, top3, train_log_with_rules, train_log_without_rules

MPS_LOG = "pytorch/pt_mps_nightly_sdpa_unsupported_mps_placeholder_abort_regression"
GLOG_LOG = "ascend/xllm_causal_conv1d_padded_decode_tiling_failed"


# --- Metal Performance Shaders' failed assertion --------------------------------------------------------------------


def test_mps_failed_assertion_is_the_op_s_mps_implementation():
    diag, label = train_log_with_rules(MPS_LOG)
    assert label["category"] == "operator"
    assert fired(diag, "mps.framework_failed_assertion")
    assert diag.profile.type == "crash"
    assert top3(diag)[0] == "operator"


def test_mps_patterns_read_the_siblings():
    # the MPSNDArray and MPSGraph siblings of the same report (their abort follows on the next line)
    for line in (
        "/AppleInternal/Library/BuildRoots/x/Library/Caches/com.apple.xbs/Sources/MetalPerformanceShaders/MPSCore/"
        "Types/MPSNDArray.mm:130: failed assertion `[MPSNDArrayDescriptor sliceDimension:withSubrange:] error: "
        "subRange.start (8192) is not less than length of dimension[1] (512)'",
        "/AppleInternal/Library/BuildRoots/x/Library/Caches/com.apple.xbs/Sources/MetalPerformanceShadersGraph/mpsgraph/"
        "MetalPerformanceShadersGraph/Core/Files/Operations/MPSGraphConvolutionOps.mm:346: failed assertion "
        "`sourceTensor rank must be 4'",
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            diag = diagnose(texts={"stderr": line + "\nzsh: abort      python train.py\n"})
        assert fired(diag, "mps.framework_failed_assertion"), line
        assert top3(diag)[0] == "operator"


# --- glog's FATAL line ---------------------------------------------------------------------------------------------


def test_glog_fatal_line_is_a_crash_of_the_code_that_logged_it():
    diag, label = train_log_with_rules(GLOG_LOG)
    assert (label["type"], label["stage"], label["category"]) == ("crash", "runtime", "library")
    assert fired(diag, "glog.fatal_abort")
    assert (diag.profile.type, diag.profile.stage) == ("crash", "runtime")
    assert "library" in top3(diag)[:2]


def test_a_check_failed_without_glog_s_fatal_prefix_is_not_typed_by_it():
    # caffe's "Check failed: result == ncclSuccess" pasted without glog's prefix keeps NCCL's own type
    diag, label = train_log_with_rules("distributed/caffe_nccl_unhandled_cuda_m2090_regression")
    assert not fired(diag, "glog.fatal_abort")
    assert diag.profile.type == label["type"] == "communication"


# --- the main thread's event loop --------------------------------------------------------------------------------


def test_no_current_loop_in_a_test_run_is_the_tests_loop_handling():
    for diag, label in (
        train_log_with_rules("pytest_python/datasette_cli_create_token_no_current_event_loop"),
        train_log_without_rules("pytest_python/datasette_cli_create_token_no_current_event_loop"),
    ):
        assert label["category"] == "test_code"
        assert "cue:test_loop_unset" in fact_statuses(diag)
        assert top3(diag)[0] == "test_code"


def test_no_current_loop_from_python_314_is_the_caller_s_release():
    diag, label = train_log_with_rules("pytest_python/datasette_py314_serve_get_event_loop_runtimeerror")
    assert label["category"] == "library"
    assert "cue:loop_changed_at_release" in fact_statuses(diag)
    assert "cue:test_loop_unset" not in fact_statuses(diag)
    assert top3(diag)[0] == "library"


def _pytest_run(tmp_path: Path, body: str, *args: str) -> tuple[str, int]:
    (tmp_path / "test_loop.py").write_text(body)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:faildiag", "-p", "no:randomly", "-q"]
    p = subprocess.run([*argv, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240)
    return p.stdout + p.stderr, p.returncode


_LOOP_TESTS = (
    "import asyncio\n\n\nasync def ping():\n    return 1\n\n\n"
    "def test_async_part():\n    assert asyncio.run(ping()) == 1\n\n\n"
    "def test_sync_after():\n    loop = asyncio.get_event_loop()\n    assert loop.run_until_complete(ping()) == 1\n"
)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="3.14's get_event_loop raises even for a test run alone")
def test_a_real_pytest_run_whose_earlier_test_unset_the_loop(tmp_path, monkeypatch):
    alone, code = _pytest_run(tmp_path, _LOOP_TESTS, "test_loop.py::test_sync_after")
    assert code == 0, alone  # the same test passes alone: the earlier asyncio.run() unset the loop
    out, code = _pytest_run(tmp_path, _LOOP_TESTS, "--tb=short")
    assert code == 1 and "There is no current event loop in thread 'MainThread'" in out, out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diag = diagnose(texts={"stdout": out}, exit_code=code)
        assert "cue:test_loop_unset" in fact_statuses(diag)
        assert "test_code" in top3(diag)[:2]
        monkeypatch.setattr(reason, "main_thread_loop_unset", lambda *a: None)
        without = diagnose(texts={"stdout": out}, exit_code=code)
    assert "test_code" not in top3(without)[:2]


# --- a constructor the main script's top level called; autocast's dtype ----------------------------------------------


def test_autocast_bf16_lists_the_program_s_default_and_is_start_up():
    diag, label = train_log_with_rules("pytorch/nanogpt_train_autocast_bf16_default_on_gpu_without_bf16")
    assert (label["stage"], label["category"]) == ("startup", "model")
    assert diag.profile.stage == "startup"
    assert "model" in top3(diag)


def test_a_real_script_whose_top_level_constructor_raised_is_start_up(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    (tmp_path / "prog.py").write_text("import torch\n\nmodel = torch.nn.Linear(-1, 4)\nprint('step 1 loss 0.5')\n")
    p = subprocess.run([sys.executable, "prog.py"], capture_output=True, text=True, cwd=tmp_path, timeout=240)
    assert p.returncode == 1 and "in __init__" in p.stderr, p.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
        monkeypatch.setattr(reason, "main_constructor_startup", lambda *a, **k: None)
        without = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert diag.profile.stage == "startup"
    assert without.profile.stage != "startup"


def test_a_constructor_called_inside_a_function_is_not_read(tmp_path):
    pytest.importorskip("torch")
    body = "import torch\n\n\ndef train():\n    return torch.nn.Linear(-1, 4)\n\n\ntrain()\n"
    (tmp_path / "prog.py").write_text(body)
    p = subprocess.run([sys.executable, "prog.py"], capture_output=True, text=True, cwd=tmp_path, timeout=240)
    assert p.returncode == 1, p.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert diag.profile.stage != "startup"
