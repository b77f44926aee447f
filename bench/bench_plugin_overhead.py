"""Overhead of ``pytest --faildiag`` on a suite that passes: 1,000 passing tests, side by side.

Each repetition runs, each in a fresh process and in an order that rotates from one repetition to the next:

* ``plain``: ``pytest -p no:faildiag`` (the plugin not even loaded);
* ``warm``: ``pytest --faildiag`` into the same output folder every time (the previous session's journal is
  there to check, as on a developer's machine);
* ``cold``: ``pytest --faildiag`` into a fresh output folder (a CI job's first session);
* ``norerun``: ``warm`` with ``FAILDIAG_RERUN=0``: reruns only touch failures, so on a passing suite it
  must cost the same as ``warm``.

Every run is printed. The figure compared is CPU time (user + system of pytest and its children, git
included): on a shared machine wall time mostly measures the neighbours. Each variant's ratio is the median
of its per-repetition ratios to the ``plain`` run of the same repetition (neighbours in time share the
machine's state); the ratio of the medians is printed beside it. The suite is a git repository with one
commit, as a project is (a green session records its revision). Target: <= 1.03.

``--instructions`` counts instead what the pytest process executes, under valgrind (``cachegrind``
without its cache model; fixed hash seed; one run per variant, the counts repeat to the last few hundred
thousand): a figure the neighbours on a shared machine cannot move, for comparing two versions of the
plugin. It leaves out what children (git) and the kernel (the journal's ``write`` calls, ``fsync``) spend.

    .venv/bin/python bench/bench_plugin_overhead.py [--tests 1000] [--runs 9] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.03
VARIANTS = ("plain", "warm", "cold", "norerun")


def make_suite(root: Path, n_tests: int, per_file: int = 100) -> None:
    for f in range((n_tests + per_file - 1) // per_file):
        count = min(per_file, n_tests - f * per_file)
        body = "".join(f"def test_{f}_{i}():\n    assert {i} + 1 == {i + 1}\n\n\n" for i in range(count))
        (root / f"test_suite_{f:03d}.py").write_text(body, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def make_git(root: Path) -> bool:
    """One commit of the suite, so a green session finds a revision to record (as in any project)."""
    if shutil.which("git") is None:
        return False
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    (root / ".gitignore").write_text(".pycache/\nout*/\n", encoding="utf-8")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "suite"]):
        if subprocess.run(cmd, cwd=root, env=env, capture_output=True).returncode != 0:
            return False
    return True


def child_env(pycache: Path, variant: str) -> dict[str, str]:
    """Byte-code caching as users have it (this sandbox sets PYTHONDONTWRITEBYTECODE, which would charge the
    plugin's compile time to every run), with the cache in a temporary folder, not in the source tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "FAILDIAG_RERUN")}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    if variant == "norerun":
        env["FAILDIAG_RERUN"] = "0"
    return env


def run_once(root: Path, variant: str, rep: int) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the child and what it waited for) of one pytest process."""
    extra = ["-p", "no:faildiag"]
    if variant != "plain":
        out = root / (f"out-cold-{rep}" if variant == "cold" else "out")
        extra = ["--faildiag", f"--faildiag-out={out}"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *extra, str(root)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=child_env(root / ".pycache", variant))
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark suite failed ({variant}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def instructions(root: Path, variant: str) -> int:
    """Instructions the pytest process of ``variant`` executes (valgrind's ``I refs``)."""
    extra = ["-p", "no:faildiag"] if variant == "plain" else ["--faildiag", f"--faildiag-out={root / 'out'}"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *extra, str(root)]
    env = {**child_env(root / ".pycache", variant), "PYTHONHASHSEED": "0"}
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    proc = subprocess.run([*valgrind, *cmd], cwd=root, capture_output=True, text=True, env=env)
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed ({variant}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def count_instructions(root: Path) -> int:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    counts = {v: instructions(root, v) for v in ("plain", "warm", "norerun")}
    for variant, n in counts.items():
        print(f"{variant:>8}: {n / 1e6:,.1f}M instructions  ratio to plain {n / counts['plain']:.4f}", flush=True)
    print("(the pytest process only: git and the kernel's work are not counted)")
    return 0 if counts["warm"] / counts["plain"] <= TARGET else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=9, help="repetitions (pairs with plain); at least 9 for the target")
    ap.add_argument("--instructions", action="store_true", help="count instructions under valgrind instead")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="faildiag-bench-") as tmp:
        root = Path(tmp)
        make_suite(root, args.tests)
        git = make_git(root)
        (root / ".pycache").mkdir()
        for variant in VARIANTS:  # warm the file cache and the byte-code cache (not counted)
            run_once(root, variant, -1)
        if args.instructions:
            return count_instructions(root)
        runs: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
        print(f"{args.tests} passing tests, {args.runs} repetitions, fresh process per run, git repository: {git}")
        print("rep  " + "  ".join(f"{v:>16}" for v in VARIANTS) + "   CPU ratios to plain")
        for rep in range(args.runs):
            order = VARIANTS[rep % len(VARIANTS) :] + VARIANTS[: rep % len(VARIANTS)]  # rotate: no fixed slot
            for variant in order:
                runs[variant].append(run_once(root, variant, rep))
            cells = "  ".join(f"{runs[v][-1][1]:6.3f}s/{runs[v][-1][0]:6.3f}w" for v in VARIANTS)
            ratios = " ".join(f"{v} {runs[v][-1][1] / runs['plain'][-1][1]:.3f}" for v in VARIANTS[1:])
            print(f"{rep + 1:>3}  {cells}   {ratios}  (order {','.join(order)})", flush=True)
    ok = True
    plain_cpu = [c for _, c in runs["plain"]]
    print(f"median CPU plain: {statistics.median(plain_cpu):.3f}s")
    for variant in VARIANTS[1:]:
        cpu = [c for _, c in runs[variant]]
        paired = statistics.median(c / p for c, p in zip(cpu, plain_cpu, strict=True))
        of_medians = statistics.median(cpu) / statistics.median(plain_cpu)
        wall = statistics.median(w for w, _ in runs[variant]) / statistics.median(w for w, _ in runs["plain"])
        verdict = "OK" if paired <= TARGET else "OVER"
        print(
            f"{variant:>8}: median CPU {statistics.median(cpu):.3f}s; ratio to plain: median of pairs {paired:.3f} "
            f"({verdict}, target <= {TARGET}), of medians {of_medians:.3f}, wall {wall:.3f}"
        )
        ok = ok and paired <= TARGET
    if args.runs < 9:
        print("note: fewer than 9 repetitions: not a measurement of the target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
