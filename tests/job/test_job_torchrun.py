"""A real `torchrun --nnodes=2` pair of launchers on this machine (c10d rendezvous, gloo), each wrapped in
`faildiag run --job-dir` with its own node name: the merged diagnosis names the host and rank that raised."""

from __future__ import annotations

import json
import socket
import sys

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch.distributed")

SCRIPT = """\
import os
from datetime import timedelta
import torch
import torch.distributed as dist
dist.init_process_group("gloo", timeout=timedelta(seconds=20))
t = torch.ones(4)
dist.all_reduce(t)
if os.environ["STANDIN_NODE"] == "hostB":
    with open(os.environ["RAISED_FILE"], "w") as f:
        f.write(str(dist.get_rank()))
    raise ValueError("bad batch shape on this rank: expected 4 got 5")
dist.all_reduce(t)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_merged_diagnosis_names_the_host_and_rank_that_raised(kit, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    job = tmp_path / "job"
    raised = tmp_path / "raised_rank"
    port = free_port()
    procs = []
    for node_rank, name in enumerate(["hostA", "hostB"]):
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes=2",
            f"--node_rank={node_rank}",
            "--nproc_per_node=1",
            "--rdzv_backend=c10d",
            f"--rdzv_endpoint=localhost:{port}",
            "--rdzv_id=pair1",
            str(script),
        ]
        procs.append(kit.start_node(job, name, cmd, {"STANDIN_NODE": name, "RAISED_FILE": str(raised)}, tmp_path))
    codes = [p.wait(timeout=240) for p in procs]
    assert codes == [1, 1], [p.stderr.read().decode()[-2000:] for p in procs]
    rank = raised.read_text()
    rep = kit.diagnose_job(job, tmp_path / "merged")
    first = rep["profile"]["first_failure"]
    assert first["host"] == "hostB" and first["rank"] == rank, json.dumps(rep["nodes"], indent=1)
    assert "ValueError: bad batch shape" in first["excerpt"]
    assert rep["profile"]["type"] == "runtime_error"
    nodes = {n["name"]: n for n in rep["nodes"]}
    assert nodes["hostA"]["status"] == "failed" and nodes["hostA"]["summary"].startswith(
        "symptom"
    )  # its peer went away
    assert rep["job"]["id"] == "pair1" and rep["job"]["expected_nodes"] == 2
    assert not [n for n in rep["nodes"] if n["status"] == "missing"]
