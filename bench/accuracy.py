"""Accuracy of the knowledge base over every labelled log the project holds (run on demand, not in CI).

Three kinds of labelled evidence are read:

* ``tests/data/corpus/gpu/<case>/``: real GPU runs (stdout.txt, stderr.txt, rc.txt, cmd.txt, artifacts such
  as a flight-recorder .pkl) with ``label.json`` = {type, stage, cause_group, ...};
* ``tests/data/kb/<family>/<name>.log``: real log excerpts from public issue threads with ``<name>.json`` =
  {type, stage, category, exit_code, source_url}; the rules were tuned on these (train).
* ``tests/data/corpus/threads/<family>/<name>.log``: real logs from public threads gathered for the honest
  protocol, each assigned once to ``train`` or the frozen ``dev`` set by ``bench/split_corpus.py``
  (``split.json``). Dev logs are never used to write or tune a rule; neither are ``calib`` logs, which only
  fit the confidence calibration (``bench/calibrate.py``).

For each one the engine is run on the evidence only (never the label, never the failing script), and the
report's profile type and ranked causes are compared with the label. Printed: one row per miss (every row
with --verbose), then type accuracy, stage accuracy and category top-1 / top-3, overall, per source and per
labelled set (``"set": "heldout"`` marks logs collected after the rules were written and scored before any
rule was changed for them), per split and per family/stack of the thread corpus, and a reliability table
(the top cause's confidence against how often it is right, in bands of 10 points).

    .venv/bin/python bench/accuracy.py [--verbose] [--log-only] [--split dev|train] [ROOT ...]

``--verbose`` prints every case; misses of dev and calib logs are printed only as counts unless
``--show-dev`` is given, so that reading the output does not turn them into training material. Logs whose
label says when they were ``gathered`` are also totalled per batch (``batch:<date>``): scored before any rule
saw them, that row is the figure on logs the project had never held.
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
BAR_TOP3, BAR_TOP1 = 0.90, 0.70
FROZEN = ("dev", "calib")  # splits no rule is written or tuned for
THREADS = REPO / "tests/data/corpus/threads"


@dataclass
class Case:
    name: str
    source: str  # "corpus", "kb" or "threads"
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
        files = [
            f
            for f in sorted(d.iterdir())
            if f.name in EVIDENCE_NAMES
            or f.suffix in EVIDENCE_SUFFIXES
            or (f.suffix == ".json" and f.name != "label.json")
        ]
        rc = (d / "rc.txt").read_text().strip() if (d / "rc.txt").is_file() else None
        cmd = (d / "cmd.txt").read_text().strip() if (d / "cmd.txt").is_file() else None
        out.append(
            Case(
                d.name,
                "corpus",
                files,
                json.loads((d / "label.json").read_text()),
                int(rc) if rc not in (None, "") else None,
                cmd,
            )
        )
    return out


def log_cases(root: Path, pattern: str = "**/*.log", source: str = "kb") -> list[Case]:
    """Every ``<name>.log`` with a ``<name>.json`` label beside it, named ``<folder>/<name>``."""
    out = []
    for log in sorted(root.glob(pattern)):
        meta = log.with_suffix(".json")
        if meta.is_file():
            label = json.loads(meta.read_text())
            out.append(
                Case(
                    f"{log.parent.name}/{log.stem}", source, [log], label, label.get("exit_code"), label.get("command")
                )
            )
    return out


def thread_cases(root: Path) -> list[Case]:
    """The thread corpus: each log's split from ``split.json``, its contamination from ``contaminated.json``."""
    manifest = root / "split.json"
    split = json.loads(manifest.read_text())["split"] if manifest.is_file() else {}
    tainted_file = root / "contaminated.json"
    tainted = json.loads(tainted_file.read_text())["dev"] if tainted_file.is_file() else {}
    cases = log_cases(root, "*/*.log", "threads")
    for case in cases:
        case.label["set"] = split.get(case.name, "unsplit")
        case.label["contaminated"] = case.name in tainted
        case.label.setdefault("family", case.files[0].parent.name)
    return cases


def all_cases(roots: list[Path]) -> list[Case]:
    cases: list[Case] = []
    for r in roots:
        if not r.is_dir():
            continue
        if (r / "split.json").is_file() or r.resolve() == THREADS.resolve():
            cases += thread_cases(r)
        elif any((p / "label.json").is_file() for p in r.iterdir() if p.is_dir()):
            cases += corpus_cases(r)
        else:
            cases += log_cases(r)
    return cases


OWN = ("differential", "fallback", "stuck_frame")  # causes the reasoning gives, not a rule


def evaluate(case: Case, log_only: bool = False) -> dict:
    from pytest_faildiag.engine.api import diagnose

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if log_only:  # what a scorer that hands over only the log text sees: no exit status, no command
            diag = diagnose([str(f) for f in case.files])
        else:
            diag = diagnose([str(f) for f in case.files], exit_code=case.exit_code, command=case.command)
    cats = [c.category for c in diag.root_causes]
    conf = diag.root_causes[0].confidence if diag.root_causes else 0.0
    return {
        "conf": conf,
        "type_ok": diag.profile.type == case.label.get("type"),
        "stage_ok": diag.profile.stage == case.label.get("stage"),
        "top1": bool(cats) and cats[0] == case.category,
        "first": cats[0] if cats else "-",
        "top3": case.category in cats[:3],
        "got": f"{diag.profile.type}/{diag.profile.stage} {','.join(cats[:3])}",
        # what put the top cause first: a rule that matched the evidence, or the reasoning alone (no rule knew it)
        "by": "none" if not cats else "reasoning" if diag.root_causes[0].rule.startswith(OWN) else "rule",
        "want": f"{case.label.get('type')}/{case.label.get('stage')} {case.category}",
    }


def _leave_out(names: set[str]) -> None:
    from pytest_faildiag import rules

    builtin = rules._builtin_packs
    rules._builtin_packs = lambda: [(n, t) for n, t in builtin() if n not in names]  # type: ignore[assignment]
    # the on-disk cache of the built-in packs is keyed by their files' stamps, which still list the packs
    # left out: without this the reduced rule set is stored under the full set's key, and every later
    # process of this checkout diagnoses without those packs. Keyed by content instead, the two differ.
    rules._builtin_stamps = lambda: None  # type: ignore[assignment]
    rules._default_ruleset_cached.cache_clear()


def reliability(rows: list[tuple[float, bool]]) -> list[str]:
    """Bands of the top cause's confidence: how many logs, mean confidence, how often right."""
    out = ["  band      logs  mean conf  top-1 right  gap"]
    for lo in range(0, 100, 10):
        band = [(c, ok) for c, ok in rows if lo <= round(c * 100, 6) < lo + 10 or (lo == 90 and c >= 1.0)]
        if not band:
            continue
        mean = sum(c for c, _ in band) / len(band)
        acc = sum(ok for _, ok in band) / len(band)
        flag = "" if len(band) < 15 else ("  ok" if abs(mean - acc) <= 0.10 else "  OFF")
        out.append(f"  {lo:3d}-{lo + 10:3d}%  {len(band):4d}  {mean:8.1%}  {acc:10.1%}  {acc - mean:+6.1%}{flag}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "roots", nargs="*", type=Path, default=[REPO / "tests/data/corpus/gpu", REPO / "tests/data/kb", THREADS]
    )
    ap.add_argument("--verbose", "-v", action="store_true", help="print every case, not only the misses")
    ap.add_argument(
        "--log-only",
        action="store_true",
        help="hand the engine the logs alone (no exit status, no command), as a JSONL scorer does",
    )
    ap.add_argument("--split", choices=["dev", "train", "calib"], help="score only this split of the thread corpus")
    ap.add_argument("--show-dev", action="store_true", help="also print dev and calib misses (do not tune on them)")
    ap.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="PACK",
        help="leave a built-in pack out (e.g. 15-cuda-nccl-catalogue.toml): the figure before a knowledge change",
    )
    a = ap.parse_args(argv)
    if a.without:
        _leave_out(set(a.without))
    cases = all_cases(a.roots)
    if a.split:
        cases = [c for c in cases if c.source == "threads" and c.label.get("set") == a.split]
    if not cases:
        print("no labelled logs found", file=sys.stderr)
        return 2
    totals: dict[str, list[int]] = {}
    calib: dict[str, list[tuple[float, bool]]] = {}
    for case in cases:
        r = evaluate(case, a.log_only)
        split = case.label.get("set")
        keys = ["all", case.source] + ([f"set:{split}"] if split else [])
        if case.source == "threads":
            keys += [f"{split}:family:{case.label.get('family')}", f"{split}:stack:{case.label.get('stack')}"]
            if split == "dev" and not case.label.get("contaminated"):
                keys.append("dev:uncontaminated")
            if case.label.get("gathered"):
                keys.append(f"batch:{case.label['gathered']}")
            keys.append(f"{split}:first-by:{r['by']}")
        for key in keys:
            t = totals.setdefault(key, [0, 0, 0, 0, 0])
            t[0] += 1
            t[1] += r["type_ok"]
            t[2] += r["stage_ok"]
            t[3] += r["top1"]
            t[4] += r["top3"]
        group = split if case.source == "threads" else "tuned (in-sample)"
        calib.setdefault(group, []).append((r["conf"], r["top1"]))
        miss = not (r["type_ok"] and r["top1"])
        if (a.verbose or miss) and (split not in FROZEN or a.show_dev):
            mark = "  " if not miss else "✗ "
            print(f"{mark}{case.source:7} {case.name:52} got {r['got']:58} want {r['want']}")
    print()
    for key, (n, ty, st, t1, t3) in totals.items():
        print(
            f"{key:28} {n:3} logs: type {ty / n:6.1%}  stage {st / n:6.1%}  category top-1 {t1 / n:6.1%}  top-3 {t3 / n:6.1%}"
        )
    for name, rows in calib.items():
        print(
            f"\nreliability ({name}; confidence of the top cause vs. top-1 right; OFF = more than 10 points apart in a band of >= 15 logs)"
        )
        print("\n".join(reliability(rows)))
    key = "set:dev" if "set:dev" in totals else "all"
    n, ty, _, t1, t3 = totals[key]
    print(
        f"\nbar ({key}): type >= 85% (here {ty / n:.1%}), top-1 >= {BAR_TOP1:.0%} (here {t1 / n:.1%}), "
        f"top-3 >= {BAR_TOP3:.0%} (here {t3 / n:.1%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
