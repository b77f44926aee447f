"""Overhead of `faildiag run` on a healthy run that prints steadily (not a unit test: figures vary).

The workload is a fixed amount of CPU work (no sleeps, so any slowdown shows) printing a log line every
step and a ``\\r`` progress bar on stderr, about ``--seconds`` long. It runs bare and under
``faildiag run --hang-timeout 60`` (the full monitor: timeline sampling, hang watch, stack handler
injected), in an order that rotates each repetition, with all outputs going to /dev/null. ``faildiag run``
runs twice per repetition: ``cold`` into a fresh output folder (nothing from an earlier run: the environment
lock is built again, as in a CI job's first run) and ``warm`` into one folder kept across repetitions.
Every run is printed. Printed after: median wall time of each, their ratios (target <= 1.03, cold), and
the CPU time `faildiag run` itself used per second of run.

Job length: 20 seconds by default (calibrated on the bare run's wall time, so CPU-seconds on a quiet
machine and fewer on a busy one). `faildiag run` wraps training and test jobs whose failure needs a
diagnosis, and those run for minutes: importing torch alone costs about 3 CPU-seconds (bench_lock.py), and
the shortest such job a CI pipeline runs (a smoke training run of a few steps) takes tens of seconds. 20 s
is the short end of that, so the wrapper's fixed cost (its start-up, and the environment lock a cold run
builds in a child at nice 19: about 0.2 CPU-seconds together) still shows, and 5 rotations take about five
minutes. The CPU faildiag adds per run (fixed, plus the per-line pass-through) is printed; `--seconds 3`
shows how a few-second job pays the fixed part almost alone.

    .venv/bin/python bench/bench_run_overhead.py [--seconds 20] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

WORKLOAD = """\
import sys, time
steps = int(sys.argv[1])
acc = 0
for step in range(steps):
    for i in range(20000):  # ~2-5 ms of steady CPU work per step
        acc = (acc + i * i) % 1000003
    print(f"step {step} loss {acc / 1000003:.6f} lr 0.001", flush=True)
    if step % 10 == 0:
        sys.stderr.write(f"\\r[{'#' * (step * 30 // steps):<30}] {step}/{steps}")
        sys.stderr.flush()
sys.stderr.write("\\n")
if len(sys.argv) > 2:  # the workload's own CPU time, to tell it apart from the wrapper's
    with open(sys.argv[2], "a") as f:
        f.write(f"{time.process_time()}\\n")
"""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed(cmd: list[str]) -> tuple[float, float]:
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0, _children_cpu() - cpu0


def calibrate(script: Path, seconds: float) -> int:
    steps = 50
    while True:
        wall, _ = _timed([sys.executable, str(script), str(steps)])
        if wall > 1.0:
            return max(50, int(steps * seconds / wall))
        steps *= 4


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="the workload's length (see the docstring)")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="faildiag-bench-") as tmp:
        script = Path(tmp, "workload.py")
        script.write_text(textwrap.dedent(WORKLOAD))
        steps = calibrate(script, args.seconds)
        cpu_file = Path(tmp, "workload-cpu.txt")
        bare_cmd = [sys.executable, str(script), str(steps), str(cpu_file)]

        def wrapped(out: Path) -> list[str]:
            run = [sys.executable, "-m", "pytest_faildiag.cli", "run", "--out", str(out), "--hang-timeout", "60"]
            return [*run, "--", *bare_cmd]

        bare, under, bare_cpu, under_cpu, own, work_bare, work_run = [], [], [], [], [], [], []
        warm: list[tuple[float, float]] = []  # (wall, cpu) into the kept folder
        names = ("bare", "cold", "warm")
        for rep in range(args.reps):
            order = names[rep % 3 :] + names[: rep % 3]
            for name in order:
                out = Path(tmp, f"out-cold-{rep}") if name == "cold" else Path(tmp, "out-warm")
                cpu_file.write_text("")
                wall, cpu = _timed(bare_cmd if name == "bare" else wrapped(out))
                work = float(cpu_file.read_text().split()[-1])
                if name == "warm":
                    warm.append((wall, cpu))
                    continue
                (work_bare if name == "bare" else work_run).append(work)
                if name == "cold":
                    own.append(json.loads(Path(out, "run.json").read_text())["wrapper_cpu_s"])
                (bare if name == "bare" else under).append(wall)
                (bare_cpu if name == "bare" else under_cpu).append(cpu)
            print(
                f"rep {rep + 1} (order {','.join(order)}): bare {bare[-1]:.2f} s wall {bare_cpu[-1]:.2f} s CPU; "
                f"faildiag run cold {under[-1]:.2f} s wall {under_cpu[-1]:.2f} s CPU (ratio {under[-1] / bare[-1]:.3f}); "
                f"warm {warm[-1][0]:.2f} s wall {warm[-1][1]:.2f} s CPU (ratio {warm[-1][0] / bare[-1]:.3f})",
                flush=True,
            )
        out_log = Path(tmp, "out-warm", "logs", "stdout.log")
        lines = sum(1 for _ in open(out_log, "rb")) if out_log.exists() else 0
    wm = statistics.median(w for w, _ in warm)
    print(
        f"warm (one output folder kept): median wall {wm:.3f} s, ratio {wm / statistics.median(bare):.3f}, "
        f"median of paired ratios {statistics.median(w / b for (w, _), b in zip(warm, bare, strict=True)):.3f}, "
        f"CPU ratio {statistics.median(c for _, c in warm) / statistics.median(bare_cpu):.3f}"
    )
    print("cold (a fresh output folder per run), the figures the target is about:")
    mb, mu = statistics.median(bare), statistics.median(under)
    ratio = mu / mb
    best = min(under) / min(bare)  # the least-disturbed pair: what is left when the machine is quiet
    paired = statistics.median(u / b for u, b in zip(under, bare, strict=True))  # neighbours in time share the load
    cpu_ratio = statistics.median(under_cpu) / statistics.median(bare_cpu)
    own_cpu = (statistics.median(under_cpu) - statistics.median(bare_cpu)) / mu
    load = os.getloadavg()[0]
    print(f"workload: {steps} steps, {lines} lines captured per run, {os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"median wall: bare {mb:.3f} s, under faildiag run {mu:.3f} s")
    print(f"ratio faildiag/bare (median wall): {ratio:.3f} (target <= 1.03) -> {'OK' if ratio <= 1.03 else 'OVER'}")
    print(f"ratio faildiag/bare (best wall):   {best:.3f}")
    print(f"ratio faildiag/bare (median of paired runs): {paired:.3f}")
    print(f"ratio faildiag/bare (CPU time, workload + wrapper): {cpu_ratio:.3f}")
    extra = statistics.median(under_cpu) - statistics.median(bare_cpu)  # the wrapper and its lock child
    print(
        f"faildiag's CPU per run: {extra:.3f} s (start-up, the lock child, the pass-through of {lines} lines) "
        f"over a {statistics.median(bare_cpu):.2f} CPU-second workload"
    )
    print(f"faildiag's own CPU: {own_cpu * 100:.1f}% of one core while the run lasts (difference of the two runs' CPU)")
    print(
        f"the workload's own CPU: median {statistics.median(work_bare):.2f} s bare, {statistics.median(work_run):.2f} s "
        f"under faildiag run (ratio {statistics.median(work_run) / statistics.median(work_bare):.3f})"
    )
    # wall seconds per CPU-second of the workload: cancels the machine's speed drifting between runs
    # (frequency, neighbours), which moves the workload's own CPU time as much as its wall time
    norm = statistics.median(w / c for w, c in zip(under, work_run, strict=True)) / statistics.median(
        w / c for w, c in zip(bare, work_bare, strict=True)
    )
    print(
        f"ratio faildiag/bare (wall per workload CPU-second): {norm:.3f} (target <= 1.03) -> {'OK' if norm <= 1.03 else 'OVER'}"
    )
    print(
        f"faildiag's own CPU as it measured itself (its process, start-up included): median {statistics.median(own):.3f} s "
        f"= {statistics.median(own) / mu * 100:.1f}% of one core; the environment lock runs apart, at nice 19"
    )
    if load > (os.cpu_count() or 1):
        print(
            "note: the machine is busier than its CPU count: wall-clock ratios are noisy, the CPU ratio is the steadier figure"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
