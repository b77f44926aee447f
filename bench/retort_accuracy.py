"""Agreement of ``faildiag retort diagnose`` with the causes retort's maintainers documented (dev set).

The dev set (``bench/retort_dev_labels.json``) labels cause groups of the ODD-numbered experiments only, each
with the write-up sentence it rests on; the even-numbered half is held out and measured elsewhere, so nothing
here may be tuned on it. A group agrees when most of its labelled runs get an acceptable verdict (and the
documented subtype, where one is given); a labelled run with no verdict entry counts against it, because a
run the operator asks about and gets nothing for is the failure this bench exists to catch.

    python bench/retort_accuracy.py --archive RETORT_CHECKOUT [--out DIR] [--no-run-tests] [--install-deps] [--jobs 2]

A second pass with the same ``--out`` reuses the first pass's reruns (``OUT/.rerun-cache``, keyed by folder
content and options), so only the first pass pays for them.
    python bench/retort_accuracy.py --diagnosis OUT/retort-diagnosis.json [--root-prefix adrianco/]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LABELS = HERE / "retort_dev_labels.json"


@dataclass
class GroupScore:
    id: str
    matched: int
    labelled: int
    agree: int
    subtype_agree: int
    got: list[str]

    @property
    def agrees(self) -> bool:
        """On the verdict (the cause group: harness, environment, genuine)."""
        return self.labelled > 0 and self.agree * 2 > self.labelled

    @property
    def agrees_strictly(self) -> bool:
        """On the verdict and, where the write-up names one, the subtype."""
        return self.labelled > 0 and self.subtype_agree * 2 > self.labelled


def _cell_has(cell: str, key: str, value: str) -> bool:
    return re.search(rf"(^|[_/]){re.escape(key)}={re.escape(value)}($|[_/])", cell) is not None


def _split(run: str) -> tuple[str, str, str] | None:
    """(experiment path, cell path, rep folder) of a diagnosed run path."""
    m = re.fullmatch(r"(.+?)/runs/(.+)/(rep\d+(?:-failed)?)", run)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def _matches(run: str, exp: str, spec: dict[str, Any]) -> bool:
    parts = _split(run)
    if parts is None or parts[0] != exp:
        return False
    _, cell, rep = parts
    m = re.fullmatch(r"rep(\d+)(-failed)?", rep)
    if not m or int(m.group(1)) != int(spec["rep"]):
        return False
    folder = spec.get("folder", "any")
    if folder == "failed" and not m.group(2) or folder == "plain" and m.group(2):
        return False
    return all(_cell_has(cell, k, str(v)) for k, v in spec["cell"].items())


def score(runs: list[dict[str, Any]], groups: list[dict[str, Any]]) -> list[GroupScore]:
    out: list[GroupScore] = []
    for g in groups:
        exp = g["experiment"]
        if g["runs"] == "all-failed-db-rows":
            picked = [r for r in runs if (_split(r["run"]) or ("",))[0] == exp]
            labelled = max(len(picked), 1)
        else:
            picked = []
            for spec in g["runs"]:
                hits = [r for r in runs if _matches(r["run"], exp, spec)]
                # one verdict per labelled attempt: prefer the folder named in the spec, else the first hit
                picked += hits[:1] if spec.get("folder", "any") != "any" else hits[:1]
            labelled = len(g["runs"])
        ok = [r for r in picked if r["verdict"] in g["verdicts"]]
        sub_ok = [r for r in ok if not g.get("subtype") or r["subtype"] == g["subtype"]]
        out.append(
            GroupScore(
                g["id"],
                len(picked),
                labelled,
                len(ok),
                len(sub_ok),
                [f"{r['verdict']}/{r['subtype']}" for r in picked],
            )
        )
    return out


def _load_runs(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text())
    return data["runs"] if isinstance(data, dict) else data


def _run_cli(
    archive: Path, out: Path, no_tests: bool, jobs: int, timeout: float, install_deps: bool = False
) -> tuple[list[dict[str, Any]], float]:
    root = archive / "experiments" if (archive / "experiments").is_dir() else archive
    cmd = [
        sys.executable,
        "-m",
        "pytest_faildiag.cli",
        "retort",
        "diagnose",
        "--experiment-dir",
        str(root),
        "--format",
        "json",
        "--out",
        str(out),
        "--jobs",
        str(jobs),
        "--test-timeout",
        str(timeout),
    ]
    if no_tests:
        cmd.append("--no-run-tests")
    if install_deps:
        cmd.append("--install-deps")
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"diagnose failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)["runs"], wall


def report(scores: list[GroupScore], title: str) -> str:
    lines = [f"== {title}"]
    for s in scores:
        mark = "AGREE" if s.agrees else "disagree"
        lines.append(
            f"  {mark:8} {s.id}: {s.agree}/{s.labelled} runs ({s.matched} found) got {', '.join(s.got) or '-'}"
        )
    groups = sum(1 for s in scores if s.agrees)
    runs = sum(s.agree for s in scores)
    labelled = sum(s.labelled for s in scores)
    strict = sum(1 for s in scores if s.agrees_strictly)
    lines.append(
        f"  groups agreeing on verdict and documented subtype: {strict}/{len(scores)}; runs: "
        f"{sum(s.subtype_agree for s in scores)}/{labelled}"
    )
    lines.append(
        f"  groups agreeing on the verdict: {groups}/{len(scores)} ({groups / max(len(scores), 1):.0%}); "
        f"runs agreeing: {runs}/{labelled}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--diagnosis", action="append", default=[], help="retort-diagnosis.json or JSON stdout (repeat: before, after)"
    )
    ap.add_argument("--archive", help="a checkout of adrianco/retort: run the diagnosis now")
    ap.add_argument("--out", default="faildiag-out/retort-bench")
    ap.add_argument("--no-run-tests", action="store_true")
    ap.add_argument("--install-deps", action="store_true", help="let reruns install declared deps (network)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--test-timeout", type=float, default=60.0)
    args = ap.parse_args(argv)
    groups = json.loads(LABELS.read_text())["groups"]
    for path in args.diagnosis:
        print(report(score(_load_runs(Path(path)), groups), path))
    if args.archive:
        runs, wall = _run_cli(
            Path(args.archive), Path(args.out), args.no_run_tests, args.jobs, args.test_timeout, args.install_deps
        )
        print(report(score(runs, groups), f"this checkout ({len(runs)} verdict entries, wall {wall:.0f}s)"))
    if not args.diagnosis and not args.archive:
        ap.error("give --diagnosis FILE and/or --archive DIR")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
