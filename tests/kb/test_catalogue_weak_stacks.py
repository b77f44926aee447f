"""Catalogue rules for the weakest stacks (PTA/CANN/HCCL, distributed/NCCL, JAX/XLA/Flax/Orbax, MindSpore).

Each rule states what a catalogue or the library's own source says a message means; the tests show it on
real logs: train logs of the thread corpus (never a dev log: the split is checked) and failures produced for
real here (torch.distributed on CPU with gloo).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import pack_rules

THREADS = Path(__file__).resolve().parents[1] / "data/corpus/threads"
SPLIT = json.loads((THREADS / "split.json").read_text())["split"]

NEW_RULES = {
    "15-cuda-nccl-catalogue.toml": {"nccl.warn.socket_create", "nccl.info.max_shared_mem"},
    "20-distributed.toml": {
        "dist.mismatched_collective_shapes",
        "dist.mismatched_collective_ops",
        "dist.env_rendezvous_unlaunched",
        "nccl.watchdog_first_collective",
    },
    "55-cann-catalogue.toml": {
        "cann.hccl.socket_listen_fail",
        "cann.moe.hccl_buffsize_too_small",
        "cann.op_bin_missing_for_key",
        "cann.kernel_assert",
    },
    "60-mindspore.toml": {"ms.dataset.no_valid_data"},
    "70-jax.toml": {
        "flax.scope_param_shape",
        "flax.scope_param_rank_change",
        "flax.apply_misuse",
        "xla.gpu_execution_illegal_address",
    },
    "72-xla-mindspore-catalogue.toml": {"orbax.array_metadata_missing", "xla.tpu_x64_rewrite_unimplemented"},
}


@pytest.mark.parametrize("pack", sorted(NEW_RULES))
def test_the_pack_loads_without_a_warning_and_holds_the_new_rules(pack: str) -> None:
    ids = {r.id for r in pack_rules(pack)}
    assert NEW_RULES[pack] <= ids, NEW_RULES[pack] - ids


def _diagnose_train_log(name: str):
    """Diagnose one thread-corpus log as accuracy.py does, refusing any log that is not in the train split."""
    assert SPLIT.get(name) == "train", f"{name} is not a train log: dev logs are never tests"
    log = THREADS / f"{name}.log"
    label = json.loads(log.with_suffix(".json").read_text())
    return diagnose([str(log)], exit_code=label.get("exit_code"), command=label.get("command")), label


# (train log, rule that must fire, category that must rank first)
CASES = [
    ("ascend/pta_310p_promptflashattention_no_binary", "cann.op_bin_missing_for_key", "operator"),
    ("ascend/pta_hccl_listen_port_conflict_pd_same_host", "cann.hccl.socket_listen_fail", "communication"),
    ("ascend/pta_moe_dispatch_hccl_buffsize_too_small", "cann.moe.hccl_buffsize_too_small", "config"),
    ("distributed/nccl_tests_docker_no_host_network", "nccl.warn.socket_create", "harness"),
    ("distributed/nccl_tests_rtx5090_maxsharedmem_nccl2251", "nccl.info.max_shared_mem", "library"),
    ("distributed/vllm_tp2_driver545_allreduce_timeout", "nccl.watchdog_first_collective", "backend"),
    ("distributed/hrnet_env_rank_not_set_no_launcher", "dist.env_rendezvous_unlaunched", "config"),
    ("jax/flax_scopeparamshape_pretrained_ckpt_flax_version", "flax.scope_param_rank_change", "environment"),
    ("jax/daxbench_scopeparamshape_obs_size_bug", "flax.scope_param_shape", "model"),
    ("jax/jax_pmap_two_gpus_illegal_address_fft_thunk", "xla.gpu_execution_illegal_address", "backend"),
    ("jax/orbax_restore_flax_msgpack_ckpt_zarray_missing", "orbax.array_metadata_missing", "checkpoint"),
    ("jax/t5x_tpu_x64_rewrite_unimplemented_old_libtpu", "xla.tpu_x64_rewrite_unimplemented", "environment"),
    ("mindspore/ms_cifar10dataset_no_valid_data_wrong_files", "ms.dataset.no_valid_data", "dataset"),
]


@pytest.mark.parametrize(("name", "rule", "category"), CASES, ids=[c[0] for c in CASES])
def test_a_catalogue_rule_explains_a_real_train_log(name: str, rule: str, category: str) -> None:
    diag, label = _diagnose_train_log(name)
    assert any(c.rule == rule for c in diag.root_causes), [(c.rule, c.category) for c in diag.root_causes[:5]]
    assert diag.profile.type == label["type"]
    assert diag.root_causes[0].category == category, [(c.rule, c.category) for c in diag.root_causes[:3]]
    assert diag.root_causes[0].fix_hints


KB = Path(__file__).resolve().parents[1] / "data/kb/weak_stacks_catalogue"


def test_a_flax_rng_stream_missing_from_apply_is_the_calling_code() -> None:
    # a public thread's log (mlcommons/algorithmic-efficiency#664, fixed in the workload's own code)
    diag = diagnose([str(KB / "flax_dropout_needs_prng.log")], exit_code=1)
    assert any(c.rule == "flax.apply_misuse" for c in diag.root_causes)
    assert diag.root_causes[0].category == "model"
    assert diag.profile.type == "runtime_error"


def test_an_assertion_inside_an_ascendc_kernel_is_a_crash_about_its_inputs() -> None:
    # the kernel's precondition failed: the inputs' builder (program or serving library) comes before the op
    diag, _ = _diagnose_train_log("ascend/pta_vllm_ascend_v1_gatherv3_stale_positions")
    assert diag.profile.type == "crash"
    cats = [c.category for c in diag.root_causes[:3]]
    assert {"model", "library"} <= set(cats[:2]), cats
    assert not any(c.rule == "ascend.code.operator" for c in diag.root_causes)  # EZ9999 is its echo


def test_nccl_system_error_without_a_warn_line_keeps_the_container_shm_hypothesis() -> None:
    diag, _ = _diagnose_train_log("distributed/nccl_tests_docker_ipc_unhandled_system")
    cats = [c.category for c in diag.root_causes[:3]]
    assert "resource" in cats, cats


def test_a_mismatch_between_collectives_is_the_programs_or_the_datas_not_the_networks() -> None:
    diag, _ = _diagnose_train_log("distributed/jotr_allgather_mismatch_incomplete_dataset")
    cats = [c.category for c in diag.root_causes[:3]]
    assert cats[0] in {"model", "dataset"} and {"model", "dataset"} <= set(cats[:2]), cats


def test_the_first_collective_and_a_later_one_timing_out_are_different_failures() -> None:
    first, _ = _diagnose_train_log("distributed/vllm_tp2_driver545_allreduce_timeout")  # SeqNum=1
    later, _ = _diagnose_train_log("distributed/pt_iterabledataset_unequal_len_nccl_timeout")  # SeqNum=19
    assert {c.rule for c in first.root_causes} & {"nccl.watchdog_first_collective"}
    assert "nccl.watchdog_timeout" not in {c.rule for c in first.root_causes}
    assert (first.profile.type, first.profile.stage) == ("communication", "startup")
    assert "nccl.watchdog_first_collective" not in {c.rule for c in later.root_causes}
    assert any(c.rule == "nccl.watchdog_timeout" for c in later.root_causes)
    assert later.profile.type == "hang"


# --- failures produced for real: torch.distributed on the CPU (gloo) --------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env() -> dict[str, str]:
    drop = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONWARNINGS"] = "ignore"
    return env


def test_env_rendezvous_started_without_a_launcher_is_the_launch_configuration(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    code = "import torch.distributed as dist\ndist.init_process_group('gloo', init_method='env://')\n"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(), cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0 and "expected, but not set" in proc.stderr, proc.stderr[-2000:]
    diag = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    assert any(c.rule == "dist.env_rendezvous_unlaunched" for c in diag.root_causes)
    assert diag.root_causes[0].category == "config"
    assert diag.root_causes[0].fix  # fix mode can still set the variable for a one-process run


MISMATCH = """
import sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if sys.argv[1] == "shapes":
    dist.all_reduce(torch.ones(3 + rank))
elif rank == 0:
    dist.all_reduce(torch.ones(3))
else:
    dist.broadcast(torch.ones(3), 0)
dist.destroy_process_group()
"""


@pytest.mark.parametrize(
    ("mode", "rule", "first"),
    [
        ("shapes", "dist.mismatched_collective_shapes", "dataset"),
        ("ops", "dist.mismatched_collective_ops", "model"),
    ],
)
def test_torch_distributed_debug_tells_a_data_mismatch_from_a_code_mismatch(
    tmp_path: Path, mode: str, rule: str, first: str
) -> None:
    pytest.importorskip("torch.distributed")
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH)
    env = _clean_env() | {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={_free_port()}"]
    proc = subprocess.run([*cmd, str(script), mode], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Collectives differ in the following aspects" in out, out[-3000:]
    diag = diagnose(texts={"stderr": out}, exit_code=proc.returncode)
    assert any(c.rule == rule for c in diag.root_causes), [(c.rule, c.category) for c in diag.root_causes[:5]]
    assert diag.root_causes[0].category == first, [(c.rule, c.category) for c in diag.root_causes[:3]]
    assert diag.profile.type == "communication"
