"""Overhead of ``pytest --faildiag`` on a suite that passes: 1,000 passing tests, side by side.

Runs ``pytest -p no:faildiag`` (the plugin not even loaded) and ``pytest --faildiag`` alternately, each
in a fresh process, several times, and prints the median wall time of each and their ratio. The target
is a ratio of at most 1.05: passing tests must cost one journal line, no environment lock, no engine.

    .venv/bin/python bench/bench_plugin_overhead.py [--tests 1000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_suite(root: Path, n_tests: int, per_file: int = 100) -> None:
    for f in range((n_tests + per_file - 1) // per_file):
        count = min(per_file, n_tests - f * per_file)
        body = "".join(f"def test_{f}_{i}():\n    assert {i} + 1 == {i + 1}\n\n\n" for i in range(count))
        (root / f"test_suite_{f:03d}.py").write_text(body, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def child_env(pycache: Path) -> dict[str, str]:
    """Byte-code caching as users have it (this sandbox sets PYTHONDONTWRITEBYTECODE, which would charge the
    plugin's compile time to every run), with the cache in a temporary folder, not in the source tree."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run_once(root: Path, extra: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the child) of one fresh pytest process. CPU time is the
    figure compared: on a shared machine wall time mostly measures the neighbours."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *extra, str(root)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=child_env(root / ".pycache"))
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark suite failed ({' '.join(extra)}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="faildiag-bench-") as tmp:
        root = Path(tmp)
        make_suite(root, args.tests)
        (root / ".pycache").mkdir()
        plain_args = ["-p", "no:faildiag"]
        diag_args = ["--faildiag", "--faildiag-out", str(root / "out")]
        run_once(root, plain_args)  # warm the file cache and the byte-code cache
        run_once(root, diag_args)
        plain, diag = [], []
        for _ in range(args.runs):
            plain.append(run_once(root, plain_args))
            diag.append(run_once(root, diag_args))
        pw, dw = statistics.median(w for w, _ in plain), statistics.median(w for w, _ in diag)
        pc, dc = statistics.median(c for _, c in plain), statistics.median(c for _, c in diag)
        print(f"{args.tests} passing tests, {args.runs} interleaved runs each, fresh process per run")
        print(f"  pytest -p no:faildiag : median CPU {pc:.3f}s  wall {pw:.3f}s")
        print(f"  pytest --faildiag     : median CPU {dc:.3f}s  wall {dw:.3f}s")
        pm, dm = min(c for _, c in plain), min(c for _, c in diag)
        print(
            f"  ratio --faildiag / plain: CPU {dc / pc:.3f}  wall {dw / pw:.3f}  (target <= 1.05, on median CPU time)"
        )
        print(f"  ratio of the fastest runs (least disturbed by neighbours): CPU {dm / pm:.3f}")
        return 0 if dc / pc <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
