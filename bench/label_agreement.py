"""How far can a reader get from the log alone? A second labeller's agreement with the corpus labels.

Why: issue 13's bar is a top-1 cause category of 70 % on unseen logs. Whether that bar is reachable from the
log alone depends on how much of a thread's confirmed cause the log itself carries, and on how consistently the
category boundaries (library / environment / model, config / resource, backend / environment) can be drawn.
This script reads two blind relabellings of the same 80 train logs (drawn at random, seed 20261201) and scores
them against the corpus labels, beside the engine on the same logs (with the rules that explained each log, an
in-sample figure, and without them, as ``bench/confusion.py --without-rules`` does):

* ``label_study/with_confirmation.json``: a second labeller given the log and the gatherer's one-line account
  of the thread's confirmation (not the category), applying the labelling guide's definitions;
* ``label_study/log_only.json``: a second labeller given the log only, as an on-call engineer has it.

Both labellers were language-model helpers of this project, told the contract's and the labelling guide's
definitions and nothing of the engine or the labels; each answered a first category, a second one and whether
it was sure. Train logs only (dev and calib are frozen).

    .venv/bin/python bench/label_agreement.py [--no-engine]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from accuracy import FROZEN, THREADS, thread_cases  # noqa: E402

STUDIES = ("with_confirmation", "log_only")


def truth_of(log: str) -> str:
    return str(json.loads((THREADS / f"{log}.json").read_text(encoding="utf-8"))["category"])


def score(answers: list[dict[str, object]]) -> tuple[int, int, int, int, Counter[tuple[str, str]]]:
    """(first right, first or second right, sure answers, sure and right, the disagreements truth → answer)."""
    first = two = sure = sure_right = 0
    missed: Counter[tuple[str, str]] = Counter()
    for a in answers:
        truth = truth_of(str(a["log"]))
        right = a["category"] == truth
        first += right
        two += right or a.get("second") == truth
        sure += bool(a["sure"])
        sure_right += bool(a["sure"]) and right
        if not right:
            missed[(truth, str(a["category"]))] += 1
    return first, two, sure, sure_right, missed


def engine_on(logs: set[str]) -> tuple[int, int, int, int]:
    """The engine's top-1 and top-3 on these logs, with and without the rules that explained each one."""
    from confusion import _top3

    cases = [c for c in thread_cases(THREADS) if c.name in logs]
    if any(c.label.get("set") in FROZEN for c in cases):
        raise SystemExit("refused: the study's logs must all be train logs")
    out = [0, 0, 0, 0]
    for c in cases:
        truth = c.label["category"]
        for i, without in enumerate((False, True)):
            top = _top3(c, without)
            out[2 * i] += top[:1] == [truth]
            out[2 * i + 1] += truth in top
    return out[0], out[1], out[2], out[3]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-engine", action="store_true", help="only the labellers' agreement")
    a = ap.parse_args(argv)
    logs: set[str] = set()
    for study in STUDIES:
        answers = json.loads((HERE / "label_study" / f"{study}.json").read_text(encoding="utf-8"))
        logs |= {str(x["log"]) for x in answers}
        first, two, sure, sure_right, missed = score(answers)
        n = len(answers)
        print(
            f"{study:18} {n} logs: first answer right {first} ({100 * first / n:.1f}%), first or second {two} "
            f"({100 * two / n:.1f}%); sure {sure}, of them right {sure_right}"
        )
        print("  disagreements (label -> answer): " + ", ".join(f"{t}->{g} {k}" for (t, g), k in missed.most_common(6)))
    if not a.no_engine:
        r1, r3, w1, w3 = engine_on(logs)
        n = len(logs)
        print(f"engine             {n} logs: with its rules (in-sample) top-1 {r1}, top-3 {r3}; without the rules that")
        print(
            f"                   explained each log top-1 {w1} ({100 * w1 / n:.1f}%), top-3 {w3} ({100 * w3 / n:.1f}%)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
