"""Fit the confidence calibration curve on the CALIB logs (or the train logs), and write it as data.

The engine's raw confidence of its top cause is a product of priors and check factors; it is not a
probability. This fits a monotone map (binned, then pool-adjacent-violators) from the raw top confidence to
how often the top cause was right, and writes it to ``pytest_faildiag/rules/06-calibration.toml``.
``bench/accuracy.py`` then shows on the dev set whether the map holds (the reliability table).

Which logs: by default the ``calib`` split of the thread corpus — real logs no rule was written or tuned for
(``bench/split_corpus.py --rest calib``), so the curve sees the engine as a new user's log does. A curve
fitted on ``train`` (``--on train``) is fitted where the rules were tuned: top-1 is higher there than on
anything new, and the curve is over-confident by that gap. Never the dev set.

How many bins: ``--bins auto`` (the default) lets the calib logs choose by K-fold cross-validation (fit on
K-1 folds, score the curve's Brier score on the held-out fold, ``choose_bins``): few bins average a step in
accuracy away, many bins fit noise, and which is better depends on how many logs there are and how the
engine's raw confidence spreads, which changes with every knowledge change. The dev set is never consulted.

    .venv/bin/python bench/calibrate.py [--on calib|train] [--bins auto|N] [--write]
"""

from __future__ import annotations

import argparse
import copy
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.accuracy import REPO, THREADS, Case, all_cases  # noqa: E402

OUT = REPO / "pytest_faildiag/rules/06-calibration.toml"


def raw_rows(cases: list[Case]) -> list[tuple[float, bool]]:
    from pytest_faildiag.engine.api import diagnose
    from pytest_faildiag.rules import load_ruleset

    rs = copy.copy(load_ruleset())
    rs.reasoning = copy.copy(rs.reasoning)
    rs.reasoning.calibration = []  # raw confidences
    rows = []
    for case in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = diagnose([str(f) for f in case.files], exit_code=case.exit_code, command=case.command, ruleset=rs)
        cats = [c.category for c in d.root_causes]
        rows.append((d.root_causes[0].confidence if d.root_causes else 0.0, bool(cats) and cats[0] == case.category))
    return rows


def fit(rows: list[tuple[float, bool]], bins: int) -> list[tuple[float, float]]:
    rows = sorted(rows)
    n = len(rows)
    groups = [rows[i * n // bins : (i + 1) * n // bins] for i in range(bins)]
    blocks = [[sum(c for c, _ in g) / len(g), sum(ok for _, ok in g), len(g)] for g in groups if g]
    merged: list[list[float]] = []
    for b in blocks:  # pool adjacent violators: accuracy must not fall as confidence rises
        merged.append(list(b))
        while len(merged) > 1 and merged[-2][1] / merged[-2][2] > merged[-1][1] / merged[-1][2]:
            x2, k2, n2 = merged.pop()
            x1, k1, n1 = merged.pop()
            merged.append([(x1 * n1 + x2 * n2) / (n1 + n2), k1 + k2, n1 + n2])
    pts = [(round(x, 4), round(k / m, 4)) for x, k, m in merged]
    return [(0.0, 0.0)] + pts + ([(1.0, pts[-1][1])] if pts and pts[-1][0] < 1.0 else [])


BIN_CHOICES = range(2, 9)
FOLDS = 5


def brier(rows: list[tuple[float, bool]], pts: list[tuple[float, float]]) -> float:
    """Mean squared gap between the mapped confidence and whether the top cause was right (lower is better)."""
    from pytest_faildiag.engine.reason import calibrate

    return sum((calibrate(x, pts) - float(ok)) ** 2 for x, ok in rows) / max(1, len(rows))


def choose_bins(rows: list[tuple[float, bool]], choices: range = BIN_CHOICES, folds: int = FOLDS) -> dict[int, float]:
    """Each bin count's cross-validated Brier score on ``rows`` (fold i holds every folds-th row from i: the
    rows' order, not their confidence, decides the folds)."""
    scores = {}
    for bins in choices:
        total = 0.0
        for i in range(folds):
            held = rows[i::folds]
            fitted = [r for j, r in enumerate(rows) if j % folds != i]
            total += brier(held, fit(fitted, bins)) * len(held)
        scores[bins] = total / len(rows)
    return scores


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--on", choices=["calib", "train"], default="calib", help="the split to fit on (never dev)")
    ap.add_argument("--bins", default="auto", help="a bin count, or 'auto' (cross-validated on the same logs)")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    cases = [c for c in all_cases([THREADS]) if c.label.get("set") == a.on]
    if not cases:
        print(f"no {a.on} logs to fit on", file=sys.stderr)
        return 2
    rows = raw_rows(cases)
    if a.bins == "auto":
        scores = choose_bins(rows)
        bins = min(scores, key=lambda b: (round(scores[b], 4), b))  # ties: the fewer bins
        print("bins  cross-validated Brier (" + f"{FOLDS} folds, {len(rows)} {a.on} logs)")
        for b, v in scores.items():
            print(f"  {b}   {v:.4f}" + ("  <- chosen" if b == bins else ""))
    else:
        bins = int(a.bins)
    pts = fit(rows, bins)
    text = (
        f"# Confidence calibration, fitted on the {a.on} logs only by bench/calibrate.py (never the dev set).\n"
        f"# {len(rows)} logs, {bins} bins; points are (raw top confidence, share of top causes that were right).\n"
        "[calibration]\npoints = [" + ", ".join(f"[{x}, {y}]" for x, y in pts) + "]\n"
    )
    print(text)
    if a.write:
        OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
