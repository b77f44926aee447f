"""A held-out-like figure on the TRAIN logs: each log diagnosed again without the rules that explained it.

The rules were written on the train logs, so the train figure is in-sample (the right rule fires, tuned to
its log). On a log nobody here has seen, the rule that would know its exact message is often missing, and
the reasoning that needs no signature (``engine/reason.py``: who raised, the stage, the message's words,
the symptom family's differential) has to carry the diagnosis. This bench measures that on train logs
only (``split.json`` ``train``; dev and calib logs are never read):

* ``lead``: the rule behind the top cause is left out (its findings are dropped after the scan);
* ``all``: every rule that contributed a cause is left out, so only downstream findings and the reasoning
  remain.

Logs that no rule explained are not counted (their figure is the train figure). Printed: type, top-1 and
top-3 per mode, and with ``-v`` the logs whose labelled category is not among the first three.

    PYTHONPATH=. .venv/bin/python bench/ablate_rules.py [-v]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.accuracy import OWN, THREADS, Case, all_cases  # noqa: E402


@contextmanager
def dropping(rule_ids: set[str]) -> Iterator[None]:
    """Drop the findings of ``rule_ids`` between the scan and the analysis (the scanner is unchanged)."""
    from pytest_faildiag.engine import api

    original = api.analyze

    def analyze(scan: Any, rs: Any, **kw: Any) -> Any:
        scan.findings = [f for f in scan.findings if f.rule.id not in rule_ids]
        return original(scan, rs, **kw)

    api.analyze = analyze  # type: ignore[assignment]
    try:
        yield
    finally:
        api.analyze = original  # type: ignore[assignment]


def _diagnose(case: Case, drop: set[str]) -> Any:
    from pytest_faildiag.engine.api import diagnose

    with warnings.catch_warnings(), dropping(drop):
        warnings.simplefilter("ignore")
        return diagnose([str(f) for f in case.files], exit_code=case.exit_code, command=case.command)


def run(cases: list[Case], mode: str, verbose: bool = False) -> tuple[int, int, int, int]:
    """(logs, type right, top-1 right, top-3 right) with the explaining rules of each log left out."""
    n = ty = t1 = t3 = 0
    for case in cases:
        diag = _diagnose(case, set())
        rules = [c.rule for c in diag.root_causes if not c.rule.startswith(OWN)]
        if not rules:
            continue
        drop = {diag.root_causes[0].rule} if mode == "lead" and rules[0] == diag.root_causes[0].rule else set(rules)
        diag = _diagnose(case, drop)
        cats = [c.category for c in diag.root_causes]
        n += 1
        ty += diag.profile.type == case.label.get("type")
        t1 += bool(cats) and cats[0] == case.category
        t3 += case.category in cats[:3]
        if verbose and case.category not in cats[:3]:
            print(f"  {mode:4} {case.name:60} {diag.profile.type:14} {','.join(cats[:3]):40} want {case.category}")
    return n, ty, t1, t3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", "-v", action="store_true", help="print the logs missed in the top 3")
    a = ap.parse_args(argv)
    cases = [c for c in all_cases([THREADS]) if c.label.get("set") == "train"]
    for mode in ("lead", "all"):
        n, ty, t1, t3 = run(cases, mode, a.verbose)
        print(
            f"train without the {mode:4} rule(s) {n:3} logs: type {ty / n:6.1%}  top-1 {t1 / n:6.1%}  top-3 {t3 / n:6.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
