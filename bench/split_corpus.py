"""Assign each newly gathered thread log to train or the frozen dev set, once, and never again.

The split is stratified by family (the stack groups of ``tests/data/corpus/threads/<family>/``): within a
family, logs are ordered by the SHA-256 of their id and the first ``max(MIN_DEV, DEV_SHARE × n)`` go to dev.
The result is written to ``tests/data/corpus/threads/split.json``; ids already there keep their split, so
adding logs later never moves an old one. Dev logs are never used to write or tune a rule, and are not
must-pass tests: ``bench/accuracy.py`` scores them, and each knowledge change's commit message carries the
dev figure before and after.

``--rest calib`` sends a batch's non-dev logs to a third split, ``calib``, instead of ``train``: logs that no
rule is ever written or tuned for either, scored only to fit the confidence calibration
(``bench/calibrate.py``). A curve fitted on train is fitted where the rules were tuned and is over-confident
on anything new; one fitted on logs the rules never saw is not.

``--promote-calib SHARE`` moves that share of each family's calib logs (ordered by the same hash, not by
what they say) to train, once, when the rules have exhausted what train teaches: those logs were scored when
they landed (their ``batch:`` rows in the commit that added them are the unseen figure), the rest of calib
still fits the curve, and dev is never touched. Each promoted id is recorded under ``promoted`` with the date.

    .venv/bin/python bench/split_corpus.py [--dry-run] [--rest train|calib] [--promote-calib SHARE --on DATE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
THREADS = REPO / "tests/data/corpus/threads"
MANIFEST = THREADS / "split.json"
DEV_SHARE = 0.45
MIN_DEV = 10


def _key(case_id: str) -> str:
    return hashlib.sha256(case_id.encode()).hexdigest()


def gathered(root: Path = THREADS) -> dict[str, list[str]]:
    """family → ids of the labelled logs on disk."""
    out: dict[str, list[str]] = {}
    for meta in sorted(root.glob("*/*.json")):
        if meta.with_suffix(".log").is_file():
            out.setdefault(meta.parent.name, []).append(f"{meta.parent.name}/{meta.stem}")
    return out


def assign(families: dict[str, list[str]], manifest: dict[str, str], rest: str = "train") -> dict[str, str]:
    """New ids get a split; existing ones keep theirs. Per family, dev is topped up to its share, the others
    go to ``rest`` (``train`` or ``calib``)."""
    out = dict(manifest)
    for _family, ids in families.items():
        new = sorted((i for i in ids if i not in out), key=_key)
        if not new:
            continue
        n = len(ids)
        want_dev = min(n, max(MIN_DEV, math.ceil(DEV_SHARE * n)))
        have_dev = sum(1 for i in ids if out.get(i) == "dev")
        for i in new:
            if have_dev < want_dev:
                out[i] = "dev"
                have_dev += 1
            else:
                out[i] = rest
    return out


def promote(manifest: dict[str, str], share: float) -> list[str]:
    """Ids of the calib logs to move to train: per family, the first ``ceil(share × n)`` by hash."""
    by_family: dict[str, list[str]] = {}
    for i, v in manifest.items():
        if v == "calib":
            by_family.setdefault(i.split("/")[0], []).append(i)
    out: list[str] = []
    for ids in by_family.values():
        out += sorted(ids, key=_key)[: math.ceil(share * len(ids))]
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--rest", choices=["train", "calib"], default="train", help="where a new batch's non-dev logs go")
    ap.add_argument("--promote-calib", type=float, metavar="SHARE", help="move this share of calib to train")
    ap.add_argument("--on", default="", help="the date recorded for a promotion (ISO)")
    a = ap.parse_args(argv)
    data = json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {}
    manifest: dict[str, str] = data.get("split", {})
    promoted: dict[str, str] = data.get("promoted", {})
    split = assign(gathered(), manifest, a.rest)
    moved = promote(split, a.promote_calib) if a.promote_calib else []
    for i in moved:
        split[i] = "train"
        promoted[i] = a.on
    if not a.dry_run:  # written before anything is printed: a closed pipe (`| head`) must not lose the split
        MANIFEST.write_text(
            json.dumps(
                {
                    "note": "frozen: a dev id never changes split; calib ids may be promoted to train once "
                    "(listed under 'promoted'); see bench/split_corpus.py",
                    "split": dict(sorted(split.items())),
                    **({"promoted": dict(sorted(promoted.items()))} if promoted else {}),
                },
                indent=1,
            )
            + "\n"
        )
    for i in moved:
        print(f"calib -> train {i}")
    added = {k: v for k, v in split.items() if k not in manifest}
    for k in sorted(added):
        print(f"{added[k]:5} {k}")
    fams: dict[str, dict[str, int]] = {}
    for k, v in split.items():
        t = fams.setdefault(k.split("/")[0], {"train": 0, "dev": 0, "calib": 0})
        t[v] += 1
    for f, t in sorted(fams.items()):
        print(f"{f:16} train {t['train']:3}  dev {t['dev']:3}  calib {t['calib']:3}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
