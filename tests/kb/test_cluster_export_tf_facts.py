"""Catalogue facts from the train misses of batch 53 (#13): Ray's cluster version check, ONNX's checker refusing a
newer IR version, NVML's Unknown Error in a container that lost its devices (NVIDIA's container toolkit notice),
pixi's virtual packages, and TensorFlow's device configuration order and unparsable SavedModel. Each is shown on a
train log of the thread corpus; ONNX's also on output printed here by onnx 1.23.2 (the model's ir_version set one
above onnx.IR_VERSION; only the install and script paths were replaced), TensorFlow's two on output of
tensorflow-cpu 2.21 kept with pack 76's fixtures (tests/data/kb/tensorflow_catalogue/labels.json). Each test fails on the rules from before
the commit that added the fact."""

from __future__ import annotations

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import KB_DATA, train_log_led_by

REAL = KB_DATA / "ecosystem_real"


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("distributed/ray_cluster_version_mismatch_cloudpickle_workers_dead", "ray.version_mismatch"),
        ("environment/onnxsim_old_onnx_checker_ir_version_higher", "onnx.checker_ir_version_newer"),
        ("environment/nvidia_docker_nvml_unknown_error_after_systemctl_daemon_reload", "nvml.unknown_error_container"),
        ("environment/ftw_baselines_pixi_virtual_package_cuda_not_on_cpu_machine", "pixi.virtual_package_missing"),
        (
            "pytest_python/implicit_slam_tf_virtual_devices_modified_after_initialized_cell_rerun",
            "tf.device_config_after_init",
        ),
        ("pytest_python/transnetv2_saved_model_pb_truncated_download_cannot_parse", "tf.saved_model_unparsable"),
    ],
)
def test_a_train_log_reads_as_the_catalogue_says(name: str, rule: str) -> None:
    train_log_led_by(name, rule)


def test_onnx_checker_refusing_a_newer_ir_version_is_the_installed_onnx() -> None:
    diag = diagnose([str(REAL / "onnx_checker_ir_version_newer.log")], exit_code=1)
    top = diag.root_causes[0]
    assert (top.rule, top.category) == ("onnx.checker_ir_version_newer", "environment")
    assert any("pip install -U onnx" in h for h in top.fix_hints)


def test_nvml_saying_the_driver_and_library_differ_is_not_the_containers_lost_devices() -> None:
    """NVML's other failure on a train log ("Driver/library version mismatch": a driver upgraded under a running
    kernel module) keeps its own reading."""
    diag, _ = train_log_led_by(
        "environment/env_nvml_driver_library_mismatch_kernel_module_520_vs_userspace_525_broken_apt",
        "cuda.err.system_driver_mismatch",
    )
    assert not any(c.rule == "nvml.unknown_error_container" for c in diag.root_causes)
