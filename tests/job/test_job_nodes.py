"""Several real `faildiag run --job-dir` processes standing in for the nodes of one job."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

SLURM = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "gpu[01-04]", "SLURM_NNODES": "4"}
# host clocks: gpu02 runs 37 s ahead, gpu03 23 s behind; gpu04 never starts (lost before it could write)
NODES = {
    "gpu01": {"SKEW": "0", "RANKS": "0,1", "SLURM_NODEID": "0"},
    "gpu02": {"SKEW": "37", "RANKS": "2,3", "RANK_BAD": "3", "SLURM_NODEID": "1"},
    "gpu03": {"SKEW": "-23", "RANKS": "4,5", "ROLE": "late", "SLURM_NODEID": "2"},
}


def run_job(
    kit, tmp_path: Path, standin: Path, nodes: dict[str, dict[str, str]], slurm: dict[str, str] = SLURM
) -> Path:
    job = tmp_path / "job"
    t_fail = time.time() + 2.5  # after every stand-in has started
    procs = [
        kit.start_node(job, name, [sys.executable, str(standin)], {**slurm, **env, "T_FAIL": str(t_fail)}, tmp_path)
        for name, env in nodes.items()
    ]
    for p in procs:
        out, err = p.communicate(timeout=90)
        assert p.returncode == 1, err.decode()  # faildiag run exits with the command's status
    return job


def test_it_names_the_first_failing_host_and_rank_despite_skewed_clocks(kit, tmp_path, standin):
    job = run_job(kit, tmp_path, standin, NODES)
    assert sorted(p.name for p in (job / "nodes").iterdir() if not p.name.startswith(".")) == [
        "gpu01",
        "gpu02",
        "gpu03",
    ]
    rep = kit.diagnose_job(job, tmp_path / "merged")
    first = rep["profile"]["first_failure"]
    assert first["host"] == "gpu02" and first["rank"] == "3"
    assert "OutOfMemoryError" in first["excerpt"]
    assert rep["profile"]["type"] == "oom"
    assert "first failure on host gpu02 rank 3" in rep["summary"]
    # the skew was measured from the collective timeouts and corrected (37 s ahead, 23 s behind)
    notes = " ".join(rep["notes"])
    assert "clock of gpu02 corrected by -37" in notes and "clock of gpu03 corrected by +23" in notes
    nodes = {n["name"]: n for n in rep["nodes"]}
    assert nodes["gpu02"]["status"] == "failed" and "first failure of the job" in nodes["gpu02"]["flags"]
    # the cascade is named as such: gpu01 only timed out
    assert nodes["gpu01"]["summary"].startswith("symptom") and "Watchdog caught" in nodes["gpu01"]["summary"]
    # gpu03's late error reads 20 s before the OOM on its own clock; corrected, it comes 3 s after it
    assert "No space left" in nodes["gpu03"]["summary"]
    t = {n: nodes[n]["first_failure_time"] for n in ("gpu01", "gpu02", "gpu03")}
    assert t["gpu02"] < t["gpu01"] < t["gpu03"]
    # the node that never wrote is missing, and said to be expected from Slurm's node list
    assert nodes["gpu04"]["status"] == "missing" and "SLURM_JOB_NODELIST" in nodes["gpu04"]["summary"]
    assert rep["job"]["id"] == "4242" and rep["job"]["expected_nodes"] == 4
    top = rep["root_causes"][0]
    assert top["category"] == "resource"
    assert any("gpu02 rank 3 failed first" in e["excerpt"] for e in top["evidence"])


def test_without_correction_the_skewed_host_would_have_looked_first(kit, tmp_path, standin):
    """The same job, but gpu03's clock runs 23 s behind and no collective timeout is logged anywhere: the merge
    cannot see the skew, so it must not pretend to: it names what the clocks say and corrects nothing."""
    job = tmp_path / "job"
    nodes = {"gpu02": {**NODES["gpu02"]}, "gpu03": {**NODES["gpu03"]}}
    job = run_job(kit, tmp_path, standin, nodes)
    for folder in (job / "nodes").iterdir():
        if folder.name.startswith("."):
            continue
        rec = json.loads((folder / "node.json").read_text())
        rec["anchors"] = []
        (folder / "node.json").write_text(json.dumps(rec))
    rep = kit.diagnose_job(job, tmp_path / "merged")
    assert rep["profile"]["first_failure"]["host"] == "gpu03"  # its late error, on its slow clock
    assert not any("clock of" in n for n in rep.get("notes", []))


def test_only_symptoms_and_a_missing_node_name_the_missing_node(kit, tmp_path, standin):
    # nobody's rank raised: gpu01 and gpu03 only time out; gpu02 and gpu04 never wrote a record
    nodes = {"gpu01": NODES["gpu01"], "gpu03": {k: v for k, v in NODES["gpu03"].items() if k != "ROLE"}}
    job = run_job(kit, tmp_path, standin, nodes)
    rep = kit.diagnose_job(job, tmp_path / "merged")
    assert rep["profile"]["type"] == "crash"
    assert rep["profile"]["first_failure"]["host"] in ("gpu02", "gpu04")
    assert rep["root_causes"][0]["id"] == "hardware.node_lost"
    missing = sorted(n["name"] for n in rep["nodes"] if n["status"] == "missing")
    assert missing == ["gpu02", "gpu04"]
    assert "exclude" in " ".join(rep["next_actions"])
    table = subprocess.run(kit.faildiag("job", str(job)), capture_output=True, text=True, timeout=30)
    assert table.returncode == 0
    assert "went away without a record" in table.stdout and "missing" in table.stdout


def test_a_node_killed_mid_run_is_reported_as_started_but_never_finished(kit, tmp_path, standin):
    job = tmp_path / "job"
    p = kit.start_node(job, "gpu09", [sys.executable, "-c", "import time; time.sleep(60)"], SLURM, tmp_path)
    claim = job / "nodes" / "gpu09" / ".claim.json"
    deadline = time.time() + 30
    while not claim.exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    wrapper = psutil.Process(p.pid)
    procs = [wrapper, *wrapper.children(recursive=True)]
    for proc in procs:  # the whole node goes at once: faildiag run and its command alike
        proc.kill()
    psutil.wait_procs(procs, timeout=30)
    p.wait(timeout=30)
    table = subprocess.run(
        kit.faildiag("job", str(job), "--format", "json"), capture_output=True, text=True, timeout=30
    )
    rows = {r["name"]: r for r in json.loads(table.stdout)["nodes"]}
    assert rows["gpu09"]["status"] == "missing" and "never wrote its record" in rows["gpu09"]["summary"]
    assert {r["status"] for n, r in rows.items() if n != "gpu09"} == {"missing"}  # gpu01..04 expected, absent


def test_two_writers_claiming_one_name_are_both_kept_and_flagged(kit, tmp_path):
    job = tmp_path / "job"
    cmd = [sys.executable, "-c", "import sys, time; time.sleep(1); sys.exit(3)"]
    env = {"FAILDIAG_JOB_ID": "j7"}
    procs = [kit.start_node(job, "twin", cmd, env, tmp_path) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [3, 3]
    assert sorted(p.name for p in (job / "nodes").iterdir() if not p.name.startswith(".")) == ["twin", "twin~2"]
    rep = kit.diagnose_job(job, tmp_path / "merged")
    twins = [n for n in rep["nodes"] if n["name"] == "twin"]
    assert len(twins) == 2 and all(any("duplicate name" in f for f in n["flags"]) for n in twins)
    assert any("claim the name 'twin'" in n for n in rep["notes"])


def test_bad_records_are_reported_and_skipped_and_the_merge_goes_on(kit, tmp_path):
    job = tmp_path / "job"
    ok = kit.start_node(job, "good", [sys.executable, "-c", "raise SystemExit(2)"], {"FAILDIAG_JOB_ID": "j1"}, tmp_path)
    assert ok.wait(timeout=60) == 2
    good = json.loads((job / "nodes" / "good" / "node.json").read_text())
    nodes = job / "nodes"
    (nodes / "half").mkdir()
    text = json.dumps({**good, "name": "half"})
    (nodes / "half" / "node.json").write_text(text[: len(text) // 2])  # a writer that died mid-copy
    (nodes / "garbage").mkdir()
    (nodes / "garbage" / "node.json").write_bytes(b"\x00\xff not json")
    (nodes / "old").mkdir()
    (nodes / "old" / "node.json").write_text(json.dumps({**good, "name": "old", "schema": "faildiag.node/0"}))
    (nodes / "other").mkdir()
    (nodes / "other" / "node.json").write_text(json.dumps({**good, "name": "other", "job": {"id": "j0"}}))
    (nodes / "other2").mkdir()
    (nodes / "other2" / "node.json").write_text(json.dumps({**good, "name": "other2", "job": {"id": "j1"}}))
    rep = kit.diagnose_job(job, tmp_path / "merged")
    notes = "\n".join(rep["notes"])
    assert "half/node.json is half-written" in notes
    assert "garbage/node.json" in notes
    assert "old/node.json has schema 'faildiag.node/0'" in notes
    assert "other/node.json is from another job (id j0; this job is j1)" in notes
    status = {n["name"]: n["status"] for n in rep["nodes"]}
    assert status["good"] == "failed" and status["other2"] == "failed"
    assert status["half"] == status["old"] == status["other"] == "missing"


def test_a_node_with_a_different_environment_is_named(kit, tmp_path):
    job = tmp_path / "job"
    nodes = job / "nodes"
    p = kit.start_node(job, "n0", [sys.executable, "-c", "raise SystemExit(1)"], {"FAILDIAG_JOB_ID": "e1"}, tmp_path)
    assert p.wait(timeout=60) == 1
    base = json.loads((nodes / "n0" / "node.json").read_text())
    for i, nccl in enumerate(["2.21.5", "2.21.5", "2.18.1"], 1):
        rec = json.loads(json.dumps(base))
        rec["name"] = f"n{i}"
        rec["env"]["facts"]["env.NCCL_IB_HCA"] = "mlx5"
        rec["env"]["facts"]["package.nvidia-nccl-cu12"] = nccl
        (nodes / f"n{i}").mkdir()
        (nodes / f"n{i}" / "node.json").write_text(json.dumps(rec))
    base["env"]["facts"]["package.nvidia-nccl-cu12"] = "2.21.5"
    base["env"]["facts"]["env.NCCL_IB_HCA"] = "mlx5"
    (nodes / "n0" / "node.json").write_text(json.dumps(base))
    rep = kit.diagnose_job(job, tmp_path / "merged")
    assert any("n3 package.nvidia-nccl-cu12=2.18.1" in n for n in rep["notes"])
    row = next(n for n in rep["nodes"] if n["name"] == "n3")
    assert any("environment differs" in f for f in row["flags"])
    assert any(c["id"] == "environment.differs_across_nodes" for c in rep["root_causes"])


KERNEL_XID = """\
import os, sys, time
t = time.time()
with open(os.environ["KERNEL_FILE"], "w") as f:  # where this cluster's syslog puts kern.*
    # rsyslog's high-precision RFC 3339 stamp carries the microseconds (a stamp cut to the second is read
    # as lying anywhere in that second, so it would not precede the rank's line half a second later)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}+00:00"
    f.write(f"{stamp} gpu07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus.\\n")
time.sleep(0.5)
print("[rank13]:RuntimeError: CUDA error: unspecified launch failure", file=sys.stderr)
sys.exit(1)
"""


def test_a_gpu_that_fell_off_the_bus_names_its_node_and_says_to_exclude_it(kit, tmp_path, standin):
    """gpu07's kernel log has the Xid 79 (read from the file FAILDIAG_KERNEL_LOG names); gpu01 only times out."""
    job = tmp_path / "job"
    env = {"FAILDIAG_JOB_ID": "x79", "FAILDIAG_JOB_NODES": "gpu01,gpu07"}
    kernel = tmp_path / "kern.log"
    script = tmp_path / "xid.py"
    script.write_text(KERNEL_XID)
    a = kit.start_node(
        job,
        "gpu07",
        [sys.executable, str(script)],
        {**env, "KERNEL_FILE": str(kernel), "FAILDIAG_KERNEL_LOG": str(kernel)},
        tmp_path,
    )
    b = kit.start_node(
        job,
        "gpu01",
        [sys.executable, str(standin)],
        {**env, **NODES["gpu01"], "T_FAIL": str(time.time() + 1.0)},
        tmp_path,
    )
    assert a.wait(timeout=90) == 1 and b.wait(timeout=90) == 1
    rec = json.loads((job / "nodes" / "gpu07" / "node.json").read_text())
    assert any(e["rank"] is None and "Xid" in e["excerpt"] and e["time_source"] == "kernel log" for e in rec["events"])
    rep = kit.diagnose_job(job, tmp_path / "merged")
    first = rep["profile"]["first_failure"]
    assert first["host"] == "gpu07" and "fallen off the bus" in first["excerpt"]
    top = rep["root_causes"][0]
    assert top["category"] == "hardware"
    assert "--exclude=gpu07" in rep["next_actions"][0]
