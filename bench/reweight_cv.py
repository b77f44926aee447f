"""Would a learned reweighting of the ranking's output beat the ranking as it is? (TRAIN only, on demand.)

Why: on the thread corpus the engine names ``library`` first far less often than the labels do (and
``environment`` more often), so a multiplicative weight per category, or per detected stack and category,
applied to every cause's confidence looks like a cheap fix. Whether it holds on logs the weights were not
fitted on is what 5-fold cross-validation on train says: each fold's weights are fitted on the other four
(coordinate search over a small grid, top-1 first, then top-3, then the weight nearest 1) and scored on the
fold left out, averaged over three fold assignments. The engine's own stack (``profile.stack``), never the
label's, picks a log's weights: the same information the engine has when it ranks.

    .venv/bin/python bench/reweight_cv.py [--folds 5] [--seeds 3]

Dev and calib are frozen (the honest protocol): this script reads train only.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy import THREADS, thread_cases  # noqa: E402

GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0)
Weights = dict[tuple[str, str], float]


@dataclass
class Row:
    truth: str
    stack: str
    causes: list[tuple[str, float]]


def diagnosed_train() -> list[Row]:
    """Every train log's causes (category, confidence) in the engine's order, and the stack it detected."""
    from pytest_faildiag.engine.api import diagnose

    rows = []
    for case in thread_cases(THREADS):
        if case.label.get("set") != "train":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = diagnose([str(f) for f in case.files], exit_code=case.exit_code, command=case.command)
        rows.append(Row(case.category, d.profile.stack, [(c.category, c.confidence) for c in d.root_causes]))
    return rows


def ranked(row: Row, w: Weights, key: Callable[[Row], str]) -> list[str]:
    best: dict[str, float] = {}
    for cat, conf in row.causes:
        best[cat] = max(best.get(cat, -1.0), conf * w.get((key(row), cat), 1.0))
    return sorted(best, key=lambda c: -best[c])


def score(rows: list[Row], w: Weights, key: Callable[[Row], str]) -> tuple[int, int]:
    top1 = top3 = 0
    for row in rows:
        cats = ranked(row, w, key)
        top1 += bool(cats) and cats[0] == row.truth
        top3 += row.truth in cats[:3]
    return top1, top3


def fit(rows: list[Row], key: Callable[[Row], str], groups: list[str], cats: list[str]) -> Weights:
    """One pass of coordinate search: each (group, category) weight in turn, the others held."""
    w: Weights = {}
    for g in groups:
        for cat in cats:
            best_v, best = 1.0, (*score(rows, w, key), 0.0)
            for v in GRID:
                w[(g, cat)] = v
                got = (*score(rows, w, key), -abs(math.log(v)))
                if got > best:
                    best_v, best = v, got
            w[(g, cat)] = best_v
    return w


def cross_validated(rows: list[Row], key: Callable[[Row], str], folds: int, seeds: int) -> tuple[float, float]:
    groups = sorted({key(r) for r in rows})
    cats = sorted({c for r in rows for c, _ in r.causes} | {r.truth for r in rows})
    top1 = top3 = 0
    for seed in range(1, seeds + 1):
        order = list(range(len(rows)))
        random.Random(seed).shuffle(order)
        for f in range(folds):
            held = [rows[i] for j, i in enumerate(order) if j % folds == f]
            rest = [rows[i] for j, i in enumerate(order) if j % folds != f]
            got = score(held, fit(rest, key, groups, cats), key)
            top1 += got[0]
            top3 += got[1]
    return top1 / seeds, top3 / seeds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args(argv)
    rows = diagnosed_train()
    n = len(rows)
    t1, t3 = score(rows, {}, lambda r: "all")
    print(f"train logs {n}: the ranking as it is  top-1 {t1} ({t1 / n:.1%})  top-3 {t3} ({t3 / n:.1%})")
    for name, key in (("a weight per category", lambda r: "all"), ("per stack and category", lambda r: r.stack)):
        c1, c3 = cross_validated(rows, key, a.folds, a.seeds)
        verdict = "better" if c1 > t1 else "not better"
        print(f"{name:24} CV top-1 {c1:.1f} ({c1 / n:.1%})  top-3 {c3:.1f} ({c3 / n:.1%})  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
