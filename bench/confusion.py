"""Truth-vs-top-1 confusion table of the cause category on the thread corpus's TRAIN split (on demand).

Why: the aggregate top-1 says how often the engine is right, not which home it reads a failure as when it
is wrong. A row per true category (its logs, how many the engine put first, and what it put first instead)
shows a systematic confusion (a library bug read as version skew, say) that one miss row does not.

Train only, by design: dev and calib are frozen (the honest protocol), so this script refuses them; their
figures are read only as aggregates through ``bench/accuracy.py --split dev``.

    .venv/bin/python bench/confusion.py [--split train] [--row CATEGORY] [--names]

``--row`` prints only one true category's row; ``--names`` lists, under each row, the train logs and the
category put first, so a confusion can be read log by log (train logs only).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy import FROZEN, THREADS, evaluate, thread_cases  # noqa: E402


def _top1(case) -> str:
    return str(evaluate(case)["first"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="train", help="only train is allowed (dev and calib are frozen)")
    ap.add_argument("--row", help="print only this true category's row")
    ap.add_argument("--names", action="store_true", help="list the train logs under each row")
    a = ap.parse_args(argv)
    if a.split in FROZEN or a.split != "train":
        print(f"refused: --split {a.split} (only train may be read log by log)", file=sys.stderr)
        return 2
    cases = [c for c in thread_cases(THREADS) if c.label.get("set") == "train"]
    table: dict[str, Counter[str]] = defaultdict(Counter)
    names: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for case in cases:
        got = _top1(case)
        table[case.category][got] += 1
        names[case.category].append((case.name, got))
    right = sum(t[cat] for cat, t in table.items())
    print(f"train: {len(cases)} logs, top-1 right {right} ({right / max(1, len(cases)):.1%})")
    print(f"{'truth':14} {'logs':>4} {'right':>5}  top-1 instead (count)")
    for cat in sorted(table, key=lambda k: -sum(table[k].values())):
        if a.row and cat != a.row:
            continue
        t = table[cat]
        wrong = ", ".join(f"{k} {v}" for k, v in t.most_common() if k != cat)
        print(f"{cat:14} {sum(t.values()):4} {t[cat]:5}  {wrong}")
        if a.names:
            for name, got in sorted(names[cat]):
                print(f"    {'ok ' if got == cat else '-> '}{got:14} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
