"""What each node learns from its launcher's environment and command, and how it reads log times."""

from __future__ import annotations

import re
import time
from pathlib import Path

import torch.distributed.elastic.rendezvous.c10d_rendezvous_backend as backend

from pytest_faildiag.job.node import expand_hostlist, launcher_facts, safe_name
from pytest_faildiag.job.ranks import is_symptom
from pytest_faildiag.job.timeparse import parse_line_time


def test_slurm_host_lists_expand_like_scontrol_show_hostnames():
    assert expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand_hostlist("rack[1-2]-n[8-9]") == ["rack1-n8", "rack1-n9", "rack2-n8", "rack2-n9"]
    assert expand_hostlist("single") == ["single"]


def test_the_expected_node_set_comes_from_the_launcher():
    slurm = launcher_facts(
        ["python", "train.py"],
        {"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "n[1-4]", "SLURM_NNODES": "4", "SLURM_NODEID": "2"},
    )
    assert (slurm.job_id, slurm.nodes, slurm.names, slurm.node_rank) == ("77", 4, ["n1", "n2", "n3", "n4"], 2)
    ompi = launcher_facts(
        ["python", "train.py"],
        {"OMPI_COMM_WORLD_SIZE": "64", "OMPI_COMM_WORLD_LOCAL_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "3"},
    )
    assert (ompi.nodes, ompi.writers_per_node, ompi.local_index) == (8, 8, 3)
    tr = launcher_facts(
        ["torchrun", "--nnodes=2:6", "--node_rank", "1", "--rdzv_id=abc", "train.py", "--nnodes", "9"], {}
    )
    assert (tr.launcher, tr.nodes, tr.node_rank, tr.job_id) == (
        "torchrun",
        6,
        1,
        "abc",
    )  # the script's args are its own
    ms = launcher_facts(["msrun", "--worker_num=32", "--local_worker_num=8", "--node_rank=3", "train.py"], {})
    assert (ms.launcher, ms.nodes, ms.node_rank) == ("msrun", 4, 3)
    env = launcher_facts(["python", "x.py"], {"PET_NNODES": "3", "FAILDIAG_JOB_ID": "j"})
    assert (env.nodes, env.nodes_source, env.job_id) == (3, "PET_NNODES", "j")


def test_a_node_name_is_one_folder_name():
    assert safe_name("../../etc") == "etc"
    assert safe_name("gpu01.cluster/x") == "gpu01.cluster_x"


def test_log_times_become_epoch_seconds_on_the_host_that_wrote_them():
    ref = time.mktime((2026, 1, 1, 0, 0, 30, 0, 0, -1))
    # a glog line from 31 December read just after New Year belongs to the old year
    assert parse_line_time("E1231 23:59:50.500000 123 x.cpp:1] boom", ref) == ref - 40 + 0.5
    assert parse_line_time("2026-01-01 00:00:10,250 ERROR x", ref) == ref - 20 + 0.25
    assert parse_line_time("2026-01-01T00:00:00.000000+00:00 kernel: x", ref) == 1767225600.0
    assert parse_line_time("time      : 2026-01-01_00:00:29", ref) == ref - 1
    assert parse_line_time("no time here", ref) is None


def test_a_rendezvous_store_gone_is_a_symptom_in_a_job_whose_peer_failed():
    """torchelastic's agent raises RendezvousConnectionError when the store, held by another node's agent that
    exited after its worker failed, is gone: whichever agent held the store decides which node prints it, so
    the merge must read it as the peer's cascade (seen on a fresh machine in test_job_torchrun)."""
    source = Path(backend.__file__).read_text()
    message = re.search(r'"(The connection to the C10d store has failed[^"]*)"', source)
    assert message, "torch's c10d rendezvous backend wording moved"
    raised = f"torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: {message.group(1)}"
    assert is_symptom(raised)
    assert not is_symptom("ValueError: bad batch shape")
