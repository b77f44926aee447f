"""Fit the differential's numbers (symptom priors, context factors) to the TRAIN logs, scored by cross-validation.

The priors of each ``[[symptom]]`` family and the factors of each ``[[context]]`` in
``rules/05-reasoning.toml`` were set by hand. This script asks the train logs what they say, honestly:

1. **Record**: the engine runs once per train log (``split.json`` ``train`` only, plus the in-sample kb
   fixtures with ``--with-kb``) and records which symptom family the differential used, whether a rule
   explained the failure (``primary``: no rule did, the differential ranks alone), which contexts applied,
   and the labelled category. Dev and calib logs are never read.
2. **Fit** (on any subset of those records): each family's smoothed base rates — a Dirichlet prior of
   strength ``k`` centred on the current (hand-set) priors, so a family seen in three logs barely moves —
   either as plain label counts (``rate``) or as the maximum-likelihood priors of the engine's own
   multiplicative model, where each log's active context factors already weigh the categories (``mle``:
   the prior explains what the context does not). Context factors are fitted as observed/expected ratios
   (logs with the fact labelled c, against what the priors and the other facts predict), shrunk toward the
   current factor with ``k`` expected logs; a factor keeps its side of 1.0 (the fact the entry states: a
   fact that lifts a category still lifts it) and its side of the refute threshold.
3. **Score**: K-fold cross-validation on train: fit on k-1 folds, run the real engine with the fitted
   numbers on the held-out fold, count top-1/top-3. The hand-set numbers get the same folds. Printed per
   setting, per family and per context, with the values fitted on all train logs.

Only changes that improve the CV score are candidates for the TOML (a train-fit figure is in-sample and
proves nothing). A family whose listed categories include one that a catalogue fact puts first keeps it
first (``ORDER_FACTS``). Nothing is written: the numbers are applied by hand, in place.

``--without-rules`` records, fits and scores each log with the rules that explained it left out (as
``bench/confusion.py --without-rules`` does): a failure no rule knows, where the differential ranks alone.

    PYTHONPATH=. .venv/bin/python bench/fit_reasoning.py [--with-kb] [--folds 5] [--k 2,5,10] [--without-rules]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import sys
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.accuracy import REPO, THREADS, Case, all_cases  # noqa: E402

# a catalogue fact puts this category first in the family, whatever a handful of logs say
ORDER_FACTS: dict[str, str] = {
    "config_error": "config",  # the configuration library rejected the configuration: the config's
    "trace": "model",  # a JAX tracer error is the program using a traced value in Python control flow
    "syntax": "model",  # Python could not parse a file: the program's own source, usually
    "build": "environment",  # a failed compile is the toolchain's (compiler, CUDA toolkit, headers) first
}
MIN_PRIOR = 0.02  # causes are never deleted: a listed category keeps a prior
FACTOR_BOUNDS = (0.3, 4.0)
REFUTES = 0.35  # engine/reason.py: a factor at or below this counts in full on rule causes


@dataclass
class Record:
    """What one train log showed the differential (independent of the numbers being fitted)."""

    name: str
    label: str
    family: str | None
    primary: bool
    contexts: list[int]  # indices into Reasoning.contexts
    threads: bool  # a thread-corpus log (the kb fixtures are the extra, in-sample training data)
    top1: bool = False  # with the hand-set numbers
    top3: bool = False
    drop: frozenset[str] = frozenset()  # with --without-rules: the rules that explained it, left out of every run


@dataclass
class Setting:
    """Numbers to try: family -> {category: prior}, context index -> {category: factor}."""

    priors: dict[str, dict[str, float]] = field(default_factory=dict)
    factors: dict[int, dict[str, float]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------
# running the engine
# ---------------------------------------------------------------------------------------------------------


def train_cases(with_kb: bool, threads_root: Path = THREADS, kb_root: Path | None = None) -> list[Case]:
    """Train logs of the thread corpus only (never dev or calib), plus the kb fixtures when asked."""
    cases = [c for c in all_cases([threads_root]) if c.label.get("set") == "train"]
    if with_kb:
        cases += all_cases([kb_root or REPO / "tests/data/kb"])
    return cases


def _ruleset(setting: Setting | None) -> Any:
    from pytest_faildiag.rules import load_ruleset

    base = load_ruleset()
    if setting is None:
        return base
    rs = copy.copy(base)
    rs.reasoning = copy.copy(base.reasoning)
    syms = dict(base.reasoning.symptoms)
    for fam, priors in setting.priors.items():
        title, causes = syms[fam]
        syms[fam] = (title, [dataclasses.replace(sc, prior=priors.get(sc.category, sc.prior)) for sc in causes])
    rs.reasoning.symptoms = syms
    ctxs = list(base.reasoning.contexts)
    for i, factors in setting.factors.items():
        ctxs[i] = dataclasses.replace(ctxs[i], factors={**ctxs[i].factors, **factors})
    rs.reasoning.contexts = ctxs
    return rs


def _diagnose(case: Case, rs: Any, drop: frozenset[str] = frozenset()) -> list[str]:
    return [c.category for c in _diagnosis(case, rs, drop).root_causes]


def _diagnosis(case: Case, rs: Any, drop: frozenset[str] = frozenset()) -> Any:
    from bench.ablate_rules import dropping
    from pytest_faildiag.engine.api import diagnose

    with warnings.catch_warnings(), dropping(set(drop)):
        warnings.simplefilter("ignore")
        return diagnose([str(f) for f in case.files], exit_code=case.exit_code, command=case.command, ruleset=rs)


def _explaining_rules(case: Case, rs: Any) -> frozenset[str]:
    """The rules that explained the log (``bench/confusion.py --without-rules``'s: every root cause's rule but the
    engine's own reasoning)."""
    from bench.accuracy import OWN

    return frozenset(c.rule for c in _diagnosis(case, rs).root_causes if not c.rule.startswith(OWN))


# contexts the differential saw that are no entry of the loaded rule set's [[context]] list (reasoning code may add
# a marker of its own, e.g. a fact with no factors): nothing to fit, so they are skipped and counted here
SKIPPED: Counter[str] = Counter()


def _context_indices(active: list[tuple[str, str, dict[str, float]]], rs: Any, skipped: Counter[str]) -> list[int]:
    """Indices into ``rs.reasoning.contexts`` of the active contexts: by the identity of the entry's factors, else
    by an entry with the same fact and equal factors; one that matches no entry (or has no factors) is skipped and
    counted in ``skipped``."""
    ctxs = rs.reasoning.contexts
    by_id = {id(c.factors): i for i, c in enumerate(ctxs)}
    out = []
    for fact, _why, factors in active:
        i = by_id.get(id(factors))
        if i is None and factors:
            i = next((j for j, c in enumerate(ctxs) if c.fact == fact and c.factors == factors), None)
        if i is None:
            skipped[fact] += 1
            continue
        out.append(i)
    return out


@contextmanager
def _recording(sink: list[dict[str, Any]]) -> Iterator[None]:
    """Wrap the ranker's call of the differential to note the family and the contexts it saw."""
    from pytest_faildiag.engine import rank, reason

    original = rank.differential

    def spy(facts: Any, analysis: Any, rs: Any, present: dict[str, float], primary: bool) -> Any:
        failed = analysis.failed or analysis.profile.first_failure is not None or facts.cut
        family = reason.symptom_family(facts, analysis, rs, rules_fired=not primary, failed=failed)
        sink.append({"family": family, "primary": primary, "contexts": _context_indices(facts.contexts, rs, SKIPPED)})
        return original(facts, analysis, rs, present, primary)

    rank.differential = spy  # type: ignore[assignment]
    try:
        yield
    finally:
        rank.differential = original  # type: ignore[assignment]


def record(cases: list[Case], without_rules: bool = False) -> list[Record]:
    """One record per log; with ``without_rules`` each log is run (here and in the CV) with the rules that explained
    it left out, as a failure no rule knows (the differential's numbers matter most there)."""
    rs = _ruleset(None)
    SKIPPED.clear()
    out = []
    for case in cases:
        seen: list[dict[str, Any]] = []
        drop = _explaining_rules(case, rs) if without_rules else frozenset()
        with _recording(seen):
            cats = _diagnose(case, rs, drop)
        info = seen[-1] if seen else {"family": None, "primary": False, "contexts": []}
        out.append(
            Record(
                case.name,
                case.category,
                info["family"],
                info["primary"],
                info["contexts"],
                case.source == "threads",
                bool(cats) and cats[0] == case.category,
                case.category in cats[:3],
                drop,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------------------------------------


def _hand_priors(rs: Any) -> dict[str, dict[str, float]]:
    return {fam: {sc.category: sc.prior for sc in causes} for fam, (_t, causes) in rs.reasoning.symptoms.items()}


def _model_weights(
    rec: Record, priors: dict[str, float], factors: list[dict[str, float]], skip: int | None = None
) -> dict[str, float]:
    """The differential's weights for one log: prior x the product of its active context factors."""
    out = {}
    for cat, p in priors.items():
        f = 1.0
        for i in rec.contexts:
            if i != skip:
                f *= factors[i].get(cat, 1.0)
        out[cat] = p * max(FACTOR_BOUNDS[0], min(FACTOR_BOUNDS[1], f))
    return out


def fit_priors(
    recs: list[Record],
    hand: dict[str, dict[str, float]],
    factors: list[dict[str, float]],
    k: float,
    method: str,
    scope: str,
) -> dict[str, dict[str, float]]:
    """Smoothed priors per family: a Dirichlet(k x hand share) prior plus the family's labelled logs."""
    by_fam: dict[str, list[Record]] = defaultdict(list)
    for r in recs:
        if r.family in hand and r.label in hand[r.family] and (scope == "all" or r.primary):
            by_fam[r.family].append(r)
    out = {}
    for fam, rows in by_fam.items():
        cur = hand[fam]
        total = sum(cur.values())
        share = {c: p / total for c, p in cur.items()}
        counts = Counter(r.label for r in rows)
        if method == "rate":
            n = len(rows)
            new = {c: (counts[c] + k * share[c]) / (n + k) for c in cur}
        else:  # mle of p_c in P(c | log) = p_c F_c / sum p F, with the Dirichlet pseudo-counts (MM iterations)
            p = dict(share)
            for _ in range(50):
                denom = {c: k for c in cur}
                for r in rows:
                    w = _model_weights(r, p, factors)
                    z = sum(w.values()) or 1.0
                    for c in cur:
                        denom[c] += (w[c] / p[c]) / z if p[c] > 0 else 0.0
                p = {c: (counts[c] + k * share[c]) / denom[c] for c in cur}
                s = sum(p.values())
                p = {c: v / s for c, v in p.items()}
            new = p
        out[fam] = _ordered(fam, {c: max(MIN_PRIOR, round(v * total, 2)) for c, v in new.items()})
    return out


def _ordered(fam: str, priors: dict[str, float]) -> dict[str, float]:
    """A catalogue fact's first category stays first."""
    lead = ORDER_FACTS.get(fam)
    if lead in priors:
        top = max(v for c, v in priors.items() if c != lead) if len(priors) > 1 else 0.0
        if priors[lead] <= top:
            priors[lead] = round(top + 0.01, 2)
    return priors


def fit_factors(
    recs: list[Record],
    priors: dict[str, dict[str, float]],
    factors: list[dict[str, float]],
    k: float,
    only: set[int] | None = None,
) -> dict[int, dict[str, float]]:
    """Observed/expected per (context, category), shrunk toward the current factor by k expected logs."""
    out: dict[int, dict[str, float]] = {}
    for j, cur in enumerate(factors):
        if only is not None and j not in only:
            continue
        obs: Counter[str] = Counter()
        exp: Counter[str] = Counter()
        for r in recs:
            if j not in r.contexts or r.family not in priors or r.label not in priors[r.family]:
                continue
            w = _model_weights(r, priors[r.family], factors, skip=j)
            z = sum(w.values()) or 1.0
            for c in cur:
                if c in w:
                    exp[c] += w[c] / z
                    obs[c] += r.label == c
        new = {}
        for c, f in cur.items():
            if exp[c] <= 0:
                continue
            v = (obs[c] + k * f) / (exp[c] + k)  # k pseudo-logs expected at the current ratio
            new[c] = round(_keep_side(f, v), 2)
        if new and any(abs(new[c] - cur[c]) >= 0.01 for c in new):
            out[j] = new
    return out


def _keep_side(cur: float, v: float) -> float:
    """The fact an entry states keeps its direction (lifts stay >= 1, lowers <= 1) and its refute strength."""
    lo, hi = FACTOR_BOUNDS
    if cur > 1.0:
        lo = 1.0
    elif cur < 1.0:
        hi = 1.0
        if cur <= REFUTES:
            lo, hi = 0.05, REFUTES  # a refuting factor may refute harder, never turn into a soft one
        else:
            lo = REFUTES + 0.01
    return max(lo, min(hi, v))


Fitter = Callable[[list[Record]], Setting]


def fitter(
    mode: str, k: float, method: str, scope: str, hand: dict, factors: list, only: set[int] | None = None
) -> Fitter:
    def fit(recs: list[Record]) -> Setting:
        s = Setting()
        if mode in ("priors", "both"):
            s.priors = fit_priors(recs, hand, factors, k, method, scope)
        if mode in ("factors", "both"):
            pri = {**hand, **s.priors}
            s.factors = fit_factors(recs, pri, factors, k, only)
        return s

    return fit


# ---------------------------------------------------------------------------------------------------------
# cross-validation
# ---------------------------------------------------------------------------------------------------------


def fold_of(name: str, folds: int, seed: int = 0) -> int:
    """Deterministic, label-blind fold: the SHA-256 of the seed and the log's name."""
    return int(hashlib.sha256(f"{seed}:{name}".encode()).hexdigest(), 16) % folds


def cross_validate(
    cases: list[Case], recs: list[Record], fit: Fitter, folds: int, repeats: int = 1
) -> list[tuple[float, float]]:
    """(top-1, top-3) per log, each scored by numbers fitted without its fold; averaged over ``repeats``
    fold assignments (one log more or less right is noise on a hundred logs: repeats show how much)."""
    result = [[0.0, 0.0] for _ in cases]
    for seed in range(repeats):
        for k in range(folds):
            held = [i for i, r in enumerate(recs) if fold_of(r.name, folds, seed) == k]
            if not held:
                continue
            rs = _ruleset(fit([r for r in recs if fold_of(r.name, folds, seed) != k]))
            for i in held:
                cats = _diagnose(cases[i], rs, recs[i].drop)
                result[i][0] += (bool(cats) and cats[0] == cases[i].category) / repeats
                result[i][1] += (cases[i].category in cats[:3]) / repeats
    return [(a, b) for a, b in result]


def score(rows: list[tuple[float, float]], pick: list[int] | None = None) -> tuple[int, float, float]:
    idx = range(len(rows)) if pick is None else pick
    sel = [rows[i] for i in idx]
    return len(sel), round(sum(a for a, _ in sel), 2), round(sum(b for _, b in sel), 2)


def fmt(s: tuple[int, float, float]) -> str:
    n, t1, t3 = s
    return f"top-1 {t1:6.1f}/{n:<3d} top-3 {t3:6.1f}/{n:<3d}" if n else "(no logs)"


def _mark(fitted: tuple[int, float, float], hand: tuple[int, float, float]) -> str:
    if (fitted[1], fitted[2]) > (hand[1], hand[2]):
        return "  better"
    return "  worse" if (fitted[1], fitted[2]) < (hand[1], hand[2]) else ""


def run(
    cases: list[Case],
    folds: int,
    ks: list[float],
    repeats: int = 1,
    out: Callable[[str], None] = print,
    without_rules: bool = False,
) -> dict[str, Any]:
    """Record, then cross-validate every setting; returns the figures (used by the test and the report)."""
    recs = record(cases, without_rules)
    if without_rules:
        out(
            f"without rules: each log run with the rules that explained it left out ({sum(bool(r.drop) for r in recs)} logs)"
        )
    rs = _ruleset(None)
    hand = _hand_priors(rs)
    factors = [dict(c.factors) for c in rs.reasoning.contexts]
    base = [(float(r.top1), float(r.top3)) for r in recs]
    thr = [i for i, r in enumerate(recs) if r.threads]
    out(
        f"train logs: {len(recs)} ({len(thr)} thread-corpus train, {len(recs) - len(thr)} kb); {folds} folds x {repeats}"
    )
    out(
        f"hand-set numbers (nothing to fit, so CV = train fit; tuned on these logs by hand, so in-sample): "
        f"all {fmt(score(base))}  threads {fmt(score(base, thr))}"
    )
    fams = Counter(r.family for r in recs)
    out(
        "families (logs, of which the differential ranked alone): "
        + ", ".join(f"{f}:{n}({sum(r.primary for r in recs if r.family == f)})" for f, n in fams.most_common())
    )
    out(f"logs with no symptom family (rank.fallback_causes, its per-stack priors): {fams.get(None, 0)}")
    if SKIPPED:
        out(
            "contexts skipped (no [[context]] entry of the rule set to fit): "
            + ", ".join(f"{f}:{n}" for f, n in SKIPPED.most_common())
        )
    results: dict[str, Any] = {"hand": score(base), "hand_threads": score(base, thr), "cv": {}, "records": recs}
    for mode in ("priors", "factors", "both"):
        for method in ("rate", "mle") if mode != "factors" else ("mle",):
            for scope in ("all", "primary") if mode != "factors" else ("all",):
                for k in ks:
                    key = f"{mode}/{method}/{scope}/k={k:g}"
                    rows = cross_validate(cases, recs, fitter(mode, k, method, scope, hand, factors), folds, repeats)
                    results["cv"][key] = rows
                    out(
                        f"CV {key:28} all {fmt(score(rows))}  threads {fmt(score(rows, thr))}{_mark(score(rows), score(base))}"
                    )
    return results


def per_family(results: dict[str, Any], key: str, out: Callable[[str], None] = print) -> dict[str, tuple]:
    recs: list[Record] = results["records"]
    rows = results["cv"][key]
    base = [(float(r.top1), float(r.top3)) for r in recs]
    fams: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(recs):
        fams[str(r.family)].append(i)
    table = {}
    out(f"per family, hand vs CV of {key} (all train logs of that family):")
    for fam, idx in sorted(fams.items(), key=lambda x: -len(x[1])):
        h, f = score(base, idx), score(rows, idx)
        table[fam] = (h, f)
        out(f"  {fam:16} hand {fmt(h)}   fitted {fmt(f)}{_mark(f, h)}")
    return table


def per_context(
    cases: list[Case],
    results: dict[str, Any],
    k: float,
    folds: int,
    repeats: int = 1,
    out: Callable[[str], None] = print,
) -> dict[int, tuple]:
    """Each context's factors fitted alone (the others hand-set), CV-scored on the logs where it applies."""
    recs: list[Record] = results["records"]
    rs = _ruleset(None)
    hand = _hand_priors(rs)
    factors = [dict(c.factors) for c in rs.reasoning.contexts]
    base = [(float(r.top1), float(r.top3)) for r in recs]
    table = {}
    out(f"per context (its factors fitted alone, k={k:g}), CV on the logs where it applies (and on all):")
    for j, ctx in enumerate(rs.reasoning.contexts):
        idx = [i for i, r in enumerate(recs) if j in r.contexts]
        if not idx:
            continue
        fit = fitter("factors", k, "mle", "all", hand, factors, only={j})
        whole = fit(recs)
        if not whole.factors:
            continue
        rows = cross_validate(cases, recs, fit, folds, repeats)
        h, f, fa, ha = score(base, idx), score(rows, idx), score(rows), score(base)
        table[j] = (h, f, ha, fa, whole.factors.get(j, {}))
        out(f"  [{j:2d}] {ctx.fact:24} n={len(idx):3d} hand {fmt(h)} fitted {fmt(f)} (all {fmt(fa)}){_mark(fa, ha)}")
        out(f"        {ctx.factors} -> {whole.factors.get(j, {})}")
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--with-kb", action="store_true", help="add the kb fixtures (in-sample) as training data")
    ap.add_argument("--threads", type=Path, default=THREADS, help="the thread corpus (its split.json's train logs)")
    ap.add_argument("--kb", type=Path, default=REPO / "tests/data/kb", help="the kb fixtures (with --with-kb)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3, help="fold assignments averaged over")
    ap.add_argument("--k", default="2,5,10,20", help="Dirichlet strengths to try (pseudo-logs)")
    ap.add_argument("--contexts", action="store_true", help="also CV each context's factors alone")
    ap.add_argument(
        "--without-rules", action="store_true", help="fit and score with each log's explaining rules left out"
    )
    a = ap.parse_args(argv)
    ks = [float(x) for x in a.k.split(",")]
    cases = train_cases(a.with_kb, a.threads, a.kb)
    if not cases:
        print("no train logs found", file=sys.stderr)
        return 2
    results = run(cases, a.folds, ks, a.repeats, without_rules=a.without_rules)
    hand = results["hand"]
    best = max(results["cv"], key=lambda key: score(results["cv"][key])[1:])
    print(f"\nbest CV setting: {best} all {fmt(score(results['cv'][best]))} (hand {fmt(hand)})")
    per_family(results, best)
    mode, method, scope, kk = best.split("/")
    k = float(kk[2:])
    rs = _ruleset(None)
    hand_p = _hand_priors(rs)
    factors = [dict(c.factors) for c in rs.reasoning.contexts]
    whole = fitter(mode, k, method, scope, hand_p, factors)(results["records"])
    print("\nsuggested values (fitted on all train logs with the best CV setting; apply only where CV improved):")
    for fam, pri in sorted(whole.priors.items()):
        changed = {c: (hand_p[fam][c], v) for c, v in pri.items() if abs(hand_p[fam][c] - v) >= 0.01}
        if changed:
            print(f"  {fam:16} " + ", ".join(f"{c} {h:.2f}->{v:.2f}" for c, (h, v) in changed.items()))
    for j, fs in sorted(whole.factors.items()):
        print(f"  context [{j}] {rs.reasoning.contexts[j].fact}: {rs.reasoning.contexts[j].factors} -> {fs}")
    if a.contexts:
        print()
        per_context(cases, results, k, a.folds, a.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
