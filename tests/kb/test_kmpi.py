"""The MPI launcher catalogue (24-mpi-launcher-catalogue.toml): what Open MPI's mpirun prints itself when a job
cannot start (run as root, more processes than slots, a program it cannot find, a daemon that does not come up
on a node) or a rank dies. Real Open MPI 5.0 output produced on a CPU machine (tests/data/kb/kmpi, each case
in labels.json), the ORTE wording of Open MPI 4 on a train log of the thread corpus, and controls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    check_labelled_log,
    own_pack_ids,
    top3,
    train_log_with_rules,
)

PACK = "24-mpi-launcher-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kmpi"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]


def test_the_pack_loads_and_its_rules_are_its_own():
    ids = own_pack_ids(PACK)
    produced = {label["rule"] for label in LABELS}
    assert ids - produced == {"mpi.rank_signal"}  # shown below, beside the signal rules that lead
    assert "mpi.rank_exited_nonzero" not in ids  # a rank's failure report names no cause: its own output does


@pytest.mark.parametrize("label", LABELS, ids=[label["log"] for label in LABELS])
def test_each_real_open_mpi_failure_reads_as_its_case(label):
    check_labelled_log(DATA, label)


@pytest.mark.parametrize(("log", "code"), [("kill.log", 137), ("segv.log", 139)])
def test_a_rank_that_died_from_a_signal_is_a_crash_and_the_signal_names_why(log, code):
    """PRRTE wraps "exited on" / "signal 9 (Killed)." over two lines: the launcher's line says a rank died (the
    contract's crash, not a run stopped from outside), the signal's line says how (the OOM killer or a limit for
    SIGKILL, native code for SIGSEGV)."""
    diag = diagnose([str(DATA / log)], exit_code=code)
    assert diag.profile.type == "crash"
    assert any(c.rule == "mpi.rank_signal" for c in diag.root_causes)
    assert "rank 1 on vm" in next(c.summary for c in diag.root_causes if c.rule == "mpi.rank_signal")


def test_the_launchers_help_text_with_its_trailing_nul_is_read_as_a_log():
    """PRRTE ends each help message with the C string's NUL: one NUL does not make the log binary."""
    assert (DATA / "slots.log").read_bytes().count(0) == 1
    diag = diagnose([str(DATA / "slots.log")], exit_code=1)
    assert diag.root_causes[0].rule == "mpi.not_enough_slots"
    assert "(64)" in diag.root_causes[0].summary


def test_an_unresolvable_node_is_the_host_name_not_the_daemon():
    """ssh names why the daemon never started: the daemon's report yields to it."""
    diag = diagnose([str(DATA / "daemon.log")], exit_code=255)
    assert all(c.rule != "mpi.daemon_start_failed" for c in diag.root_causes)


def test_train_log_open_mpi_4_refusing_root_is_the_command_line():
    """Open MPI 4's ORTE says it in the same words from "mpirun"; before this pack the refusal, with no error
    class and no exit status, read as a hang of the program."""
    diag, label = train_log_with_rules("distributed/fedml_mpirun_refuses_root_without_allow_run_as_root")
    assert diag.root_causes[0].rule == "mpi.run_as_root"
    assert top3(diag)[0] == label["category"] == "config"
    assert (diag.profile.type, diag.profile.stage) == (label["type"], label["stage"]) == ("runtime_error", "startup")


def test_a_rank_that_exits_non_zero_after_its_own_traceback_is_its_traceback():
    """The launcher's "exited with non-zero status" names no cause: a rank's own error above it decides."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 3, in <module>\n'
        "    import horovod.torch as hvd\n"
        "ModuleNotFoundError: No module named 'horovod'\n" + (DATA / "exit.log").read_text()
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert diag.root_causes[0].rule == "py.module_not_found"
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "startup")
