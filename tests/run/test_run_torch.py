"""`faildiag run` around real `torchrun --nproc_per_node=2` gloo jobs on the CPU."""

from __future__ import annotations

import sys

import pytest

from pytest_faildiag.engine import diagnose

pytestmark = pytest.mark.torch
pytest.importorskip("torch.distributed")

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]

RANK_RAISES = """\
    from datetime import timedelta
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    t = torch.ones(4)
    dist.all_reduce(t)
    if dist.get_rank() == 1:
        raise ValueError("bad batch shape on this rank: expected 4 got 5")
    dist.all_reduce(t)
"""


def test_it_names_the_rank_that_raised_not_the_peer_that_lost_its_connection(faildiag_run, script, tmp_path):
    s = script("rank_raises.py", RANK_RAISES)
    # --tee 3: each rank's output on the console (captured by faildiag) and in the launcher's log dir
    ranklogs = tmp_path / "ranklogs"
    r = faildiag_run([*TORCHRUN, "--log-dir", str(ranklogs), "--tee", "3", str(s)])
    assert r.returncode == 1
    log = (r.out / "logs" / "stderr.log").read_text()
    # the peer's symptom is there: its gloo connection closed, or (when the launcher stops it first, as
    # happens on a loaded machine) the launcher's report of the signal it got
    peer = ("Connection closed by peer", "Connection reset by peer", ") received by PID")
    assert any(s in log for s in peer), log[-2000:]
    rep = r.report()
    first = rep["profile"]["first_failure"]
    assert "ValueError: bad batch shape on this rank" in first["excerpt"]
    assert rep["profile"]["ranks"]["first_failing"] == "1"
    assert rep["profile"]["type"] == "runtime_error" and rep["profile"]["stack"] == "pytorch"
    top = rep["root_causes"][0]
    assert "ValueError" in top["summary"]
    assert any("rank_raises.py:8" in e["excerpt"] for e in top["evidence"])
    assert "rank 1 failed first" in rep["summary"]
    # the per-rank logs the launcher wrote were copied into the snapshot, attributed to their rank, and read
    copied = r.out / "ranks" / "attempt0-rank1.stderr.log"
    assert copied.read_text().startswith("[rank1]:")
    assert "attempt0-rank1.stderr.log" in rep["sources"]
    # those copies alone (what --redirects leaves: nothing on the console) still name rank 1
    alone = diagnose([r.out / "ranks"], exit_code=1)
    assert alone.profile.ranks["first_failing"] == "1"
    assert "ValueError: bad batch shape" in alone.profile.first_failure.excerpt


def test_it_diagnoses_a_real_gloo_collective_timeout(faildiag_run, script):
    s = script(
        "timeout.py",
        """\
        import time
        from datetime import timedelta
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=3))
        t = torch.ones(4)
        if dist.get_rank() == 0:
            dist.all_reduce(t)  # rank 1 never joins
        else:
            time.sleep(5)
    """,
    )
    r = faildiag_run([*TORCHRUN, str(s)], "--nccl-debug")
    assert r.returncode == 1
    rep = r.report()
    assert rep["profile"]["type"] == "communication"
    assert rep["profile"]["backend"] == "gloo"
    assert rep["root_causes"][0]["category"] == "communication"
    assert "Timed out waiting 3000ms" in rep["profile"]["first_failure"]["excerpt"]
    assert rep["profile"]["ranks"]["first_failing"] == "0"
    env = r.run_json()["env_set"]
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1" and env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"].endswith(
        "nccl_trace_rank_"
    )


def test_it_stops_a_hung_job_and_says_where_each_rank_waits(faildiag_run, script):
    s = script(
        "hang.py",
        """\
        import time
        from datetime import timedelta
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=120))
        t = torch.ones(4)
        print("ready", flush=True)
        if dist.get_rank() == 0:
            dist.all_reduce(t)
        else:
            while True:
                time.sleep(0.5)
    """,
    )
    r = faildiag_run([*TORCHRUN, str(s)], "--hang-timeout", "2", "--grace", "3")
    assert r.returncode == 124
    rep = r.report()
    assert rep["profile"]["type"] == "hang" and rep["profile"]["stack"] == "pytorch"
    top = rep["root_causes"][0]
    assert top["category"] == "communication"
    assert "all_reduce" in top["summary"] and "hang.py:9" in top["summary"]
    stuck = {s["rank"]: s["detail"] for s in rep.get("stuck", [])}
    assert set(stuck) == {"0", "1"}
    assert "hang.py:12" in stuck["1"]
    assert any("rank 1" in e["excerpt"] and "hang.py:12" in e["excerpt"] for e in top["evidence"])  # every rank named
    names = r.run_json()["stacks"]
    assert sorted(n.split("-")[0] for n in names) == ["stacks/rank0", "stacks/rank1"]  # the launcher left out
    # the SIGTERM torchrun reports is faildiag's own stop of the hung job, not an outsider's (it said so once)
    assert not [c for c in rep["root_causes"] if c["rule"] == "elastic.agent_signal"], rep["root_causes"]
    assert "stopped the hung run itself" in (r.out / "watchdog.txt").read_text()
    # every cited file opens, and a later reading of the folder reads what the run read: the same answer
    cited = {e["source"] for c in rep["root_causes"] for e in c["evidence"] if e["source"].startswith("stacks/")}
    assert cited and all((r.out / name).is_file() for name in cited | set(names)), cited
    again = diagnose([str(r.out)])
    assert again.profile.type == "hang"
    assert (again.root_causes[0].category, again.root_causes[0].summary) == (top["category"], top["summary"])


PEER_PRINTS_AND_WAITS = """\
    import time
    import traceback
    from datetime import timedelta
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", timeout=timedelta(seconds=3))
    shards = {0: torch.ones(4)}
    try:
        t = shards[dist.get_rank()]
    except KeyError:
        traceback.print_exc()  # "retry later": the error is printed, the rank never joins
        time.sleep(60)
    dist.all_reduce(t)
"""


def test_a_peer_error_printed_before_the_collective_timeout_is_named(faildiag_run, script):
    """Rank 1 prints its own error (no rank prefix: torchrun prefixes only what it relays) and never joins;
    rank 0 times out in all_reduce. The timeout's cause names the earlier error as the peer that failed: a
    new user's trial found it nowhere in the report."""
    s = script("peer_wait.py", PEER_PRINTS_AND_WAITS)
    r = faildiag_run([*TORCHRUN, str(s)], timeout=180)
    assert r.returncode != 0
    rep = r.report()
    top = rep["root_causes"][0]
    assert top["category"] == "communication", rep["summary"]
    checks = {c["name"]: c for c in top["validation_checks"]}
    detail = checks["rank-divergence"]["detail"]
    assert checks["rank-divergence"]["status"] == "passed", detail
    assert "KeyError: 1" in detail and "peer_wait.py:9" in detail, detail
