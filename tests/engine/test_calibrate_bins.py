"""``bench/calibrate.py --bins auto``: the bin count is chosen by cross-validation on the fitting logs alone."""

from __future__ import annotations

import random

from bench.calibrate import choose_bins, fit


def _rows(accuracy_at, n: int = 400, seed: int = 0) -> list[tuple[float, bool]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        x = rng.random()
        rows.append((x, rng.random() < accuracy_at(x)))
    return rows


def _chosen(rows: list[tuple[float, bool]]) -> int:
    scores = choose_bins(rows)
    return min(scores, key=lambda b: (round(scores[b], 4), b))


def test_accuracy_that_climbs_with_confidence_gets_more_bins():
    assert _chosen(_rows(lambda x: 0.05 + 0.9 * x)) >= 4  # two or three bins would flatten the climb


def test_the_choice_is_the_lowest_held_out_score():
    rows = _rows(lambda x: 0.1 + 0.5 * (x > 0.6))
    scores = choose_bins(rows)
    assert set(scores) == set(range(2, 9)) and scores[_chosen(rows)] == min(scores.values())


def test_the_fitted_curve_is_monotone():
    pts = fit(_rows(lambda x: 0.05 + 0.9 * x, seed=1), 6)
    assert all(b[1] >= a[1] and b[0] >= a[0] for a, b in zip(pts, pts[1:], strict=False))
