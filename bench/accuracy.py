"""Accuracy of the knowledge base over every labelled log the project holds (run on demand, not in CI).

Two kinds of labelled evidence are read:

* ``tests/data/corpus/gpu/<case>/``: real GPU runs (stdout.txt, stderr.txt, rc.txt, cmd.txt, artifacts such
  as a flight-recorder .pkl) with ``label.json`` = {type, stage, cause_group, ...};
* ``tests/data/kb/<family>/<name>.log``: real log excerpts from public issue threads with ``<name>.json`` =
  {type, stage, category, exit_code, source_url}.

For each one the engine is run on the evidence only (never the label, never the failing script), and the
report's profile type and ranked causes are compared with the label. Printed: one row per miss (every row
with --verbose), then type accuracy, stage accuracy and category top-1 / top-3, overall, per source and per
labelled set (``"set": "heldout"`` marks logs collected after the rules were written and scored before any
rule was changed for them), with the bar the project holds itself to on unseen logs (top-3 >= 80 %,
top-1 >= 65 %).

    .venv/bin/python bench/accuracy.py [--verbose] [--log-only] [ROOT ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVIDENCE_SUFFIXES = (".pkl",)
EVIDENCE_NAMES = {"stdout.txt", "stderr.txt", "junit.xml"}
BAR_TOP3, BAR_TOP1 = 0.80, 0.65


@dataclass
class Case:
    name: str
    source: str  # "corpus" or "kb"
    files: list[Path]
    label: dict
    exit_code: int | None
    command: str | None

    @property
    def category(self) -> str:
        return self.label.get("category") or self.label.get("cause_group") or ""


def corpus_cases(root: Path) -> list[Case]:
    out = []
    for d in sorted(p for p in root.iterdir() if (p / "label.json").is_file()):
        files = [f for f in sorted(d.iterdir()) if f.name in EVIDENCE_NAMES or f.suffix in EVIDENCE_SUFFIXES
                 or (f.suffix == ".json" and f.name != "label.json")]
        rc = (d / "rc.txt").read_text().strip() if (d / "rc.txt").is_file() else None
        cmd = (d / "cmd.txt").read_text().strip() if (d / "cmd.txt").is_file() else None
        out.append(Case(d.name, "corpus", files, json.loads((d / "label.json").read_text()),
                        int(rc) if rc not in (None, "") else None, cmd))
    return out


def kb_cases(root: Path) -> list[Case]:
    out = []
    for log in sorted(root.rglob("*.log")):
        meta = log.with_suffix(".json")
        if not meta.is_file():
            continue
        label = json.loads(meta.read_text())
        out.append(Case(f"{log.parent.name}/{log.stem}", "kb", [log], label, label.get("exit_code"), label.get("command")))
    return out


def all_cases(roots: list[Path]) -> list[Case]:
    cases: list[Case] = []
    for r in roots:
        if not r.is_dir():
            continue
        if any((p / "label.json").is_file() for p in r.iterdir() if p.is_dir()):
            cases += corpus_cases(r)
        else:
            cases += kb_cases(r)
    return cases


def evaluate(case: Case, log_only: bool = False) -> dict:
    from pytest_faildiag.engine.api import diagnose

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if log_only:  # what a scorer that hands over only the log text sees: no exit status, no command
            diag = diagnose([str(f) for f in case.files])
        else:
            diag = diagnose([str(f) for f in case.files], exit_code=case.exit_code, command=case.command)
    cats = [c.category for c in diag.root_causes]
    return {
        "type_ok": diag.profile.type == case.label.get("type"),
        "stage_ok": diag.profile.stage == case.label.get("stage"),
        "top1": bool(cats) and cats[0] == case.category,
        "top3": case.category in cats[:3],
        "got": f"{diag.profile.type}/{diag.profile.stage} {','.join(cats[:3])}",
        "want": f"{case.label.get('type')}/{case.label.get('stage')} {case.category}",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("roots", nargs="*", type=Path,
                    default=[REPO / "tests/data/corpus/gpu", REPO / "tests/data/kb"])
    ap.add_argument("--verbose", "-v", action="store_true", help="print every case, not only the misses")
    ap.add_argument("--log-only", action="store_true",
                    help="hand the engine the logs alone (no exit status, no command), as a JSONL scorer does")
    a = ap.parse_args(argv)
    cases = all_cases(a.roots)
    if not cases:
        print("no labelled logs found", file=sys.stderr)
        return 2
    totals: dict[str, list[int]] = {}
    for case in cases:
        r = evaluate(case, a.log_only)
        keys = ["all", case.source] + ([f"set:{case.label['set']}"] if case.label.get("set") else [])
        for key in keys:
            t = totals.setdefault(key, [0, 0, 0, 0, 0])
            t[0] += 1
            t[1] += r["type_ok"]
            t[2] += r["stage_ok"]
            t[3] += r["top1"]
            t[4] += r["top3"]
        miss = not (r["type_ok"] and r["top1"])
        if a.verbose or miss:
            mark = "  " if not miss else "✗ "
            print(f"{mark}{case.source:6} {case.name:44} got {r['got']:58} want {r['want']}")
    print()
    for key, (n, ty, st, t1, t3) in totals.items():
        print(f"{key:11} {n:3} logs: type {ty / n:6.1%}  stage {st / n:6.1%}  category top-1 {t1 / n:6.1%}  top-3 {t3 / n:6.1%}")
    n, _, _, t1, t3 = totals["all"]
    print(f"bar on unseen logs: top-3 >= {BAR_TOP3:.0%} (here {t3 / n:.1%}), top-1 >= {BAR_TOP1:.0%} (here {t1 / n:.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
