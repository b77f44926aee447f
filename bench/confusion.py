"""Truth-vs-top-1 confusion table of the cause category on the thread corpus's TRAIN split (on demand).

Why: the aggregate top-1 says how often the engine is right, not which home it reads a failure as when it
is wrong. A row per true category (its logs, how many the engine put first, and what it put first instead)
shows a systematic confusion (a library bug read as version skew, say) that one miss row does not. The
rank at which the true category sits (first, second, third, or outside the three hypotheses shown) says
whether a confusion is one of order (the home is offered, behind another) or of composition (the three
hypotheses shown leave the home out).

Train only, by design: dev and calib are frozen (the honest protocol), so this script refuses them; their
figures are read only as aggregates through ``bench/accuracy.py --split dev``.

    .venv/bin/python bench/confusion.py [--split train] [--row CATEGORY] [--names] [--without-rules]

``--row`` prints only one true category's row; ``--names`` lists, under each row, the train logs, the rank
of their true category and the category put first, so a confusion can be read log by log (train logs only).
``--without-rules`` diagnoses each log again with the rules that explained it left out (as
``bench/ablate_rules.py --all`` does): the reasoning alone, a held-out-like reading of the same table.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy import FROZEN, OWN, THREADS, Case, evaluate, thread_cases  # noqa: E402

RANKS = ("1", "2", "3", "out")


def _top3(case: Case, without_rules: bool) -> list[str]:
    """The first three categories of the diagnosis (one diagnose call, accuracy's; with ``without_rules``,
    ablate_rules' second call with the explaining rules dropped)."""
    if without_rules:
        from ablate_rules import _diagnose

        diag = _diagnose(case, set())
        rules = {c.rule for c in diag.root_causes if not c.rule.startswith(OWN)}
        diag = _diagnose(case, rules) if rules else diag
        return [c.category for c in diag.root_causes[:3]]
    got = str(evaluate(case)["got"])  # "type/stage cat1,cat2,cat3"
    return [c for c in got.split(" ", 1)[-1].split(",") if c and c != "-"] if " " in got else []


def _rank(truth: str, top3: list[str]) -> str:
    return str(top3.index(truth) + 1) if truth in top3 else "out"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="train", help="only train is allowed (dev and calib are frozen)")
    ap.add_argument("--row", help="print only this true category's row")
    ap.add_argument("--names", action="store_true", help="list the train logs under each row")
    ap.add_argument("--without-rules", action="store_true", help="leave out the rules that explained each log")
    a = ap.parse_args(argv)
    if a.split in FROZEN or a.split != "train":
        print(f"refused: --split {a.split} (only train may be read log by log)", file=sys.stderr)
        return 2
    cases = [c for c in thread_cases(THREADS) if c.label.get("set") == "train"]
    table: dict[str, Counter[str]] = defaultdict(Counter)
    ranks: dict[str, Counter[str]] = defaultdict(Counter)
    names: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for case in cases:
        top3 = _top3(case, a.without_rules)
        got = top3[0] if top3 else "-"
        rank = _rank(case.category, top3)
        table[case.category][got] += 1
        ranks[case.category][rank] += 1
        names[case.category].append((case.name, got, rank))
    right = sum(t[cat] for cat, t in table.items())
    total = Counter(r for t in ranks.values() for r in t.elements())
    how = " (the explaining rules left out)" if a.without_rules else ""
    print(f"train{how}: {len(cases)} logs, top-1 right {right} ({right / max(1, len(cases)):.1%})")
    print("rank of the true category: " + ", ".join(f"{r} {total[r]}" for r in RANKS))
    print(f"{'truth':14} {'logs':>4} {'right':>5}  {'@2':>3} {'@3':>3} {'out':>3}  top-1 instead (count)")
    for cat in sorted(table, key=lambda k: -sum(table[k].values())):
        if a.row and cat != a.row:
            continue
        t, r = table[cat], ranks[cat]
        wrong = ", ".join(f"{k} {v}" for k, v in t.most_common() if k != cat)
        print(f"{cat:14} {sum(t.values()):4} {t[cat]:5}  {r['2']:3} {r['3']:3} {r['out']:3}  {wrong}")
        if a.names:
            for name, got, rank in sorted(names[cat]):
                print(f"    {'ok ' if got == cat else '-> '}{got:14} @{rank:3} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
