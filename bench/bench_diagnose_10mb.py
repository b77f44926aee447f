"""How long does diagnosing one 10 MB log take with the full rule set? (not a unit test: figures vary)

The log is realistic noise of a long distributed training run — step/loss lines, NCCL INFO chatter,
warnings, data-loading progress, checkpoint saves — with the real error (a CUDA OOM traceback on one
rank, then the launcher's re-raise) near the end. Measured side by side: ``diagnose`` in this process with
the full rule set (first call, then the median of repeats: rule packs are compiled once per process, as
in the pytest plugin), the same with only the core packs 10-40 (what the knowledge base adds), and the
whole ``faildiag diagnose`` CLI in a fresh interpreter, every run printed with its wall and CPU time: the
first with an empty cache folder (cold: rule packs parsed, engine database compiled), the others warm,
alternating with a baseline checkout when ``--baseline`` names one (e.g. the main branch), so both see the
same machine load. Target (issue 14): a fresh CLI on 10 MB in <= 0.5 s, the whole knowledge base loaded.
``--carrier gha`` measures the same log as a CI service or a container runtime delivers it, every line behind
its envelope (``parse/carrier.py``).

    .venv/bin/python bench/bench_diagnose_10mb.py [--mb 10] [--repeat 3] [--cli-repeat 5] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_extract import SHAPES  # noqa: E402
from bench_big_log_grep import child_env, precompile  # noqa: E402

TARGET_S = 0.5

NOISE = [
    "[rank{r}]:2024-05-02 10:{m:02d}:{s:02d},123 - INFO - step {i} | loss {loss:.4f} | lr 3.0e-04 | grad_norm {g:.3f} | tokens/s 51234",
    "node-{r}:12345:12{r}45 [{r}] NCCL INFO Channel {c:02d}/0 : {r} -> {c2} via P2P/IPC",
    "node-{r}:12345:12{r}45 [{r}] NCCL INFO comm 0x55d2 rank {r} nranks 8 cudaDev {r} busId 1{r}000 - Init COMPLETE",
    "{{'loss': {loss:.4f}, 'learning_rate': 2.9e-05, 'epoch': 0.{i}}}",
    "Epoch 3:  {p}%|████      | {i}/20000 [12:34<23:45, 10.2it/s, loss={loss:.3f}, v_num=0]",
    "/opt/conda/lib/python3.10/site-packages/torch/utils/checkpoint.py:429: UserWarning: torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly.",
    "  warnings.warn(",
    "2024-05-02 10:{m:02d}:{s:02d} INFO saving checkpoint to /ckpt/step_{i}.pt (elapsed 2.1 s)",
    "[rank{r}]: eval step {i}: accuracy 0.{p} perplexity 12.{c}",
    "Downloading shard {c} of 16: 100%|██████████| 4.98G/4.98G [00:21<00:00, 232MB/s]",
    "W0502 10:{m:02d}:{s:02d}.123000 140213 torch/distributed/run.py:757 Setting OMP_NUM_THREADS environment variable for each process to be 1",
    "memory: allocated 31.{c} GiB, reserved 33.{p} GiB, peak 34.0 GiB",
    "data: read batch {i} from /data/shard-{c}.bin in 0.0{p}s",
]

FAILURE = """[rank3]:Traceback (most recent call last):
[rank3]:  File "/workspace/train.py", line 211, in <module>
[rank3]:    main()
[rank3]:  File "/workspace/train.py", line 188, in main
[rank3]:    loss = model(batch).loss
[rank3]:  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl
[rank3]:    return self._call_impl(*args, **kwargs)
[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.11 GiB memory in use. Of the allocated memory 74.30 GiB is allocated by PyTorch, and 2.55 GiB is reserved by PyTorch but unallocated.
W0502 10:59:01.000000 140213 torch/distributed/elastic/multiprocessing/api.py:858 Sending process 1204 closing signal SIGTERM
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-02_10:59:01
  host      : node-3
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 1207)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def make_log(mb: float, seed: int = 0) -> str:
    rnd = random.Random(seed)
    out: list[str] = []
    size = 0
    i = 0
    target = int(mb * 1024 * 1024) - len(FAILURE) - 4096
    while size < target:
        i += 1
        line = rnd.choice(NOISE).format(
            r=rnd.randrange(8),
            m=rnd.randrange(60),
            s=rnd.randrange(60),
            i=i,
            loss=2.0 + rnd.random(),
            g=rnd.random() * 3,
            c=rnd.randrange(32),
            c2=rnd.randrange(8),
            p=rnd.randrange(100),
        )
        out.append(line)
        size += len(line.encode()) + 1
    tail = [
        f"[rank{r}]:2024-05-02 10:58:{s:02d},000 - INFO - step {i + s} | loss 2.1 | lr 3.0e-04"
        for s, r in ((s, s % 8) for s in range(40))
    ]
    return "\n".join(out + tail) + "\n" + FAILURE


def _time(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fresh_cli(root: Path, log: Path, out: Path, cache: Path, pycache: Path | None = None) -> tuple[float, float, float]:
    """One ``faildiag diagnose`` in a fresh interpreter with the code under ``root`` and the cache folder
    ``cache``: (wall s, CPU s, peak RSS MB of the largest child so far). ``pycache``: its bytecode there
    (``bench_big_log_grep.child_env``), else compiled from source in every run."""
    env = child_env(root, cache, pycache)
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(log), "--exit-code", "1", "--format", "json"]
        + ["--out", str(out)],
        capture_output=True,
        check=False,
        timeout=300,
        env=env,
        cwd=out.parent,  # not the checkout: ``python -m`` would import the code of the current folder
    )
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"faildiag diagnose failed under {root}: {p.stderr.decode()[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, _children_cpu() - cpu0, peak


def compare_cli(
    log: Path, tmp: Path, repeat: int, baseline: Path | None, bytecode: bool = True
) -> dict[str, list[tuple[float, float]]]:
    """Fresh CLIs of this checkout and, when given, a baseline checkout, alternating: run 1 of each with
    an empty cache folder (cold), the others warm. Every run is printed. ``bytecode``: each side's
    bytecode precompiled into a folder of its own first, as an installed package has it."""
    here = Path(__file__).resolve().parent.parent
    sides = [("baseline", baseline), ("this", here)] if baseline else [("this", here)]
    pycaches = {label: tmp / f"pycache-{label}" if bytecode else None for label, _ in sides}
    for label, root in sides:
        precompile(root, child_env(root, tmp / f"cache-{label}", pycaches[label]))
    runs: dict[str, list[tuple[float, float]]] = {}
    for i in range(repeat):
        for label, root in sides:
            cache = tmp / f"cache-{label}"
            if i == 0:
                shutil.rmtree(cache, ignore_errors=True)
            wall, cpu, peak = fresh_cli(root, log, tmp / f"out-{label}-{i}", cache, pycaches[label])
            kind = "cold" if i == 0 else "warm"
            runs.setdefault(f"{label} {kind}", []).append((wall, cpu))
            print(
                f"  run {i + 1} {kind} {label:8s}: wall {wall:.3f} s   cpu {cpu:.3f} s   peak RSS so far {peak:.0f} MB",
                flush=True,
            )
    return runs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cli-repeat", type=int, default=5, help="fresh CLI runs per side (the first one cold)")
    ap.add_argument("--baseline", default=None, help="a checkout of the code to compare with (e.g. main)")
    ap.add_argument("--no-bytecode", action="store_true", help="the CLIs compile the package's sources every run")
    ap.add_argument(
        "--carrier",
        choices=sorted(SHAPES),
        help="every line as a carrier or launcher wrote it (bench/audit_extract.py SHAPES: gha, kubectl, journald, ...)",
    )
    a = ap.parse_args()
    from pytest_faildiag.engine.api import diagnose
    from pytest_faildiag.rules import _builtin_packs, build_ruleset, load_ruleset

    cmd = "torchrun --nproc_per_node 8 train.py"
    print(f"load average {_load()}   cpus {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache-inproc")  # never the real home's cache
        path = tmp / "train.log"
        text = make_log(a.mb)
        if a.carrier:  # the same log as its carrier delivered it (a GitHub Actions job's raw log, kubectl logs -t)
            text = "".join(SHAPES[a.carrier](line) + "\n" for line in text.splitlines())
        path.write_text(text, encoding="utf-8")
        size_mb = path.stat().st_size / 2**20
        t0 = time.perf_counter()
        rules = load_ruleset()
        t_rules = time.perf_counter() - t0
        core = build_ruleset([p for p in _builtin_packs() if p[0][:2] in {"10", "20", "30", "40"}])
        t0 = time.perf_counter()
        diag = diagnose([str(path)], exit_code=1, command=cmd)
        cold = time.perf_counter() - t0
        med, best = _time(lambda: diagnose([str(path)], exit_code=1, command=cmd), a.repeat)
        diagnose([str(path)], exit_code=1, command=cmd, ruleset=core)  # warm the core set the same way
        core_med, _ = _time(lambda: diagnose([str(path)], exit_code=1, command=cmd, ruleset=core), a.repeat)
        top = diag.root_causes[0] if diag.root_causes else None
        print(
            f"rules: {len(rules.rules)} rules, {sum(len(r.keywords) for r in rules.rules)} keywords, loaded in "
            f"{t_rules:.3f} s (no cache yet; core packs 10-40 alone: {len(core.rules)} rules)"
        )
        print(
            f"log: {size_mb:.1f} MiB; diagnosis: type={diag.profile.type} top cause={top.id if top else None} "
            f"({top.category if top else '-'})"
        )
        print(f"in process, full rule set: first call {cold:.3f} s, then median {med:.3f} s (best {best:.3f} s)")
        print(f"in process, core packs only: median {core_med:.3f} s -> the knowledge base costs {med / core_med:.2f}x")
        print("fresh `faildiag diagnose` CLI (every run):")
        print("bytecode: " + ("none (compiled every run)" if a.no_bytecode else "precompiled per side, as installed"))
        runs = compare_cli(
            path, tmp, a.cli_repeat, Path(a.baseline).resolve() if a.baseline else None, not a.no_bytecode
        )
    for name in sorted(runs):
        walls = [w for w, _ in runs[name]]
        cpus = [c for _, c in runs[name]]
        print(f"  {name:14s}: median wall {statistics.median(walls):.3f} s, median cpu {statistics.median(cpus):.3f} s")
    warm = runs.get("this warm") or runs["this cold"]
    wall = statistics.median(w for w, _ in warm)
    cpu = statistics.median(c for _, c in warm)
    print(
        f"target: fresh CLI on {a.mb:g} MB <= {TARGET_S:.1f} s: warm median wall {wall:.3f} s, cpu {cpu:.3f} s "
        f"({'met' if wall <= TARGET_S else 'NOT met'} by wall, {'met' if cpu <= TARGET_S else 'NOT met'} by cpu)"
    )
    if "baseline warm" in runs:
        base = statistics.median(w for w, _ in runs["baseline warm"])
        base_cpu = statistics.median(c for _, c in runs["baseline warm"])
        print(f"vs baseline (warm medians): wall {base / wall:.2f}x faster, cpu {base_cpu / cpu:.2f}x faster")
    print(f"load average after {_load()}")
    return 0


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
