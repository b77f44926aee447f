"""The run wrapper's parts on real files and processes: bounded logs, py-spy dumps, OOM counters, timeline."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from pytest_faildiag.capture.runner import oom_verdict, shell_status
from pytest_faildiag.capture.stacks import prefix_rank, pyspy_to_faulthandler
from pytest_faildiag.capture.tee import BoundedLog
from pytest_faildiag.engine import diagnose

PY = sys.executable


def test_a_bounded_log_keeps_the_head_and_the_latest_tail_in_order(tmp_path):
    log = BoundedLog(tmp_path / "x.log", head=100, tail=60)
    data = b"".join(f"{i:04d}\n".encode() for i in range(1000))  # 5000 bytes
    for i in range(0, len(data), 7):  # odd chunk sizes cross every boundary
        log.write(data[i : i + 7])
    log.close()
    kept = (tmp_path / "x.log").read_bytes()
    head, _, rest = kept.partition(b"\n[faildiag: ")
    assert head == data[:100]
    marker, _, tail = rest.partition(b"]\n")
    omitted = int(marker.split()[0])
    assert tail == data[len(data) - len(tail) :]  # a contiguous, latest tail
    assert 30 <= len(tail) <= 60
    assert omitted == len(data) - 100 - len(tail)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.log"]


def test_a_bounded_log_under_its_caps_is_the_output_itself(tmp_path):
    log = BoundedLog(tmp_path / "y.log", head=100, tail=60)
    log.write(b"a" * 120)
    log.close()
    assert (tmp_path / "y.log").read_bytes() == b"a" * 120
    assert log.omitted == 0


def test_shell_status_maps_signals_as_a_shell_reports_them():
    assert shell_status(-9) == 137 and shell_status(-11) == 139 and shell_status(-6) == 134 and shell_status(3) == 3


PYSPY = """\
Process 4242: python train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:3252)
    train_step (/work/train.py:41)
    <module> (/work/train.py:60)
Thread 4250 (idle): "pt_elastic"
    sleep (time.py:1)
"""


def test_a_py_spy_dump_becomes_a_dump_the_engine_classifies_per_rank():
    text = prefix_rank(pyspy_to_faulthandler(PYSPY), "3")
    assert text.startswith("[rank3]:Thread 4242 MainThread (idle) (most recent call first):")
    assert '[rank3]:  File "/work/train.py", line 41 in train_step' in text
    diag = diagnose(texts={"stacks/rank3-4242.txt": text, "watchdog.txt": "faildiag: hang detected: no output\n"})
    stuck = diag.extra["stuck"]
    assert stuck[0]["rank"] == "3" and "all_reduce" in stuck[0]["detail"]
    assert any(c.category == "communication" for c in diag.root_causes)


def test_the_oom_verdict_reads_the_counters_change_not_their_value():
    f = "/sys/fs/cgroup/memory.events"
    assert oom_verdict({f: 4}, {f: 5}, {1}, 137)["killed"] is True
    assert oom_verdict({f: 4}, {f: 4}, {1}, 137)["killed"] is False  # old kills are not this run's
    assert oom_verdict({}, {}, {1}, 1)["killed"] is None


def test_the_timeline_lets_the_engine_see_memory_grow_before_a_kill(faildiag_run, script):
    s = script(
        "leak.py",
        """\
        import os, signal, time
        hoard = []
        for step in range(10):
            hoard.append(bytearray(40 * 2**20))  # 40 MiB a step, touched
            print("step", step, flush=True)
            time.sleep(0.25)
        os.kill(os.getpid(), signal.SIGKILL)
    """,
    )
    r = faildiag_run([PY, str(s)], "--interval", "0.2")
    assert r.returncode == 137
    samples = [json.loads(line) for line in (r.out / "timeline.jsonl").read_text().splitlines()]
    assert len(samples) >= 5 and set(samples[0]) == {"t", "rss_gib", "gpu_gib", "cpu"}
    assert samples[-1]["rss_gib"] > samples[0]["rss_gib"] + 0.15
    checks = {c["name"]: c for cause in r.report()["root_causes"] for c in cause["validation_checks"]}
    assert checks["memory-growth"]["status"] == "passed"
    assert "resource timeline" in checks["memory-growth"]["detail"]


def test_it_samples_gpu_memory_through_nvidia_smi_and_survives_one_that_hangs(faildiag_run, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    # answers the per-process query with nothing (hidden in containers), the device query with 2048 MiB;
    # a marker file makes the next call hang to check the bounded timeout
    smi.write_text(f"""#!/bin/sh
[ -e {tmp_path / "hang-now"} ] && exec sleep 60
case "$*" in *--query-gpu=memory.used*) echo 2048;; esac
""")
    smi.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    prog = f"import time, pathlib; time.sleep(1); pathlib.Path({str(tmp_path / 'hang-now')!r}).touch(); time.sleep(60)"
    start = time.monotonic()
    r = faildiag_run([PY, "-c", prog], "--interval", "0.2", "--hang-timeout", "3", "--grace", "1", env=env, timeout=60)
    assert r.returncode == 124
    assert time.monotonic() - start < 40  # the hung nvidia-smi was given up on
    samples = [json.loads(line) for line in (r.out / "timeline.jsonl").read_text().splitlines()]
    assert 2.0 in {x["gpu_gib"] for x in samples}
    assert not (r.out / "gpu.txt").exists()
    assert r.report()["profile"]["type"] == "hang"


def test_a_rank_that_raises_then_aborts_at_exit_is_diagnosed_by_its_exception():
    # a real `torchrun --tee 3` log: rank 1 raised, then gloo's threads made its interpreter abort at exit,
    # and rank 0 lost its connection; every line carries torchrun's "[defaultN]:" and torch's "[rankN]:"
    log = Path(__file__).parent / "data" / "torchrun_tee_rank1_raises_then_aborts.stderr.log"
    assert "Fatal Python error: Aborted" in log.read_text()
    diag = diagnose([log], exit_code=1)
    assert diag.profile.first_failure.excerpt.startswith("ValueError: bad batch shape on this rank")
    assert diag.profile.ranks["first_failing"] == "1"
    assert diag.profile.type == "runtime_error"
    assert "ValueError" in diag.root_causes[0].summary
