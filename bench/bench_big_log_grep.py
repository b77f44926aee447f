"""`faildiag diagnose` on a big training log, side by side with the grep a user would type.

    python bench/bench_big_log_grep.py [--mb 300] [--small-mb 10] [--repeat 3] [--dir DIR] [--baseline DIR]
    python bench/bench_big_log_grep.py --instructions [--baseline DIR]

The log is written the way an 8-rank job writes one (torchrun ``--tee``: every line ``[rankN]:``-prefixed,
the ranks interleaved): a step line per iteration and rank (loss, lr, grad_norm, tokens/s), NCCL_DEBUG=INFO
channel lines every fifth step, tqdm bars redrawn with ``\\r``, evaluation lines that hold "error" in healthy
text (``error_rate=0.01``), harmless warnings, and the real CUDA out-of-memory traceback at the very end.

The baseline is what a person types first, ``grep -c -E 'Error|error|Traceback|WARN|Killed|timeout|Timeout|
out of memory'``, not a grep of every rule keyword. Each repetition runs grep, then a fresh ``faildiag
diagnose`` process (the first one with an empty database cache: cold; the others warm), and every run is
printed with its time, the ratio and the child's peak RSS (``RUSAGE_CHILDREN``: the largest child so far,
so grep's small RSS never hides faildiag's), and the CPU time of each (grep's too: on a shared machine
wall time mostly measures the neighbours). The real error must be found in every run. The CLIs run with
their package's bytecode precompiled (``--no-bytecode``: compiled from source in every run).

Targets (issue 14): <= 2x grep and <= 150 MB peak RSS on 300 MB; a fresh CLI on 10 MB in <= 0.5 s.

``--instructions`` counts instead what the fixed start-up costs: the instructions of a warm fresh CLI on a
2-line log under valgrind, this checkout beside ``--baseline`` (a figure the neighbours cannot move).

``--split`` says where a warm run's CPU goes, per checkout (``--baseline`` beside): start-up (a fresh CLI on a
2-line log), then, in one process on the big log, reading its chunks, counting their newlines (line numbers),
the engine's scan (Hyperscan, its callbacks included; the checkout's own chunk size and newline count) and the rest of ``scan_file``: Python on the candidate
lines and the loop around them. Each figure is the best of three.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

USER_GREP = "Error|error|Traceback|WARN|Killed|timeout|Timeout|out of memory"
RANKS = 8

OOM_TAIL = """[rank3]:Traceback (most recent call last):
[rank3]:  File "/workspace/train.py", line 211, in <module>
[rank3]:    main()
[rank3]:  File "/workspace/train.py", line 188, in main
[rank3]:    loss = model(batch).loss
[rank3]:  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1739, in _wrapped_call_impl
[rank3]:    return self._call_impl(*args, **kwargs)
[rank3]:  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1750, in _call_impl
[rank3]:    return forward_call(*args, **kwargs)
[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.11 GiB memory in use. Of the allocated memory 74.30 GiB is allocated by PyTorch, and 2.55 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
W1130 03:12:09.412000 140213 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 1204 closing signal SIGTERM
E1130 03:12:10.118000 140213 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 3 (pid: 1207) of binary: /opt/conda/bin/python
"""


def _step_block(rng: random.Random, step: int, clock: float) -> list[str]:
    """Everything the 8 ranks print for one iteration."""
    lines = []
    t = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(clock))
    loss = 2.0 + 3.0 / (1 + step / 2000) + rng.random() * 0.05
    for r in range(RANKS):
        lines.append(
            f"[rank{r}]:{t},{rng.randrange(1000):03d} INFO trainer.py:412 step {step} | loss {loss:.4f} | "
            f"lr {3e-4 * min(1, step / 2000):.3e} | grad_norm {0.8 + rng.random():.3f} | "
            f"tokens/s {51000 + rng.randrange(2000)}"
        )
    if step % 5 == 0:  # NCCL_DEBUG=INFO: channel set-up chatter of a new communicator
        for r in range(RANKS):
            for c in range(4):
                lines.append(
                    f"[rank{r}]:node-0:{4100 + r}:{4180 + r} [{r}] NCCL INFO Channel {c:02d}/0 : "
                    f"{r}[{r}] -> {(r + 1) % RANKS}[{(r + 1) % RANKS}] via P2P/IPC/read"
                )
    if step % 10 == 0:  # tqdm redraws its bar with \r; the newline comes only now and then
        frames = [
            f"Training:  {p}%|{'█' * (p // 10)}{' ' * (10 - p // 10)}| {step + p}/500000 "
            f"[1:{p:02d}:10<40:12:33, 5.{p:02d}it/s, loss={loss:.3f}]"
            for p in range(0, 100, 9)
        ]
        lines.append("[rank0]:" + "\r".join(frames))
    if step % 50 == 0:  # healthy lines that say "error"
        lines.append(
            f"[rank0]:{t},000 INFO eval.py:88 eval step {step}: error_rate=0.0{rng.randrange(10)} "
            f"top1=0.7{rng.randrange(10)} val_loss={loss + 0.1:.4f}"
        )
        lines.append(
            f"[rank0]:{t},001 INFO metrics.py:40 train/error_rate={rng.random() / 50:.4f} "
            f"train/clip_frac=0.0{rng.randrange(10)}"
        )
    if step % 200 == 0:
        lines.append(
            f"[rank{rng.randrange(RANKS)}]:/opt/conda/lib/python3.11/site-packages/torch/utils/checkpoint.py:"
            "1399: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly."
        )
    if step % 1000 == 0:
        lines.append(f"[rank0]:{t},500 INFO checkpoint.py:77 saved checkpoint to /ckpt/step_{step}.pt in 4.2 s")
    return lines


def write_log(path: Path, size_mb: float, seed: int = 14) -> Path:
    """Write the log (``size_mb`` MiB of training, then the real OOM) and return its path."""
    rng = random.Random(seed)
    target = int(size_mb * 1024 * 1024)
    written = 0
    step = 0
    clock = 1_764_460_800.0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            block = []
            for _ in range(100):
                step += 1
                clock += 0.31
                block.extend(_step_block(rng, step, clock))
            text = "\n".join(block) + "\n"
            f.write(text)
            written += len(text.encode("utf-8"))
        f.write(OOM_TAIL)
    return path


def _child_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _grep(log: Path) -> tuple[float, float, str]:
    """grep's wall time, its CPU time and its count."""
    t, cpu0 = time.perf_counter(), _children_cpu()
    p = subprocess.run(["grep", "-c", "-E", USER_GREP, str(log)], capture_output=True, text=True)
    return time.perf_counter() - t, _children_cpu() - cpu0, p.stdout.strip()


def child_env(root: Path, cache: Path, pycache: Path | None) -> dict[str, str]:
    """The environment of a fresh CLI of checkout ``root``: its own cache folder and, with ``pycache``, a
    bytecode cache there that ``precompile`` filled, as an installed package has (pip compiles its
    modules); without it, every run compiles the package's sources again, as under
    ``PYTHONDONTWRITEBYTECODE`` with no ``__pycache__`` (some sandboxes), which no user's install pays."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(root))
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)  # never written into the checkout
    return env


def precompile(root: Path, env: dict[str, str]) -> None:
    """Write the checkout's bytecode into the environment's ``PYTHONPYCACHEPREFIX`` before any timed run."""
    if "PYTHONPYCACHEPREFIX" in env:
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(root / "pytest_faildiag")], env=env, check=True, cwd=root
        )


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _diagnose(log: Path, out: Path, env: dict[str, str]) -> tuple[float, dict]:
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(log), "--format", "json", "--out", str(out)],
        capture_output=True,
        env=env,
        cwd=out.parent,  # not a checkout: ``python -m`` imports the code of the current folder first
    )
    took = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"faildiag diagnose failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    return took, json.loads(p.stdout)


def _found_oom(report: dict) -> bool:
    text = json.dumps(report.get("profile", {})) + json.dumps(report.get("root_causes", [])[:1])
    return "OutOfMemoryError" in text or "out of memory" in text.lower()


def compare(
    log: Path, tmp: Path, repeat: int, label: str, baseline: Path | None = None, bytecode: bool = True
) -> tuple[list[float], list[float], float]:
    """grep vs a fresh ``faildiag diagnose``, ``repeat`` times; run 1 with an empty cache folder (cold).
    With ``baseline`` (a checkout of other code, e.g. main), each repetition also runs its CLI right after
    ours (own cache folder, cold on run 1 too), so both see the same load; its times are printed beside."""
    here = Path(__file__).resolve().parent.parent
    sides = [("this", here)] + ([("baseline", baseline)] if baseline else [])
    envs = {}
    for side, root in sides:
        cache = tmp / f"cache-{label}-{side}"
        shutil.rmtree(cache, ignore_errors=True)
        envs[side] = child_env(root, cache, tmp / f"pycache-{side}" if bytecode else None)
        precompile(root, envs[side])
    grep_t, diag_t = [], []
    peak = 0.0
    for i in range(repeat):
        g, gcpu, count = _grep(log)
        grep_t.append(g)
        line = (
            f"  {label} run {i + 1} ({'cold' if i == 0 else 'warm'}): grep {g:.2f} s (cpu {gcpu:.2f} s, {count} lines)"
        )
        for side, _ in sides:
            cpu0 = _children_cpu()
            d, report = _diagnose(log, tmp / f"out-{label}-{side}-{i}", envs[side])
            cpu = _children_cpu() - cpu0
            peak = max(peak, _child_peak_mb()) if side == "this" else peak
            if side == "this":
                diag_t.append(d)
            ok = _found_oom(report)
            line += (
                f"   {side} faildiag {d:.2f} s (cpu {cpu:.2f} s) = {d / g:.2f}x grep (cpu {cpu / max(gcpu, 1e-3):.2f}x), "
                f"real error found: {ok}"
            )
            if not ok:
                raise SystemExit(f"the OOM was not found by {side}: {report.get('summary')}")
        whose = " (largest child so far, baseline included)" if baseline else " so far"
        print(line + f"   peak child RSS{whose} {peak:.0f} MB", flush=True)
    return grep_t, diag_t, peak


SMALL_LOG = "Traceback (most recent call last):\nValueError: boom\n"

SPLIT = r"""
import json, sys, time
from pytest_faildiag.parse import scan
from pytest_faildiag.rules import load_ruleset

path = sys.argv[1]
rs = load_ruleset()
finder = scan.compiled(rs).line_starts()
buf = bytearray(scan.CHUNK)
view = memoryview(buf)
lines = [0]

def chunks(each):
    with open(path, "rb", buffering=0) as f:
        while got := f.readinto(view):
            each(got)

def engine(got):
    lines[0] += len(finder.scan(buf, got, view)[0])

def best(run):
    times = []
    for _ in range(3):
        t = time.process_time()
        run()
        times.append(time.process_time() - t)
    return min(times)

read = best(lambda: chunks(lambda got: None))
# the checkout's own newline count (``scan.newlines`` where it has one, else ``bytes.count``)
newlines = getattr(scan, "newlines", None) or (lambda b, start, end: b.count(b"\n", start, end))
count = best(lambda: chunks(lambda got: newlines(buf, 0, got)))
scanned = best(lambda: chunks(engine)) if finder is not None else read
full = best(lambda: scan.scan_file(path, "x", rs, scan.ScanResult()))
print(json.dumps({"read": read, "count": count - read, "engine": scanned - read,
                  "python": full - count - scanned + read, "scan_file": full, "candidates": lines[0] // 3}))
"""


def split(log: Path, tmp: Path, baseline: Path | None, bytecode: bool = True) -> None:
    """Print where a warm run's CPU goes, for this checkout and ``baseline`` (see the module's docstring)."""
    small = tmp / "two-lines.log"
    small.write_text(SMALL_LOG)
    here = Path(__file__).resolve().parent.parent
    for side, root in [("this", here)] + ([("baseline", baseline)] if baseline else []):
        cache = tmp / f"cache-split-{side}"
        env = child_env(root, cache, tmp / f"pycache-{side}" if bytecode else None)
        precompile(root, env)
        starts = []
        for i in range(4):  # run 1 fills the caches
            cpu0 = _children_cpu()
            _diagnose(small, tmp / f"out-split-{side}-{i}", env)
            starts.append(_children_cpu() - cpu0)
        p = subprocess.run(
            [sys.executable, "-c", SPLIT, str(log)], env=env, cwd=tmp, capture_output=True, text=True, check=True
        )
        got = json.loads(p.stdout)
        print(
            f"  {side}: start-up {min(starts[1:]):.3f} s; in scan_file {got['scan_file']:.3f} s: reading "
            f"{got['read']:.3f}, newline count {got['count']:.3f}, engine {got['engine']:.3f}, Python on "
            f"{got['candidates']:,} candidate lines and the loop {got['python']:.3f} (CPU seconds, best of 3)",
            flush=True,
        )


def startup_instructions(tmp: Path, baseline: Path | None, bytecode: bool = True) -> int:
    """The fixed cost of a fresh CLI: instructions (valgrind's ``I refs``, fixed hash seed) that a warm
    ``faildiag diagnose`` of a 2-line log executes, for this checkout and ``baseline``. Unlike wall time on a
    shared machine, the count repeats to within a fraction of a percent, so two versions compare exactly."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    log = tmp / "two-lines.log"
    log.write_text(SMALL_LOG)
    here = Path(__file__).resolve().parent.parent
    counts = {}
    for side, root in [("this", here)] + ([("baseline", baseline)] if baseline else []):
        cache = tmp / f"cache-startup-{side}"
        shutil.rmtree(cache, ignore_errors=True)
        env = {**child_env(root, cache, tmp / f"pycache-{side}" if bytecode else None), "PYTHONHASHSEED": "0"}
        precompile(root, env)
        cmd = [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(log), "--format", "json"]
        for i in range(3):  # run 1 fills the caches (rule packs, entry points, database); 2 and 3 are counted
            out = ["--out", str(tmp / f"out-startup-{side}-{i}")]
            if i == 0:
                subprocess.run(cmd + out, env=env, cwd=tmp, capture_output=True, check=True)
                continue
            valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
            p = subprocess.run(valgrind + cmd + out, env=env, cwd=tmp, capture_output=True, text=True)
            found = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
            if p.returncode != 0 or found is None:
                raise SystemExit(f"valgrind run failed ({side}):\n{p.stderr[-2000:]}")
            counts[side] = int(found.group(1).replace(",", ""))
            print(f"  start-up ({side}, warm run {i}): {counts[side] / 1e6:,.1f}M instructions", flush=True)
    if "baseline" in counts:
        print(f"  start-up: this / baseline = {counts['this'] / counts['baseline']:.3f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=300)
    ap.add_argument("--small-mb", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--baseline", default=None, help="a checkout of other code (e.g. main) run side by side")
    ap.add_argument(
        "--no-bytecode", action="store_true", help="no bytecode cache: each run compiles the package's sources"
    )
    ap.add_argument("--split", action="store_true", help="where a warm run's CPU goes (see the docstring), and stop")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="count the instructions of a fresh CLI on a 2-line log (valgrind), beside --baseline, and stop",
    )
    a = ap.parse_args()
    baseline = Path(a.baseline).resolve() if a.baseline else None
    tmp = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="faildiag-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    if a.instructions:
        try:
            return startup_instructions(tmp, baseline, not a.no_bytecode)
        finally:
            if not a.dir:
                shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   cpus: {os.cpu_count()}")
    if a.split:
        log = tmp / f"train-{a.mb:g}mb.log"
        if not log.exists():
            write_log(log, a.mb)
        split(log, tmp, baseline, not a.no_bytecode)
        if not a.dir:
            shutil.rmtree(tmp, ignore_errors=True)
        return 0
    print(
        "bytecode: none, every run compiles the sources"
        if a.no_bytecode
        else "bytecode: precompiled into a cache folder per side, as an installed package has it"
    )
    try:
        import hyperscan  # noqa: F401

        print("hyperscan: installed")
    except ImportError:
        print("hyperscan: not installed (standard-library scanner)")
    for mb, label in ((a.small_mb, "small"), (a.mb, "big")):
        log = tmp / f"train-{mb:g}mb.log"
        if not log.exists():
            t = time.perf_counter()
            write_log(log, mb)
            print(f"wrote {log.name}: {log.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - t:.1f} s")
        print(f"{log.name} ({log.stat().st_size / 2**20:.0f} MiB):")
        grep_t, diag_t, peak = compare(log, tmp, a.repeat, label, baseline, not a.no_bytecode)
        warm = diag_t[1:] or diag_t
        print(
            f"  median warm: faildiag {statistics.median(warm):.2f} s vs grep {statistics.median(grep_t):.2f} s = "
            f"{statistics.median(warm) / statistics.median(grep_t):.2f}x; cold {diag_t[0]:.2f} s; peak RSS {peak:.0f} MB"
        )
        if label == "small":
            print(
                f"  target: fresh CLI on {mb:g} MB <= 0.5 s: {'met' if statistics.median(warm) <= 0.5 else 'NOT met'}"
            )
        else:
            ratio = statistics.median(warm) / statistics.median(grep_t)
            print(
                f"  targets: <= 2x grep: {'met' if ratio <= 2 else 'NOT met'}; "
                f"<= 150 MB RSS: {'met' if peak <= 150 else 'NOT met'}"
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not a.dir:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
