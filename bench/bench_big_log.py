"""Throughput and memory of `faildiag diagnose` on a large multi-rank log, side by side with grep.

    python bench/bench_big_log.py [--mb 1024] [--dir DIR] [--repeat 3]

Writes one noise log (the real error near the end) into DIR (a temp folder by default), then times
`grep -E` over it with the rule set's literal keywords and `faildiag diagnose` on it, alternating, and
prints the median ratio and faildiag's peak RSS. Targets (issue 10): ratio <= 5, peak RSS < 200 MB.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.make_noise_log import write  # noqa: E402
from pytest_faildiag.rules import load_ruleset  # noqa: E402


def _peak_child_rss_mb(before: int) -> float:
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(after, before) / 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(a.dir or tempfile.mkdtemp(prefix="faildiag-bench-"))
    log = tmp / f"noise{a.mb}.log"
    if not log.exists():
        t = time.perf_counter()
        write(log, a.mb)
        print(f"wrote {log} ({log.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f} s")
    rs = load_ruleset()
    keywords = sorted({k for r in rs.rules for k in r.keywords})
    pattern = "|".join(re.sub(r"([\\.\[\]()*+?{}|^$])", r"\\\1", k) for k in keywords)
    grep_t, diag_t = [], []
    peak = 0.0
    for _ in range(a.repeat):
        t = time.perf_counter()
        subprocess.run(["grep", "-a", "-c", "-E", "-e", pattern, str(log)], capture_output=True, env={"LC_ALL": "C"})
        grep_t.append(time.perf_counter() - t)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t = time.perf_counter()
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest_faildiag.cli",
                "diagnose",
                str(log),
                "--format",
                "json",
                "--out",
                str(tmp / "out"),
            ],
            capture_output=True,
        )
        diag_t.append(time.perf_counter() - t)
        peak = max(peak, _peak_child_rss_mb(before))
        assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    g, d = statistics.median(grep_t), statistics.median(diag_t)
    print(f"log: {log.stat().st_size / 2**20:.0f} MiB, {len(keywords)} rule keywords")
    print(
        f"grep -E keywords: median {g:.2f} s   faildiag diagnose: median {d:.2f} s   ratio {d / g:.2f}x (target <= 5x)"
    )
    print(f"peak RSS of faildiag diagnose: {peak:.0f} MB (target < 200 MB)")
    print(f"diagnosis: {report['summary']}")
    print(f"first failure: {report['profile']['first_failure']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
