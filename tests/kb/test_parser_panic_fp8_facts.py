"""Catalogue facts from the train misses of batches 54-56 (#13): argparse's and jsonargparse's usage errors, PyO3's
PanicException, stable-baselines3 given a space of the other gym package, transformers/accelerate spilling weights
to disk, Transformer Engine's FP8 limits, scikit-learn's module paths removed in 0.23/0.24, PyTorch's C++17
requirement for extensions, TensorRT's ONNX parser without an importer for an op, and Windows' error 1455 while
a DLL loads. Each is shown on a train log of the thread corpus (a user's paste, its cause confirmed in the
thread), argparse's also on output of the real interpreter here. Each test fails on the rules from before the
commit that added the fact."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, run_failing, train_log_led_by


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("pytorch/fcpo_train_argparse_required_model_name_missing", "py.argparse_usage_error"),
        (
            "pytorch/chirodiff_lightningcli_subcommand_after_config_flag_no_action_for_process_position",
            "py.argparse_usage_error",
        ),
        ("pytest_python/polars_scan_parquet_glob_mismatched_schemas_unwrap_panic", "pyo3.panic"),
        ("environment/godot_rl_sb3_2_0_rejects_gym_box_action_space", "sb3.space_of_other_gym_package"),
        ("environment/sinergym_sb3_gym_release_rejects_gymnasium_discrete_space", "sb3.space_of_other_gym_package"),
        ("pytorch/medicalgpt_device_map_disk_offload_insufficient_gpu_memory", "hf.weights_offloaded_to_disk"),
        ("pytorch/transformer_engine_fp8_autocast_on_ampere_rtx3090_compute_capability", "te.fp8_needs_newer_gpu"),
        ("pytorch/transformer_engine_fp8_gemm_dims_not_divisible_by_8_16", "te.fp8_gemm_shape"),
        (
            "environment/strvctvre_pickled_model_needs_removed_sklearn_ensemble_forest_module",
            "sklearn.pickle_of_older_release",
        ),
        ("environment/deepspeed_ops_build_torch_nightly_requires_cxx17", "build.torch_needs_cxx17"),
        ("environment/onnx_tensorrt_no_importer_registered_for_reversesequence", "tensorrt.plugin_not_found"),
        ("pytorch/kair_swinir_train_winerror_1455_paging_file_too_small_shm_dll", "py.windows_commit_limit"),
    ],
)
def test_a_train_log_reads_as_the_catalogue_says(name: str, rule: str) -> None:
    diag, label = train_log_led_by(name, rule)
    assert diag.profile.type == label["type"], (diag.profile.type, label["type"])


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--epochs", "ten"], "argument --epochs: invalid int value: 'ten'"),
        (["--epochs"], "argument --epochs: expected one argument"),
        (["--cpu", "--gpu"], "argument --gpu: not allowed with argument --cpu"),
    ],
)
def test_argparse_refusing_a_command_line_is_the_invocation(tmp_path: Path, argv: list[str], words: str) -> None:
    diag, stderr = run_failing(
        tmp_path,
        f"""
        import argparse
        parser = argparse.ArgumentParser(prog="train.py")
        parser.add_argument("--epochs", type=int)
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--cpu", action="store_true")
        group.add_argument("--gpu", action="store_true")
        parser.parse_args({argv!r})
        """,
    )
    assert words in stderr
    top = diag.root_causes[0]
    assert (top.rule, top.category, diag.profile.stage) == ("py.argparse_usage_error", "config", "startup")


def test_sb3_refusing_a_space_its_algorithm_lacks_is_not_the_package_skew() -> None:
    """SB3's same check for a space the algorithm does not take (DQN given a Box): the class names differ, so the
    installed packages are not what it says (the words as SB3's BaseAlgorithm formats them)."""
    text = (
        "AssertionError: The algorithm only supports (<class 'gymnasium.spaces.discrete.Discrete'>,) as action "
        "spaces but Box(-1.0, 1.0, (2,), float32) was provided\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert not fired(diag, "sb3.space_of_other_gym_package")


def test_a_missing_scikit_learn_is_still_a_missing_module(tmp_path: Path) -> None:
    """Only a path below an installed scikit-learn is the old pickle's; scikit-learn itself missing stays the
    install's (the real interpreter without its site-packages, -I -S, so it is missing whatever is installed)."""
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "import sklearn"], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert "No module named 'sklearn'" in proc.stderr
    diag = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    assert not fired(diag, "sklearn.pickle_of_older_release")
    assert diag.root_causes[0].rule == "py.module_not_found"
