"""The competing homes of PyTorch/distributed symptom families, each shown on a real train log of the thread corpus.

A symptom's message says what went wrong, not where the cause lives; these tests check that the homes a
catalogue fact gives a family are offered together (dev logs are never fixtures).
"""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import top3, train_log_path


def test_two_ranks_on_one_gpu_offer_the_launch_and_the_programs_own_device_choice():
    """NCCL's 'Duplicate GPU detected': the rank-to-device map is made by the launch (config) or by a device
    fixed in the program (model); both homes are offered by the rule itself."""
    diag = diagnose([str(train_log_path("distributed/dfine_duplicate_gpu_hardcoded_device"))])
    homes = {c.category for c in diag.root_causes if c.rule == "nccl.duplicate_gpu"}
    assert {"config", "model"} <= homes
    assert "model" in top3(diag)


def test_a_collective_timeout_offers_the_frameworks_own_collectives_beside_the_users():
    """A watchdog timeout's collective may be a training framework's own (checkpoint consolidation, evaluation,
    state-dict gathering on the default group): library is among the homes shown, beside the ranks' data."""
    diag = diagnose(
        [
            str(
                train_log_path(
                    "distributed/dist_pr6_allgather_watchdog_timeout_checkpoint_consolidation_barrier_automodel"
                )
            )
        ]
    )
    assert diag.profile.type == "hang"
    assert any(c.rule == "nccl.watchdog_timeout" and c.category == "library" for c in diag.root_causes)
    assert "library" in top3(diag)
    uneven = diagnose([str(train_log_path("distributed/pt_iterabledataset_unequal_len_nccl_timeout"))])
    assert "dataset" in top3(uneven)


def _homes(diag, rule: str) -> set[str]:
    return {c.category for c in diag.root_causes if c.rule == rule}


def test_nccl_invalid_usage_offers_a_mismatched_nccl_release_beside_the_programs_misuse():
    """ncclInvalidUsage is the caller's misuse or a libnccl of another release than the caller and the driver
    expect (vLLM's pynccl loads one by path): the rule itself offers environment beside model and config."""
    diag = diagnose(
        [
            str(
                train_log_path(
                    "distributed/dist_vllm_tp_pynccl_allreduce_invalid_usage_nccl_mismatched_with_cuda_driver"
                )
            )
        ]
    )
    assert {"model", "config", "environment"} <= _homes(diag, "nccl.result.invalid_usage")
    assert "environment" in top3(diag)


def test_a_cuda_oom_offers_the_training_library_that_runs_the_loop():
    """PyTorch's FAQ on out-of-memory names the loop's habits (graph recorded without no_grad, outputs kept
    across steps); when a training library runs the loop they are its code: library is offered, and the
    program's own code stays offered where the program keeps the tensors."""
    lib = diagnose([str(train_log_path("pytorch/pt_skorch_validation_step_no_grad_oom"))])
    assert "library" in _homes(lib, "torch.cuda.oom")
    assert "library" in top3(lib)
    own = diagnose([str(train_log_path("pytorch/pt_eval_cuda_oom_metric_keeps_logits_on_gpu"))])
    assert top3(own)[:2] == ["resource", "model"]


def test_a_dataloader_worker_exception_offers_the_programs_own_dataset_code():
    """torch.utils.data.Dataset is abstract: __getitem__ is the program's code, so an exception re-raised from a
    worker offers the program's code (model) beside the data; the data's own failures keep the data first."""
    own = diagnose([str(train_log_path("pytorch/pt_gi4_dataloader_filenotfound_mask_path_built_wrong_in_dataset_py"))])
    assert "model" in _homes(own, "torch.msg.dataloader_worker_exception")
    assert "model" in top3(own)
    data = diagnose([str(train_log_path("pytorch/pt_trmisr_collate_nonsquare_images"))])
    assert top3(data)[0] == "dataset"


def test_a_dataloader_bus_error_offers_the_containers_default_shared_memory():
    """PyTorch's README: containers need --ipc=host or --shm-size for DataLoader workers; a bus error offers
    the container/runner's default /dev/shm (harness) beside exhausted shared memory (resource)."""
    diag = diagnose([str(train_log_path("pytorch/pt_dataloader_worker_bus_error_hub_container_small_dev_shm"))])
    assert {"resource", "harness"} <= _homes(diag, "torch.dataloader.bus_error")
    assert top3(diag)[:2] == ["resource", "harness"]
    shm = diagnose([str(train_log_path("distributed/dist_nccl_sigbus_bus_error_docker_default_shm_64m"))])
    assert top3(shm)[0] == "resource"


def test_a_device_side_index_assert_offers_the_configured_class_count():
    """The bound an indexing kernel asserts on is a classifier's or embedding's width, taken from a setting
    (num_classes, vocab_size): the device-side assert offers config beside the data's ids and the model,
    and the data's own out-of-range ids keep the data first."""
    diag = diagnose([str(train_log_path("pytorch/pt_device_assert_index_out_of_bounds_loss_custom_dataset_class_ids"))])
    assert {"dataset", "model", "config"} <= _homes(diag, "torch.cuda.device_side_assert")
    assert top3(diag)[0] == "dataset"


def test_no_socket_interface_offers_the_configured_interface_or_host_name():
    """NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME and the host name Gloo resolves are the user's settings: the rule
    offers config beside the machine's interfaces (environment)."""
    diag = diagnose(
        [str(train_log_path("distributed/dist_gloo_unable_to_find_address_hostname_docker_net_host_socket_ifname"))]
    )
    assert {"environment", "config"} <= _homes(diag, "dist.socket_ifname")
    assert top3(diag)[:2] in (["environment", "config"], ["config", "environment"])
