"""Distributed launch and communication without a signature (issue 13, kdist6).

- ``cue:loopback_peer`` (rules/05-reasoning.toml, read in the error lines and the logs' last lines by
  ``_cue_in`` over ``_error_lines_and_tails``): a connection naming a loopback address other than 127.0.0.1
  (Debian/Ubuntu resolve the host name to 127.0.1.1): the other machines cannot reach it, so the connection between the ranks (its name
  resolution, the interface choice) leads; a library's defect and the device runtime recede.
- ``cue:bind_refused``: EADDRINUSE is the operating system refusing bind(); the library that raised it relays it.
- ``gloo.connect_full_mesh`` (20-distributed.toml): Gloo could not connect the ranks' pairs while the process group
  was built: start-up, the connection between the ranks first.
- Catalogue entries of torch's own messages (20-distributed.toml, kdist6): the DDP/DataParallel wrapper asked for
  the wrapped model's attribute, a DeviceMesh larger than the world, DistributedSampler's rank check.

Train logs are diagnosed as ``bench/confusion.py`` does (every rule, and the explaining rules left out); the real
runs under tests/data/kb/kdist6 were produced here with torch's CPU wheel and gloo (labels.json says how).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import (
    context_checks,
    context_facts,
    fired,
    run_failing,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kdist6"
LABELS = {e["log"]: e for e in json.loads((DATA / "labels.json").read_text())["logs"]}
LOOPBACK = "distributed/gloo_connect_loopback_127_0_1_1_refused"
PORT = "distributed/opennmt_two_jobs_same_master_port_address_in_use"


def _real(log: str):
    label = LABELS[log]
    return diagnose([str(DATA / log)], exit_code=label["exit_code"], command=label["command"]), label


def _pattern(fact: str):
    return next(c.pattern for c in load_ruleset().reasoning.contexts if c.fact == fact)


# --- the loopback address ------------------------------------------------------------------------------------


def test_a_loopback_peer_other_than_127_0_0_1_is_read_and_127_0_0_1_is_not() -> None:
    pat = _pattern("cue:loopback_peer")
    assert pat.search("connect [127.0.1.1]:3210: Connection refused")
    assert pat.search("trying to connect to (127.0.1.1, 29733)")
    assert pat.search("NET/Socket : Connect to 127.1.2.3<41873> failed")
    assert not pat.search("connect [127.0.0.1]:29500: Connection refused")  # a single machine's own run
    assert not pat.search("connect [10.127.0.1]:29500")  # not a loopback address
    assert not pat.search("version 2.127.0.11")


def test_the_loopback_train_log_leads_with_the_connection_without_its_rules() -> None:
    diag, label = train_log_without_rules(LOOPBACK)
    assert label["category"] == "communication"
    assert diag.root_causes[0].category == "communication", top3(diag)
    assert context_checks(diag, "communication").get("context:cue:loopback_peer") == "passed"
    assert context_checks(diag, "library").get("context:cue:loopback_peer") == "failed"


def test_the_loopback_train_log_with_every_rule() -> None:
    diag, label = train_log_with_rules(LOOPBACK)
    assert fired(diag, "gloo.connect_full_mesh")
    assert diag.root_causes[0].category == label["category"] == "communication", top3(diag)
    assert diag.profile.type == label["type"] == "crash"  # the abort types it; the Gloo rule names no type
    assert diag.profile.stage == label["stage"] == "startup"
    assert "cue:loopback_peer" in context_facts(diag)


def test_a_real_gloo_mesh_that_could_not_connect_to_a_peer_on_127_0_1_1() -> None:
    diag, label = _real("mesh.log")
    assert fired(diag, label["rule"])
    assert diag.profile.type == label["type"]
    assert diag.profile.stage == label["stage"]  # connectFullMesh runs while the group is built, not a collective
    assert diag.root_causes[0].category == label["category"], top3(diag)
    assert "cue:loopback_peer" in context_facts(diag)


def test_a_real_store_connection_to_127_0_1_1() -> None:
    diag, label = _real("store_loopback.log")
    assert fired(diag, label["rule"])
    assert diag.profile.type == label["type"]
    assert diag.root_causes[0].category == label["category"], top3(diag)
    assert context_checks(diag, "communication").get("context:cue:loopback_peer") == "passed"


# --- the port in use -----------------------------------------------------------------------------------------


def test_a_port_in_use_raised_by_a_library_does_not_lead_with_the_library() -> None:
    diag, label = train_log_without_rules(PORT)
    assert diag.root_causes[0].category == label["category"] == "config", top3(diag)
    assert context_checks(diag, "library").get("context:cue:bind_refused") == "failed"
    with_rules, _ = train_log_with_rules(PORT)
    assert with_rules.root_causes[0].category == "config", top3(with_rules)


def test_a_real_port_in_use() -> None:
    diag, label = _real("portinuse.log")
    assert fired(diag, label["rule"])
    assert diag.root_causes[0].category == label["category"], top3(diag)
    assert "cue:bind_refused" in context_facts(diag)


# --- catalogue entries shown by real runs --------------------------------------------------------------------


@pytest.mark.parametrize("log", ["ddpattr.log", "mesh_div.log", "sampler_rank.log"])
def test_real_runs_of_the_new_catalogue_entries(log: str) -> None:
    diag, label = _real(log)
    assert fired(diag, label["rule"])
    top = diag.root_causes[0]
    assert (top.rule, top.category) == (label["rule"], label["category"]), top3(diag)
    assert top.fix_hints
    assert diag.profile.type == label["type"]
    if "stage" in label:
        assert diag.profile.stage == label["stage"]


def test_a_real_interface_name_that_does_not_exist_is_the_settings() -> None:
    """GLOO_SOCKET_IFNAME naming an interface the machine lacks: the existing rule reads it; the setting is among
    the first two (it ties with the environment, the name's other home: a host name that does not resolve)."""
    diag, label = _real("ifname.log")
    assert fired(diag, label["rule"])
    assert label["category"] in top3(diag)[:2], top3(diag)


# --- live runs (torch on the CPU) ----------------------------------------------------------------------------


def _torch() -> None:
    pytest.importorskip("torch.distributed")


def test_live_ddp_wrapper_attribute(tmp_path: Path) -> None:
    _torch()
    init = (tmp_path / "pg").as_uri()
    diag, err = run_failing(
        tmp_path,
        f"""
        import torch, torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo", init_method={init!r}, rank=0, world_size=1)
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 2)
            def forward(self, x):
                return self.fc(x)
            def predict(self, x):
                return self(x).argmax(-1)
        DDP(Net()).predict(torch.ones(1, 4))
        """,
    )
    assert "'DistributedDataParallel' object has no attribute 'predict'" in err
    assert diag.root_causes[0].rule == "ddp.wrapper_attribute"
    assert diag.root_causes[0].category == "model"


def test_live_store_connection_to_127_0_1_1(tmp_path: Path) -> None:
    _torch()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        "import datetime, torch.distributed as dist\n"
        f"dist.TCPStore('127.0.1.1', {port}, 2, is_master=False, timeout=datetime.timedelta(seconds=2))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0 and "127.0.1.1" in p.stderr, p.stderr[-2000:]
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert diag.root_causes[0].category == "communication", top3(diag)
    assert "cue:loopback_peer" in context_facts(diag)
