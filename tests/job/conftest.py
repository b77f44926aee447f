"""Helpers for the multi-node tests: real `faildiag run --job-dir` processes standing in for nodes.

Each stand-in node is its own process group (``start_new_session``), with its own node name, writing into
one shared job folder at the same time as the others. A node's "clock skew" is what a real multi-host job
shows: the stand-in ranks stamp their log lines with their host's wrong clock, as glog and Python logging
would on a host whose clock is off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# A stand-in node: prints its ranks' lines at the right true moments, stamped with a skewed clock.
# ROLE=oom: its rank RANK_BAD hits a CUDA OOM at T_FAIL; every other rank of every node times out in the
# next collective (SeqNum 42) 2 s after entering it; ROLE=late: additionally logs a late, non-symptom error.
STANDIN = textwrap.dedent("""\
    import os, sys, time
    skew = float(os.environ["SKEW"]); t_fail = float(os.environ["T_FAIL"])
    ranks = [int(r) for r in os.environ["RANKS"].split(",")]
    role = os.environ.get("ROLE", "")
    bad = int(os.environ.get("RANK_BAD", "-1"))

    def at(true_t):
        time.sleep(max(0.0, true_t - time.time()))

    def glog(t):
        t += skew
        return time.strftime("%m%d %H:%M:%S", time.localtime(t)) + f".{int((t % 1) * 1e6):06d}"

    def iso(t):
        t += skew
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f",{int((t % 1) * 1000):03d}"

    def say(rank, text):
        print(f"[rank{rank}]:{text}", file=sys.stderr, flush=True)

    for r in ranks:
        say(r, f"{iso(time.time())} INFO train: step 40 loss=2.31")
    if bad in ranks:
        at(t_fail)
        say(bad, f"{iso(t_fail)} ERROR train: step 41 failed")
        say(bad, "Traceback (most recent call last):")
        say(bad, '  File "train.py", line 88, in <module>')
        say(bad, "    loss = model(batch).sum()")
        say(bad, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 3 has a total capacity "
                 "of 79.10 GiB of which 1.20 GiB is free.")
    entered = t_fail + 0.2
    at(entered + 2.0)
    for r in ranks:
        if r == bad:
            continue
        say(r, f"[E{glog(entered + 2.003)} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation "
               "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=2000) "
               "ran for 2003 milliseconds before timing out.")
    if role == "late":
        at(t_fail + 3.0)
        r = ranks[-1]
        say(r, f"{iso(t_fail + 3.0)} ERROR train: emergency checkpoint failed")
        say(r, "OSError: [Errno 28] No space left on device: '/ckpt/emergency.pt'")
    sys.exit(1)
""")


def faildiag(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest_faildiag.cli", *args]


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    p = tmp_path / "standin.py"
    p.write_text(STANDIN)
    return p


def start_node(job_dir: Path, name: str | None, cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """`faildiag run --job-dir DIR --node NAME -- CMD` in its own session (a process group of its own)."""
    node = ["--node", name] if name else []
    return subprocess.Popen(
        faildiag("run", "--quiet", "--job-dir", str(job_dir), *node, "--", *cmd),
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def diagnose_job(job_dir: Path, out: Path) -> dict:
    cp = subprocess.run(
        faildiag("diagnose", str(job_dir), "--out", str(out), "--format", "json"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cp.returncode == 0, cp.stderr
    rep = json.loads(cp.stdout)
    assert json.loads((out / "report.json").read_text()) == rep
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[2] / "pytest_faildiag" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(rep, schema)  # the merged report keeps the contract (nodes, first_failure.host/rank)
    return rep


class Kit:
    """The helpers above, handed to tests as the ``kit`` fixture."""

    faildiag = staticmethod(faildiag)
    start_node = staticmethod(start_node)
    diagnose_job = staticmethod(diagnose_job)


@pytest.fixture
def kit() -> type[Kit]:
    return Kit
