"""Catalogue facts for the fresh train misses of PyTorch, distributed, Ascend and MindSpore (issue #13, newtra).

Each rule states a fact about a message family (c10d's own messages, NCCL's topology detection, PyTorch's
convolution/loss/optimizer checks, the dispatcher, MindSpore's context checks and build scripts, vllm-ascend's
quantization method) and is shown on a real log: PyTorch-on-CPU programs run here in a child process, or
train logs of the thread corpus (real logs from public threads; never a dev or calib log).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3, train_log_path

ROOT = Path(__file__).resolve().parents[2]
THREADS = ROOT / "tests/data/corpus/threads"
SPLIT = json.loads((THREADS / "split.json").read_text())["split"]


def _run(tmp_path: Path, body: str, name: str = "train.py"):
    """Run ``body`` as a real Python program and diagnose what it printed, as a CI log carries it."""
    pytest.importorskip("torch")
    script = tmp_path / name
    script.write_text(textwrap.dedent(body))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=180)
    assert p.returncode != 0, p.stdout + p.stderr
    return diagnose(
        texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode, command=f"python {name}"
    )


@pytest.mark.parametrize(
    "pack",
    [
        "10-pytorch.toml",
        "12-torch-messages.toml",
        "15-cuda-nccl-catalogue.toml",
        "20-distributed.toml",
        "50-ascend.toml",
        "60-mindspore.toml",
    ],
)
def test_the_packs_load_without_a_warning(pack):
    assert pack_rules(pack)


# --- PyTorch, real programs on the CPU ---


def test_a_four_channel_image_into_a_three_channel_convolution_points_at_the_data(tmp_path):
    d = _run(
        tmp_path,
        """
        import torch
        first = torch.nn.Conv2d(3, 8, 3)
        rgba = torch.zeros(1, 4, 16, 16)  # a PNG with an alpha channel, loaded without convert('RGB')
        first(rgba)
        """,
    )
    assert d.profile.type == "runtime_error"
    assert fired(d, "torch.msg.image_channels")
    assert not fired(d, "torch.shape_mismatch")
    assert top3(d)[0] == "dataset"


def test_a_collective_on_cpu_tensors_without_a_cpu_backend_is_a_communication_error(tmp_path):
    store = tmp_path / "store"
    d = _run(
        tmp_path,
        f"""
        import torch, torch.distributed as dist
        dist.init_process_group("cuda:gloo", init_method="file://{store}", rank=0, world_size=1)
        dist.all_reduce(torch.ones(2))
        """,
    )
    assert (d.profile.type, d.profile.stage) == ("communication", "runtime")
    assert fired(d, "c10d.collective_device_without_backend")
    assert {"library", "config", "model"} == set(top3(d))


def test_an_optimizer_state_missing_param_groups_is_a_checkpoint_layout_error(tmp_path):
    d = _run(
        tmp_path,
        """
        import torch
        net = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        torch.save({"model": net.state_dict()}, "ckpt.pt")
        ckpt = torch.load("ckpt.pt")
        opt.load_state_dict(ckpt["model"])  # the model's weights, not an optimizer state
        """,
    )
    assert (d.profile.type, d.profile.stage) == ("runtime_error", "checkpoint")
    assert fired(d, "torch.msg.checkpoint_layout_key")
    assert top3(d)[:2] == ["checkpoint", "model"]


@pytest.mark.parametrize(("script", "stage"), [("evaluate.py", "evaluation"), ("train.py", "runtime")])
def test_a_script_named_for_evaluation_places_the_failure_in_evaluation(tmp_path, script, stage):
    d = _run(
        tmp_path,
        """
        def score(pred, target):
            return sum(p == t for p, t in zip(pred, target)) / len(target)

        print(score([1, 2], []))
        """,
        name=script,
    )
    assert d.profile.type == "runtime_error"
    assert d.profile.stage == stage


# --- train logs of the thread corpus ---


@pytest.mark.parametrize(
    "name",
    [
        "distributed/dist_nccl_internal_error_reverse_path_h100_container_nccl_2143",
        "distributed/dist_pr6_nccl_init_cannot_find_pci_path_sysfs_wsl2",
    ],
)
def test_an_nccl_topology_detection_failure_is_a_set_up_error_of_the_environment(name):
    d = diagnose([train_log_path(name)])
    assert (d.profile.type, d.profile.stage) == ("communication", "startup")
    assert fired(d, "nccl.warn.topology_detection")
    assert not fired(d, "nccl.result.internal_error")  # the specific WARN silences the generic code
    assert top3(d)[0] == "environment"


def test_a_hung_watchdog_is_a_hang_of_an_nccl_call():
    d = diagnose([train_log_path("distributed/dist_gh5_nvfuser_teardown_hang_nccl_2234_pg_destroy_order_regression")])
    assert (d.profile.type, d.profile.stage) == ("hang", "runtime")
    assert fired(d, "c10d.watchdog_stuck")
    assert top3(d)[0] == "library"


def test_tensors_must_be_cuda_is_the_same_family_as_no_backend_for_cpu():
    d = diagnose([train_log_path("distributed/ptexamples_imagenet_allreduce_cpu_floattensor")])
    assert fired(d, "c10d.collective_device_without_backend")
    assert top3(d)[0] == "library"


def test_a_class_target_assert_names_the_configured_class_count_too():
    d = diagnose([train_log_path("pytorch/pt_device_assert_nll_target_out_of_range_num_classes_arg_off_by_one")])
    assert d.profile.type == "crash"
    assert fired(d, "torch.msg.class_target_out_of_range")
    assert not fired(d, "torch.cuda.device_side_assert")
    assert top3(d)[:2] == ["dataset", "config"]


def test_a_torchvision_op_without_a_cuda_kernel_fails_when_called():
    d = diagnose([train_log_path("pytorch/pt_impactpack_torchvision_nms_cuda_version_mismatch")])
    assert d.profile.stage == "runtime"
    assert fired(d, "torch.dispatch.vision_op_no_backend_kernel")
    assert top3(d)[0] == "environment"


def test_a_checkpoint_without_its_state_dict_key():
    d = diagnose(
        [train_log_path("pytorch/pt_load_checkpoint_keyerror_state_dict_imagenet_weights_renamed_as_reid_checkpoint")]
    )
    assert d.profile.stage == "checkpoint"
    assert top3(d)[0] == "checkpoint"


# (train log, type, stage, the rule that states the fact, the leading categories it gives)
TRAIN_FACTS = [
    (
        "mindspore/ms_set_context_jit_config_not_recognized_mindspore_too_old",
        ("runtime_error", "startup", "mindspore.context_key_unknown", ["environment", "config"]),
    ),
    (
        "mindspore/ms_build_gpu_cmake_cudnn_not_found_cudnn_home_wrong",
        ("backend", "compile", "mindspore.build_cudnn_not_found", ["environment"]),
    ),
    (
        "ascend/pta_vllm_quantization_ascend_invalid_choice_085",
        ("runtime_error", "startup", "vllm_ascend.quantization_not_registered", ["environment"]),
    ),
    (
        "pytorch/pt_peft_8bit_multi_device_accelerate_bug",
        ("runtime_error", "startup", "accelerate.int8_multi_device_old_check", ["library", "config"]),
    ),
    (
        "distributed/pt_windows_use_libuv_tcpstore",
        ("runtime_error", "startup", "c10d.tcpstore_without_libuv", ["library"]),
    ),
    (
        "pytorch/pt_featdepth_sm86_no_kernel_image",
        ("backend", "runtime", "cuda.err.arch_not_in_binary", ["environment"]),
    ),
    (
        "ascend/pta_torchair_get_npu_backend_post4",
        ("runtime_error", "startup", "pta.torchair_incomplete", ["library", "environment"]),
    ),
]


@pytest.mark.parametrize(("name", "expected"), TRAIN_FACTS, ids=[n.split("/")[1] for n, _ in TRAIN_FACTS])
def test_a_catalogue_fact_on_its_train_log(name, expected):
    """MindSpore's unknown context key (another release first, else a misspelt key); its GPU build without
    cuDNN; vLLM's own parser lacking vllm-ascend's method; accelerate's old over-strict 8-bit check; a torch
    built without libuv; no kernel image (raised when a kernel runs); torch_npu without its TorchAir."""
    typ, stage, rule, lead = expected
    d = diagnose([train_log_path(name)])
    assert (d.profile.type, d.profile.stage) == (typ, stage)
    assert fired(d, rule)
    assert top3(d)[: len(lead)] == lead


def test_the_newer_accelerate_8bit_wordings_are_not_the_old_check():
    d = diagnose([train_log_path("pytorch/pt_peft_8bit_multi_device_accelerate_bug")])
    assert not fired(d, "accelerate.quantized_distributed_device_map")


@pytest.mark.parametrize(
    ("name", "stage"),
    [
        ("distributed/nccl_tests_unhandled_cuda_nccl1", "runtime"),  # failed after the results header
        ("distributed/nccl_tests_docker_ipc_unhandled_system", "startup"),  # failed before it
    ],
)
def test_nccl_tests_results_header_separates_set_up_from_measuring(name, stage):
    d = diagnose([train_log_path(name)])
    assert d.profile.type == "communication"
    assert d.profile.stage == stage


def test_a_cpu_target_out_of_bounds_names_the_class_count_beside_the_labels(tmp_path):
    d = _run(
        tmp_path,
        """
        import torch
        num_classes = 5  # the data has labels 0..5
        logits = torch.nn.Linear(8, num_classes)(torch.randn(4, 8))
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 5, 2]))
        """,
    )
    assert d.profile.type == "runtime_error"
    assert fired(d, "torch.msg.class_target_out_of_range_cpu")
    assert top3(d)[:2] == ["dataset", "config"]
