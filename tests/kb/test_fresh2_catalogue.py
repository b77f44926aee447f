"""Catalogue facts for families among the 2026-12-01 train logs: each test diagnoses a real log from the
thread corpus's train split (or real output produced here) and checks the rule that states the fact fires
and puts the catalogue's meaning first."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import pack_rules, top3, train_log_path


def _rules(diag) -> set[str]:
    return {rc.rule for rc in diag.root_causes}


@pytest.mark.parametrize("pack", ["15-cuda-nccl-catalogue.toml", "35-system-catalogue.toml"])
def test_the_packs_load_without_a_warning(pack):
    assert pack_rules(pack)


def test_an_old_arch_nvcc_refuses_is_a_build_list_older_than_the_toolkit():
    # CUDA 11's nvcc dropped compute_30; a project's CMake still asked for it
    d = diagnose([train_log_path("environment/env_flashlight_build_nvcc_unsupported_compute_30_cuda11_dropped_arch")])
    assert (d.profile.type, d.profile.stage) == ("backend", "compile")
    assert "build.nvcc_arch_dropped" in _rules(d)
    assert "build.nvcc_unsupported_arch" not in _rules(d)
    assert top3(d)[0] == "library"


@pytest.mark.parametrize("arch", ["compute_90", "sm_100", "compute_120"])
def test_a_new_arch_nvcc_refuses_is_a_toolkit_too_old(arch):
    d = diagnose(texts={"stderr.txt": f"nvcc fatal   : Unsupported gpu architecture '{arch}'\n"}, exit_code=1)
    assert d.profile.type == "backend"
    assert "build.nvcc_unsupported_arch" in _rules(d) and "build.nvcc_arch_dropped" not in _rules(d)
    assert top3(d)[0] == "environment"


@pytest.mark.parametrize(
    "name",
    [
        "environment/env_rocm_hip_no_binary_gfx1031_navi22_needs_hsa_override",
        "environment/env_rocm_hip_no_binary_ryzen_igpu_unsupported_arch_nix",
    ],
)
def test_a_rocm_build_without_the_gpus_arch_aborts_at_load(name):
    # the second log's abort is reported in German ("Speicherabzug geschrieben"): the HIP message alone tells
    d = diagnose([train_log_path(name)])
    assert (d.profile.type, d.profile.stage) == ("crash", "startup")
    assert "hip.no_binary_for_gpu" in _rules(d)
    assert top3(d)[0] == "environment"


@pytest.mark.parametrize(
    "name",
    [
        # Werkzeug 2.1 removed EnvironBuilder's as_tuple, which Flask 2.0's test client still passes
        "pytest_python/py_flask_test_client_as_tuple_removed_werkzeug21_unpinned",
        # Megatron-DeepSpeed passes a keyword the installed (older) DeepSpeed's zero.Init does not have
        "distributed/dist_megatron_deepspeed_zero_init_unexpected_kwarg_stale_deepspeed",
    ],
)
def test_an_unexpected_keyword_argument_is_a_release_mismatch_before_a_config_key(name):
    d = diagnose([train_log_path(name)])
    assert d.profile.type == "runtime_error"
    assert "py.unexpected_kwarg" in _rules(d)
    assert top3(d)[0] == "environment"
    assert "config" != top3(d)[0]


def test_a_real_unexpected_keyword_argument_keeps_the_function_and_the_keyword(tmp_path):
    script = tmp_path / "call.py"
    script.write_text("import json\njson.dumps({}, sort=True)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "unexpected keyword argument 'sort'" in proc.stderr
    d = diagnose(texts={"stderr.txt": proc.stderr}, exit_code=proc.returncode)
    cause = next(rc for rc in d.root_causes if rc.rule == "py.unexpected_kwarg")
    assert "'sort'" in cause.summary


def test_the_py_shim_of_pytest_is_the_tests_import_on_the_train_log():
    # a test helper imports py._path; pytest 7.2 replaced the `py` dependency by a shim with py.path only
    d = diagnose([train_log_path("pytest_python/py_collection_no_module_named_py_path_pytest_7_2_dropped_py")])
    assert (d.profile.type, d.profile.stage) == ("runtime_error", "collection")
    assert "pytest.py_library_shim" in _rules(d) and "py.module_not_found" not in _rules(d)
    assert top3(d)[0] == "test_code" and "environment" in top3(d)


@pytest.mark.parametrize("helper", ["from py._path.local import LocalPath", "import py\nTAG = py.xml.html"])
def test_a_real_session_whose_helper_needs_more_of_py_than_the_shim(pytester, helper):
    if importlib.util.find_spec("py") is None or importlib.util.find_spec("py").submodule_search_locations:
        pytest.skip("the real `py` package is installed here: pytest's shim is not in use")
    pytester.makepyfile(helpers=helper + "\n", test_it="import helpers\n\ndef test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:faildiag")
    assert result.ret != 0
    d = diagnose(
        texts={"stdout.txt": "\n".join(result.outlines), "stderr.txt": "\n".join(result.errlines)},
        exit_code=int(result.ret),
        command="pytest",
    )
    assert "pytest.py_library_shim" in _rules(d)
    assert top3(d)[0] == "test_code"


@pytest.mark.parametrize(
    ("name", "rule", "kind", "first"),
    [
        # oneDNN's AVX2 path could not instantiate a large 1x1 Conv3d kernel (confirmed a oneDNN bug)
        (
            "pytorch/pt_cpu_onednn_conv3d_could_not_create_primitive_avx2_large_input",
            "onednn.primitive_creation",
            ("runtime_error", "runtime"),
            "library",
        ),
        # TensorRT 8.2's builder had no tactic for a Myelin subgraph (fixed in 8.4)
        (
            "environment/env_trtexec_myelin_no_implementation_foreignnode_trt82_bug_fixed_84",
            "tensorrt.no_implementation_for_node",
            ("unsupported_op", "compile"),
            "library",
        ),
        # a GGUF file (magic 46554747) handed to a pre-GGUF llama-cpp-python
        (
            "environment/env_llamacpp_gguf_load_assert_old_llama_cpp_python_ggml_only",
            "llamacpp.gguf_on_ggml_loader",
            ("runtime_error", "checkpoint"),
            "environment",
        ),
        # ColossalAI's launch_from_torch started as a plain `python train.py`
        (
            "distributed/dist_colossalai_launch_from_torch_rank_env_missing_run_with_python",
            "launcher.env_var_missing",
            ("runtime_error", "startup"),
            "config",
        ),
    ],
)
def test_a_catalogued_message_on_its_train_log(name, rule, kind, first):
    d = diagnose([train_log_path(name)])
    assert (d.profile.type, d.profile.stage) == kind
    assert rule in _rules(d)
    assert top3(d)[0] == first


def test_a_real_script_reading_local_rank_without_a_launcher(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import os\n\nlocal_rank = int(os.environ['LOCAL_RANK'])\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "KeyError: 'LOCAL_RANK'" in proc.stderr
    d = diagnose(texts={"stderr.txt": proc.stderr}, exit_code=proc.returncode)
    assert "launcher.env_var_missing" in _rules(d) and "env.missing_variable" not in _rules(d)
    assert top3(d)[0] == "config"
    assert d.root_causes[0].fix is not None


def test_a_collection_error_yields_to_the_exception_that_explains_it():
    # marshmallow 4 removed Field's default/validator keywords the app's schemas pass: pytest's collection
    # error only says where the import failed; the TypeError says why (a release the code was not written for)
    d = diagnose([train_log_path("pytest_python/py_marshmallow4_removed_field_kwargs_collection_errors")])
    assert (d.profile.type, d.profile.stage) == ("runtime_error", "collection")
    assert {"pytest.collection_error", "py.unexpected_kwarg"} <= _rules(d)
    assert top3(d)[0] == "environment"


def test_the_same_hip_status_raised_by_a_framework_is_a_backend_error(tmp_path):
    # PyTorch ROCm returns the status as an exception at a kernel launch: no abort, so no crash
    script = tmp_path / "launch.py"
    script.write_text(
        "raise RuntimeError('HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!')\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    d = diagnose(texts={"stderr.txt": proc.stderr}, exit_code=proc.returncode)
    assert d.profile.type == "backend"
    assert "hip.no_binary_for_gpu_raised" in _rules(d) and "hip.no_binary_for_gpu" not in _rules(d)
    assert top3(d)[0] == "environment"
