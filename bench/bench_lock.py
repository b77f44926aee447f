"""How long does `build_lock` take on this machine? (not a unit test: figures vary with the machine)

Each case runs in a fresh interpreter so nothing is cached between them:

* ``no-ml``: the ML stack is not imported (torch, when installed, is listed from metadata only);
  target < 1 s.
* ``torch-imported``: the process imported torch before taking the lock (what the pytest plugin sees
  in a torch test suite); the import itself is timed separately, the lock is the figure; target < 3 s.
* ``include-torch``: a fresh process asks for torch's build facts (``include=["torch"]``), so the lock
  pays for ``import torch``; target < 3 s.
* ``cli``: the whole ``faildiag lock --out -`` command, interpreter start-up included.

    .venv/bin/python bench/bench_lock.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time

CASES = {
    "no-ml": ("", "build_lock()", 1.0),
    "torch-imported": ("import torch", "build_lock()", 3.0),
    "include-torch": ("", "build_lock(include=['torch'])", 3.0),
}
CHILD = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
{pre}
t1 = time.perf_counter()
from pytest_faildiag.capture.envlock import build_lock
lock = {call}
t2 = time.perf_counter()
print(json.dumps({{"pre_s": t1 - t0, "lock_s": t2 - t1, "packages": len(lock["packages"]),
                  "torch_imported": "torch" in sys.modules, "probes": lock["probes"]}}))
"""


def run_case(pre: str, call: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(pre=pre, call=call)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    has_torch = importlib.util.find_spec("torch") is not None
    print(f"python {sys.version.split()[0]}  torch installed: {has_torch}  repeats: {args.repeat}")
    print(f"{'case':16} {'median s':>9} {'max s':>7} {'target s':>9} {'ratio':>6}  notes")
    for name, (pre, call, target) in CASES.items():
        if "torch" in name and not has_torch:
            print(f"{name:16} {'-':>9} {'-':>7} {target:>9.1f} {'-':>6}  torch not installed")
            continue
        runs = [run_case(pre, call) for _ in range(args.repeat)]
        lock_s = [r["lock_s"] for r in runs]
        med = statistics.median(lock_s)
        slowest = max(runs[-1]["probes"].items(), key=lambda kv: kv[1].get("seconds", 0))
        notes = f"{runs[-1]['packages']} pkgs, slowest probe {slowest[0]} {slowest[1].get('seconds', 0):.3f}s"
        if pre:
            notes += f", `{pre}` took {statistics.median(r['pre_s'] for r in runs):.2f}s before"
        print(f"{name:16} {med:9.3f} {max(lock_s):7.3f} {target:9.1f} {med / target:6.2f}  {notes}")
    walls = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pytest_faildiag.cli", "lock", "--out", "-"], capture_output=True, check=True
        )
        walls.append(time.perf_counter() - t)
    med = statistics.median(walls)
    print(
        f"{'cli (wall)':16} {med:9.3f} {max(walls):7.3f} {1.0:9.1f} {med:6.2f}  whole command, interpreter start included"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
