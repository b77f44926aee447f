"""Distributed launchers and collective libraries: where each message says the cause lives (kdist6, round 6).

Pack 22-distributed-ownership.toml (c10d's monitored barrier, torchelastic's agent signal, DeepSpeed's launcher,
Horovod) and one fact in 20-distributed.toml (Gloo's wait under a monitored barrier is the barrier's report, so
gloo.timeout is silenced by it). Real runs under
tests/data/kb/kdist6/r6 (README: library, version, command), and train logs of the thread corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, pack_rules, top3, train_log_path

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kdist6" / "r6"

# log -> (type, stage, first cause's rule, first cause's category)
REAL = {
    "port_in_use.log": ("communication", "startup", "dist.address_in_use", "config"),
    "monitored_barrier.log": ("hang", "runtime", "c10d.monitored_barrier_rank_missing", "model"),
    "monitored_barrier_all.log": ("hang", "runtime", "c10d.monitored_barrier_rank_missing", "model"),
    "monitored_rank0_died.log": ("communication", "runtime", "c10d.monitored_barrier_rank0_failed", "communication"),
    "agent_sigterm.log": ("crash", "runtime", "elastic.agent_signal", "harness"),
    "ds_hostfile_bad_entry.log": ("runtime_error", "startup", "deepspeed.hostfile_format", "config"),
    "ds_hostfile_duplicate.log": ("runtime_error", "startup", "deepspeed.hostfile_format", "config"),
    "ds_include_unknown_host.log": ("runtime_error", "startup", "deepspeed.resource_selection", "config"),
    "ds_num_nodes_without_hostfile.log": ("runtime_error", "startup", "deepspeed.resource_selection", "config"),
    "ds_ssh_unreachable.log": ("runtime_error", "startup", "deepspeed.ssh_unreachable", "environment"),
    "ds_pdsh_missing.log": ("runtime_error", "startup", "deepspeed.launcher_backend_missing", "environment"),
    "hvd_extension_not_built.log": ("runtime_error", "startup", "horovod.extension_not_built", "environment"),
    "jax_incarnation_coordinator.log": ("crash", "runtime", "jaxdist.task_new_incarnation", "model"),
    "jax_incarnation_task.log": ("crash", "runtime", "jaxdist.task_new_incarnation", "model"),
    "jax_heartbeat_coordinator.log": ("crash", "runtime", "jaxdist.task_stopped_heartbeats", "communication"),
    "gloo_eval_barrier_timeout.log": ("communication", "evaluation", "gloo.timeout", "config"),
    "gloo_save_barrier_timeout.log": ("communication", "checkpoint", "gloo.timeout", "config"),
}
# the jax.distributed runs ended on SIGABRT (134): every task's agent terminates its process with LOG(FATAL)
EXIT = {"jax_incarnation_coordinator.log": 134, "jax_incarnation_task.log": 134, "jax_heartbeat_coordinator.log": 134}


@pytest.mark.parametrize("log", sorted(REAL))
def test_real_runs(log: str) -> None:
    typ, stage, rule, category = REAL[log]
    diag = diagnose([str(DATA / log)], exit_code=EXIT.get(log, 1))
    top = diag.root_causes[0]
    assert (diag.profile.type, diag.profile.stage) == (typ, stage), (diag.profile.type, diag.profile.stage)
    assert (top.rule, top.category) == (rule, category), [(c.rule, c.category) for c in diag.root_causes[:4]]
    assert top.fix_hints


def test_monitored_barrier_is_not_read_as_a_gloo_transport_timeout() -> None:
    """Rank 0's report carries Gloo's wait as its 'Original exception': the named rank's work leads, and the
    transport reading (gloo.timeout's communication and network causes) is silenced."""
    diag = diagnose([str(DATA / "monitored_barrier.log")], exit_code=1)
    assert not fired(diag, "gloo.timeout")
    assert top3(diag)[0] == "model"
    assert "communication" in top3(diag)  # the named rank may have died: kept as a competitor
    assert "Rank 1" in diag.root_causes[0].summary


def test_a_collective_wait_is_placed_in_the_work_that_issued_it() -> None:
    """A barrier inside evaluate()/save_checkpoint() that times out while rank 0 alone evaluates/saves: the stage is
    that work and the timeout against it leads (collective:wait_in_rank_work); the same barrier at the top level of
    the program keeps the transport reading and the runtime stage."""
    for log in ("gloo_eval_barrier_timeout.log", "gloo_save_barrier_timeout.log"):
        diag = diagnose([str(DATA / log)], exit_code=1)
        top = diag.root_causes[0]
        assert top.id == "config.timeout_too_short", [(c.id, c.confidence) for c in diag.root_causes[:3]]
        assert "context:collective:wait_in_rank_work" in {v.name for v in top.validation_checks}
    plain = diagnose([str(DATA / "monitored_barrier.log")], exit_code=1)
    assert plain.profile.stage == "runtime"
    assert "context:collective:wait_in_rank_work" not in {
        v.name for c in plain.root_causes for v in c.validation_checks
    }


def test_agent_signal_names_the_signal() -> None:
    diag = diagnose([str(DATA / "agent_sigterm.log")], exit_code=1)
    top = diag.root_causes[0]
    assert "signal 15" in top.summary
    assert top3(diag)[:2] == ["harness", "resource"]


def test_the_missing_hostfile_warning_alone_is_not_a_failure() -> None:
    text = (
        "[2026-12-02 07:29:59,858] [WARNING] [runner.py:215:fetch_hostfile] Unable to find hostfile, will proceed "
        "with training with local resources only.\nhi\n"
    )
    assert not fired(diagnose(texts={"stdout": text}, exit_code=0), "deepspeed.hostfile_missing")


# --- train logs of the thread corpus ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "distributed/mace_torchrun_double_launch_port_in_use",
        "distributed/opennmt_two_jobs_same_master_port_address_in_use",
    ],
)
def test_port_in_use_is_the_launch_settings(name: str) -> None:
    """torchrun's second launch on a held port (real: port_in_use.log) and two train threads: the port's owner."""
    diag = diagnose([str(train_log_path(name))])
    assert fired(diag, "dist.address_in_use")
    assert diag.root_causes[0].category == "config", top3(diag)


def test_jax_task_reconnecting_is_the_program_that_reinitializes() -> None:
    """Grain's workers re-ran an import-time jax.distributed.initialize (train thread; real: jax_incarnation_*.log):
    the coordination service's words name the cause, the deliberate abort and its generic readings step aside."""
    diag = diagnose([str(train_log_path("distributed/grain_workers_reinit_jax_distributed_incarnation"))])
    assert diag.profile.type == "crash"
    assert diag.root_causes[0].rule == "jaxdist.task_new_incarnation"
    assert top3(diag)[0] == "model", top3(diag)
    for gone in ("jax.cat.coordination_service", "glog.check_failed"):
        assert not fired(diag, gone)


def test_the_abort_status_yields_to_the_named_error() -> None:
    diag = diagnose([str(DATA / "jax_incarnation_task.log")], exit_code=134)
    assert not fired(diag, "proc.sigabrt")
    # without the coordination service's words the abort status keeps its own reading
    bare = diagnose(texts={"stderr": "Aborted (core dumped)\n"}, exit_code=134)
    assert fired(bare, "proc.sigabrt")


def test_deepspeed_without_hostfile_offers_the_hostfile_and_the_wrapper() -> None:
    diag = diagnose([str(train_log_path("distributed/gptneox_multinode_hostfile_not_passed_to_deepspeed"))])
    assert fired(diag, "deepspeed.hostfile_missing")
    assert {"config", "library"} <= set(top3(diag)), top3(diag)


# --- Horovod's own messages (horovod 0.28.1, horovod/common/common.h, controller.cc, stall_inspector.cc) ----------
# Horovod needs a compiled build to print these; the texts are the source's, assembled as the C++ prints them.
HOROVOD = {
    "Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to allreduce, "
    "allgather or broadcast a tensor after one of the ranks finished execution. If the shutdown was caused by an "
    "exception, you should see the exception in the log before the first shutdown message.": "horovod.shut_down",
    "Mismatched ALLREDUCE tensor shapes: One rank sent a tensor of shape [32, 10], but another rank sent a tensor "
    "of shape [17, 10].": "horovod.mismatched_request",
    "Mismatched data types: One rank had type float32, but another rank had type float64.": "horovod.mismatched_request",
    "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting "
    "for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit "
    "different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.": "horovod.stall",
    "ValueError: Horovod has not been initialized; use hvd.init().": "horovod.not_initialized",
}


@pytest.mark.parametrize("text", sorted(HOROVOD))
def test_horovod_catalogue(text: str) -> None:
    diag = diagnose(texts={"stderr": text + "\n"}, exit_code=1)
    assert fired(diag, HOROVOD[text]), [c.rule for c in diag.root_causes]


def test_the_pack_loads() -> None:
    ids = {r.id for r in pack_rules("22-distributed-ownership.toml")}
    assert {"c10d.monitored_barrier_rank_missing", "elastic.agent_signal", "deepspeed.hostfile_format"} <= ids
