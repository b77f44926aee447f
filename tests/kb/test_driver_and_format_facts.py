"""Facts that the libraries' own checks state, read where the rules before this pass gave no reading or another one:

* the stream executor's driver check (TensorFlow, XLA/jaxlib): "kernel version X does not match DSO version Y"
  is the kernel module and the user-space driver of two releases (``cuda.err.system_driver_mismatch``);
* cuInit's numeric results in NGC images' banner: 804 = CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
  (``cuda.err.forward_compat``);
* the NVIDIA container runtime's check of the image's CUDA requirement against the host driver
  (``docker.cuda_requirement_unsatisfied``);
* transformers 4.31 stopped saving the embeddings' position_ids buffer, so those keys alone are an older
  transformers' state dict (``transformers.position_ids_not_persistent``), not an architecture mismatch;
* torchmetrics 0.11 made ``task`` required (``torchmetrics.task_required_since_0_11``);
* CTranslate2 refuses a compute_type the device lacks (``ctranslate2.compute_type_unsupported``);
* YOLO's label check: a class index at or above the declared class count is the labels
  (``ultralytics.label_class_exceeds_nc``), not a test's assertion;
* ONNX Runtime implements ai.onnx from opset 7 on: a node of opset 1-6 is a model file too old for any release
  (``ort.opset_below_supported``), in either wording of the message;
* torch 1.5 and older refuse a zip file because then only TorchScript archives were zips: the file was saved by
  torch 1.6+ (``torch.load.zip_format_before_1_6``), not a corrupt one.
* SWIG's wrappers refuse a call no C++ overload accepts ("Wrong number or type of arguments for overloaded
  function"): a failed call of the program's (``swig.overload_arguments``), even when the paste keeps that line
  alone (it read as a hang); a real run of faiss-cpu 1.15.1 is kept in tests/data/kb/swig (the .py beside it made
  it, paths renamed);
* datasets 4.0 removed loading scripts on purpose: a script dataset refused is code written for datasets < 4
  (``datasets.scripts_removed``, environment first since the 34th pass; library before).

Train logs as their users pasted them; each assertion fails on the rules from before this pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, run_failing, top3, train_log_led_by, train_log_with_rules


def test_stream_executor_driver_check_is_the_driver_pair() -> None:
    diag, label = train_log_with_rules("jax/jax_gpu_kernel_driver_515_mismatch_dso_510_no_devices")
    assert fired(diag, "cuda.err.system_driver_mismatch")
    assert diag.profile.type == "backend" == label["type"]
    assert label["category"] in top3(diag)[:2]  # the driver pair: its installation, then the driver itself


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("environment/ngc_pytorch_container_driver_too_old_cuinit_804", "cuda.err.forward_compat"),
        (
            "environment/nvidia_docker_unsupported_cuda_version_driver_older_than_image",
            "docker.cuda_requirement_unsatisfied",
        ),
    ],
)
def test_container_cuda_newer_than_host_driver(name: str, rule: str) -> None:
    diag, label = train_log_led_by(name, rule)
    assert label["category"] == "environment"
    assert diag.profile.type == "backend" == label["type"]
    assert diag.profile.stage == "startup" == label["stage"]


def test_position_ids_alone_is_an_older_transformers_state_dict() -> None:
    diag, label = train_log_with_rules("environment/fcgec_checkpoint_position_ids_unexpected_key_newer_transformers")
    assert fired(diag, "transformers.position_ids_not_persistent")
    assert not fired(diag, "torch.state_dict.mismatch")  # the weights and the architecture agree
    assert top3(diag)[0] == "environment" == label["category"]
    assert "4.31" in diag.root_causes[0].summary


# a BERT-style embeddings module as transformers 4.31+ builds it (position_ids registered with persistent=False),
# loading a state dict that holds the buffer as older releases saved it; torch's own load_state_dict raises
_EMBEDDINGS = """
import torch
from torch import nn

class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(10, 4)
        self.register_buffer("position_ids", torch.arange(8).expand((1, -1)), persistent=False)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.head = nn.Linear(4, 2)

model = Model()
state = dict(model.state_dict())
state["embeddings.position_ids"] = torch.arange(8).expand((1, -1))
"""


def test_position_ids_alone_on_a_real_load(tmp_path: Path) -> None:
    diag, err = run_failing(tmp_path, _EMBEDDINGS + "model.load_state_dict(state)\n")
    assert 'Unexpected key(s) in state_dict: "embeddings.position_ids".' in err
    assert diag.root_causes[0].rule == "transformers.position_ids_not_persistent"
    assert top3(diag)[0] == "environment"


def test_position_ids_beside_other_keys_stays_the_mismatch(tmp_path: Path) -> None:
    body = _EMBEDDINGS + 'state["head.extra"] = torch.zeros(2)\nmodel.load_state_dict(state)\n'
    diag, err = run_failing(tmp_path, body)
    assert "head.extra" in err and "position_ids" in err
    assert not fired(diag, "transformers.position_ids_not_persistent")
    assert fired(diag, "torch.state_dict.mismatch")


def test_torchmetrics_task_argument_is_a_newer_torchmetrics() -> None:
    diag, label = train_log_led_by(
        "environment/lightning_torchmetrics_accuracy_missing_task_argument", "torchmetrics.task_required_since_0_11"
    )
    assert top3(diag)[:2] == ["environment", "model"]
    assert label["category"] == "environment"


def test_ctranslate2_compute_type_is_the_setting() -> None:
    diag, label = train_log_led_by(
        "pytorch/faster_whisper_float16_compute_type_requested_on_cpu", "ctranslate2.compute_type_unsupported"
    )
    assert label["category"] == "config"
    assert diag.profile.type == "unsupported_op" == label["type"]
    assert "compute_type=float16" in diag.root_causes[0].summary


@pytest.mark.parametrize(
    "name",
    ["pytorch/yolov3_label_class_exceeds_nc_corrupted_annotation_file", "pytorch/yolov5_obb_label_class_exceeds_nc"],
)
def test_yolo_label_class_check_is_the_labels(name: str) -> None:
    diag, label = train_log_led_by(name, "ultralytics.label_class_exceeds_nc")
    assert label["category"] == "dataset"
    assert "config" in top3(diag)
    assert diag.profile.stage == "data"


def test_onnx_opset_below_seven_is_the_model_file() -> None:
    diag, label = train_log_led_by(
        "pytorch/onnxruntime_batchnorm_opset1_not_implemented_old_model", "ort.opset_below_supported"
    )
    assert label["category"] == "checkpoint"
    assert diag.profile.type == "unsupported_op" == label["type"]
    assert fired(diag, "ort.no_kernel_implementation")  # the pre-1.0 wording is read by the kernel rule too


def test_onnx_opset_seven_and_later_stays_the_kernel() -> None:
    diag, label = train_log_with_rules("pytorch/onnxruntime_cpu_cos_float64_no_kernel_exported_model")
    assert not fired(diag, "ort.opset_below_supported")
    assert top3(diag)[0] == "operator" == label["category"]


def test_zip_archive_refused_by_old_torch_is_the_torch_version() -> None:
    diag, label = train_log_led_by(
        "environment/animegan2_torch_1_2_zip_archive_jit_checkpoint_needs_torch_1_7", "torch.load.zip_format_before_1_6"
    )
    assert not fired(diag, "torch.checkpoint.corrupt")  # the file is whole
    assert label["category"] == "environment"
    assert "model" in top3(diag)  # or a TorchScript archive handed to torch.load


@pytest.mark.parametrize(
    "name",
    [
        "environment/litgpt_tests_datasets4_dataset_scripts_no_longer_supported",
        "environment/olive_resnet_sample_datasets4_imagenet_script_no_longer_supported",
    ],
)
def test_datasets_4_refusing_a_script_is_the_installed_datasets(name: str) -> None:
    diag, label = train_log_led_by(name, "datasets.scripts_removed")
    assert label["category"] == "environment"
    assert "dataset" in top3(diag)


SWIG = Path(__file__).resolve().parents[1] / "data" / "kb" / "swig"


def test_a_swig_overload_refusal_is_the_call_on_a_real_run() -> None:
    diag = diagnose([str(SWIG / "faiss_index_dimension_as_str.log")], exit_code=1)
    assert diag.root_causes[0].rule == "swig.overload_arguments"
    assert top3(diag) == ["model", "config", "environment"]
    assert "new_IndexFlatL2" in diag.root_causes[0].summary


def test_a_swig_overload_refusal_pasted_alone_is_a_failed_call() -> None:
    diag, label = train_log_with_rules("pytorch/faiss_index_cpu_to_all_gpus_shard_wrong_cloner_options_type")
    assert diag.profile.type == "runtime_error" == label["type"]  # not a hang
    assert label["category"] in top3(diag)
