"""Where a distributed failure lives when no rule knows its message (issue 13, kdist4).

- ``collective:timeout_after_progress``: ProcessGroupNCCL's (and ProcessGroupHCCL's) watchdog reports a collective
  that timed out with its sequence number (``WorkNCCL(SeqNum=N``) and the group's progress (``last completed NCCL
  work: M``). A later collective timing out follows collectives that went through: the installation and the launch
  worked, and most often one rank did not reach the collective in time (its data ran out, its code or a framework's
  own checkpoint/evaluation collectives diverged or outlasted the timeout). The data, the libraries and the program's
  code lead; the installation and the device runtime recede. The collective layer keeps its weight (a link stalling
  mid-run, a kernel ahead of the collective on its stream: the kb's watchdog fixtures and the GPU corpus's
  ``nccl_watchdog_timeout`` keep it first). The first collective (SeqNum 1) is not read: nothing ever went through
  that communicator.
- ``cue:nccl_syscall``: NCCL's WARN for a system call the operating system refused (SYSCHECK's "Call to <call>
  failed", a shared-memory segment it could not create, a socket it could not create): the machine's resources or
  the container's namespaces, not the connection between the ranks (refuted).

Each train log is diagnosed as ``bench/confusion.py`` does: with every rule, and with the findings of the rules
whose causes that diagnosis listed dropped (``--without-rules``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import LOG_RESOURCE_LINES, Facts, _collective_progress
from pytest_faildiag.parse.scan import ScanResult, scan_text
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import (
    context_checks,
    context_facts,
    top3,
    train_log_path,
    train_log_with_rules,
    train_log_without_rules,
)

AFTER = "collective:timeout_after_progress"
TIMEOUTS = {  # a later collective timed out: the label's home, confirmed in each thread
    "distributed/dist_pr6_allgather_watchdog_timeout_checkpoint_consolidation_barrier_automodel": "library",
    "distributed/gc2_lm_eval_multi_gpu_eval_nccl_watchdog_timeout_default_30min": "library",
    "distributed/pt_iterabledataset_unequal_len_nccl_timeout": "dataset",
}
FIRST = "distributed/vllm_tp2_driver545_allreduce_timeout"  # SeqNum=1: the first collective never completed
SHM = "distributed/dist_xgboost_mgpu_tests_nccl_shm_posix_fallocate_docker_64m_shm"


def _lines(name: str) -> Facts:
    """The head of the log's error lines as the real scanner flags them (what ``gather_facts`` reads)."""
    scan = ScanResult()
    scan_text(train_log_path(name).read_text(), "log", load_ruleset(), scan)
    return Facts(error_head="\n".join(t for _src, _ln, t in scan.error_lines[:LOG_RESOURCE_LINES]))


@pytest.mark.parametrize("name", sorted(TIMEOUTS))
def test_the_watchdog_report_of_a_later_collective_is_read(name: str) -> None:
    assert _collective_progress(_lines(name), load_ruleset().reasoning) == AFTER


def test_the_first_collective_is_not_a_timeout_after_progress() -> None:
    assert _collective_progress(_lines(FIRST), load_ruleset().reasoning) is None
    line = "[Rank 0] Timeout at NCCL work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1."
    assert _collective_progress(Facts(error_head=line), load_ruleset().reasoning) is None


@pytest.mark.parametrize("name", sorted(TIMEOUTS))
def test_without_rules_a_later_collective_timeout_is_a_rank_that_did_not_arrive(name: str) -> None:
    diag, label = train_log_without_rules(name)
    assert label["category"] == TIMEOUTS[name]
    cats = top3(diag)
    assert AFTER in context_facts(diag)
    assert "environment" not in cats, cats  # the installation recedes: the communicator carried the earlier ones
    assert TIMEOUTS[name] in cats, cats
    if TIMEOUTS[name] == "library":  # a framework's own collectives (checkpoint consolidation, evaluation)
        assert cats[0] == "library", cats


@pytest.mark.parametrize("name", sorted(TIMEOUTS))
def test_with_rules_the_watchdog_rule_reads_the_ranks_before_the_network(name: str) -> None:
    diag, label = train_log_with_rules(name)
    assert label["category"] in top3(diag)
    assert f"context:{AFTER}" not in context_checks(diag, "communication")
    assert context_checks(diag, "dataset")[f"context:{AFTER}"] == "passed"
    assert context_checks(diag, "library")[f"context:{AFTER}"] == "passed"


def test_with_rules_the_first_collective_stays_the_device_runtime() -> None:
    diag, label = train_log_with_rules(FIRST)
    assert AFTER not in context_facts(diag)
    assert top3(diag)[0] == label["category"] == "backend"


def test_without_rules_nccl_refused_a_system_call_is_the_machine() -> None:
    diag, label = train_log_without_rules(SHM)
    assert label["category"] == "resource"
    assert "cue:nccl_syscall" in context_facts(diag)
    assert top3(diag)[0] == "resource", top3(diag)
    diag, _label = train_log_with_rules(SHM)
    assert top3(diag)[0] == "resource"
    assert "communication" not in top3(diag)


def test_a_kernel_ahead_of_the_collective_keeps_the_collective_layer_first() -> None:
    """The GPU corpus's real single-rank watchdog timeout (a kernel that never finishes ahead of the all_reduce, the
    flight recorder's dump beside it): the fact holds (SeqNum 2 after a warm-up collective) and leaves the collective
    layer's weight alone, so the flight recorder's checks keep the labelled collective layer first."""
    case = Path(__file__).resolve().parents[1] / "data" / "corpus" / "gpu" / "nccl_watchdog_timeout"
    evidence = [str(case / "stderr.txt"), str(case / "stdout.txt"), *map(str, sorted(case.glob("*.pkl")))]
    diag = diagnose(evidence, exit_code=int((case / "rc.txt").read_text()))
    assert AFTER in context_facts(diag)
    assert top3(diag)[0] == "communication", top3(diag)
