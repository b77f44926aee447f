"""torch.distributed's own message families (the kdist section of 20-distributed.toml).

Each rule was harvested from torch 2.13's own sources (distributed_c10d.py, ProcessGroupGloo's argument
checks, DTensor's dispatch and sharding propagation, DCP's default planner, FSDP1/FSDP2, c10d's TCPStore
client and torchelastic's c10d rendezvous backend) and is shown by output produced for real on a CPU machine
with gloo: the code and the command of every log are kept in tests/data/kb/dist_messages/labels.json. A few
entries show families earlier packs already know (DDP's unused parameters, a missing process group, a backend
the build lacks, DDP's device_ids on a CPU module). When torch is importable, one failure is also produced live.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids
from tests.kb.kb_helpers import check_labelled_log, check_text_alone

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "dist_messages"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "20-distributed.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
KDIST = {
    "c10d.collective_arguments",
    "dtensor.mixed_tensor_types",
    "dtensor.op_without_sharding_strategy",
    "dcp.load_state_mismatch",
    "c10d.rank_not_in_group",
    "fsdp.non_uniform_params",
    "c10d.tcpstore_ping_mismatch",
    "elastic.rdzv_store_connection",
    "c10d.store_wait_timeout",
}


def test_the_rules_load_and_no_other_pack_has_them():
    assert {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]} >= KDIST
    assert loaded_rule_ids() >= KDIST
    for pack in PACK.parent.glob("*.toml"):
        if pack != PACK:
            assert not KDIST & {r["id"] for r in tomllib.loads(pack.read_text()).get("rule", [])}, pack.name


def test_every_rule_has_a_real_log():
    assert KDIST <= {lab["rule"] for lab in LABELS}


def test_the_logs_name_no_machine_path():
    for log in DATA.glob("*.log"):
        text = log.read_text()
        assert "/work/" not in text and "/root/" not in text, log.name


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: f"{lab['log'][:-4]}-{lab['rule']}")
def test_it_diagnoses_the_real_log(label):
    check_labelled_log(DATA, label)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: f"{lab['log'][:-4]}-{lab['rule']}")
def test_it_diagnoses_the_real_log_from_its_text_alone(label):
    check_text_alone(DATA, label)


def test_the_collective_check_is_the_program_s_call_and_names_the_world_size_as_the_alternative():
    diag = diagnose([str(DATA / "allgather_list_size.log")], exit_code=1)
    mine = [c for c in diag.root_causes if c.rule == "c10d.collective_arguments"]
    assert [c.category for c in mine][:2] == ["model", "config"]
    assert "dist.peer_closed" != diag.root_causes[0].rule


def test_an_fsdp2_assertion_is_not_read_as_a_test_s_assert():
    diag = diagnose([str(DATA / "fsdp2_mixed_dtype.log")], exit_code=1)
    assert diag.root_causes[0].rule == "fsdp.non_uniform_params"
    assert diag.profile.stage == "startup"


def test_a_live_dcp_load_into_another_model(tmp_path):
    pytest.importorskip("torch.distributed.checkpoint")
    label = next(lab for lab in LABELS if lab["log"] == "dcp_missing_key.log")
    script = tmp_path / "dcp_missing_key.py"
    script.write_text(label["code"])
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode != 0
    log = tmp_path / "run.log"
    log.write_text(run.stdout + run.stderr)
    diag = diagnose([str(log)], exit_code=run.returncode)
    assert (diag.root_causes[0].rule, diag.root_causes[0].category) == ("dcp.load_state_mismatch", "checkpoint")
