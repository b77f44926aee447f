"""Stage 2b: the homes on the table re-weighed by weights fitted on labelled failures, where a pack carries them.

Why a fitted layer: each rule and each reasoning fact states what one message or one fact says about where a cause
lives. Where the evidence points at no home (no rule listed the leading one, no fact lifted it clearly: only the
symptom family's priors lead), how often each home is the real one given all the facts at once is a question of
counts, which labelled failures answer.

The model is a conditional logit over the categories on the table: each category's best cause is a choice,
described by features (its confidence, its place, and the category crossed with the reasoning's facts, the
exception class, the failure type, the stack, the family and id of the rule that leads and whether the
category's cause came from a rule or the differential); a weight per feature (a pack's ``[ranking.weights]``)
scores it, and the softmax of the scores over the categories becomes each category's confidence.
``bench/fit_ranking.py`` fits the weights on train logs and chooses its penalty on calib logs.

The built-in packs carry no weights: fitted on the public threads, the layer mostly moves homes to ``library``
(the threads' share of library bugs), and where it may override the evidence it puts library bugs above what a
catalogue rule states on real runs; where it may not, it gains too little (``bench/fit_ranking.py`` has the
figures). A team whose labelled failures differ can fit and carry its own. The team's cards are applied after
this layer (``factory.support``): a card's candidate stays below a cause the logs show directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from ..model import RootCause

Features = dict[str, float]
MIN_CONFIDENCE = 1e-3  # a confidence's logarithm is a feature: a cause at 0 would be minus infinity
MAX_CONFIDENCE = 0.99  # a fitted share is never certainty


def candidates(causes: Iterable[RootCause]) -> list[tuple[str, RootCause]]:
    """Each category's best cause, best first (ties keep the causes' order)."""
    best: dict[str, RootCause] = {}
    for c in causes:
        if c.category not in best or c.confidence > best[c.category].confidence:
            best[c.category] = c
    return sorted(best.items(), key=lambda kv: -kv[1].confidence)


def _source(rule: str | None) -> str:
    if not rule or rule == "fallback":
        return "none"
    return "differential" if rule.startswith("differential:") else "rule"


def features(
    causes: Iterable[RootCause],
    facts: Iterable[str],
    failure_type: str,
    stack: str,
    exc_type: str | None,
    pointed: Callable[[RootCause], bool] = lambda c: False,
) -> list[tuple[str, Features]]:
    """The features of each category on the table (``candidates``), in the table's order. ``pointed`` says
    whether the evidence points at a cause (``reason.pointed_at``: a rule listed its home, or a fact lifted it
    clearly); such a category is marked ``pointed``."""
    table = candidates(causes)
    if not table:
        return []
    lead = table[0][1].rule or "none"
    family = lead.partition(":")[0].partition(".")[0]
    exc = (exc_type or "none").rsplit(".", 1)[-1]
    shared = [*facts, f"type={failure_type}", f"stack={stack}", f"exc={exc}", f"lead_family={family}", f"lead={lead}"]
    out = []
    for i, (cat, c) in enumerate(table):
        f: Features = {
            "log_confidence": math.log(max(c.confidence, MIN_CONFIDENCE)),
            f"place{min(i, 3)}": 1.0,
            cat: 1.0,
        }
        for name in shared:
            f[f"{cat}|{name}"] = 1.0
        f[f"{cat}|source={_source(c.rule)}"] = 1.0
        if pointed(c):
            f["pointed"] = 1.0
        out.append((cat, f))
    return out


def shares(table: list[tuple[str, Features]], weights: Mapping[str, float]) -> dict[str, float]:
    """The softmax of each category's score: the fitted share of the time that it is the home."""
    scores = [sum(weights.get(k, 0.0) * v for k, v in f.items()) for _, f in table]
    top = max(scores)
    exp = [math.exp(s - top) for s in scores]
    total = sum(exp)
    return {cat: e / total for (cat, _), e in zip(table, exp, strict=True)}


def held(table: list[tuple[str, Features]]) -> bool:
    """Whether the evidence points at the leading home (a rule listed it, or a fact of the reasoning lifted it
    clearly): knowledge is not re-weighed by counts. The layer is the differential's fitted prior, for the
    failures where only the symptom family's guesses lead, so the kb's facts and the reasoning's keep their
    places on the logs that show them."""
    return table[0][1].get("pointed") == 1.0


def rerank(causes: list[RootCause], table: list[tuple[str, Features]], weights: Mapping[str, float]) -> None:
    """In place: each category's best cause gets its fitted share as confidence, and the category's other causes
    keep their proportion to it. Nothing changes without weights, with one category on the table, or where the
    evidence points at the leading home (``held``)."""
    if not weights or len(table) < 2 or held(table):
        return
    share = shares(table, weights)
    best = {cat: c.confidence for cat, c in candidates(causes)}  # read before any is changed
    for c in causes:
        top = best[c.category]
        if top > 0:
            c.confidence = min(MAX_CONFIDENCE, c.confidence * share[c.category] / top)
