"""Helpers shared by the reasoning tests: train logs of the thread corpus (the split is checked, so a dev
log can never become a test), optionally diagnosed with the packs that know their message left out, and
real Python processes run here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.model import Diagnosis
from pytest_faildiag.rules import RuleSet, _builtin_packs, build_ruleset, load_ruleset

THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def loaded_rule_ids() -> set[str]:
    """The ids of the built-in rule set, loaded with every warning recorded: a pack that does not parse,
    holds an invalid regex or an unknown category is skipped with a faildiag warning, and that fails here."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ruleset = load_ruleset()
    faildiag = [str(w.message) for w in caught if "faildiag" in str(w.message)]
    assert not faildiag, faildiag
    return {r.id for r in ruleset.rules}


def without(*packs: str) -> RuleSet:
    """The built-in rule set without ``packs``: the rules that know a message are left out."""
    return build_ruleset([p for p in _builtin_packs() if p[0] not in packs])


def train_log(name: str, *left_out: str) -> tuple[Diagnosis, dict]:
    """A train log and its label, diagnosed with every built-in pack, or without the packs ``left_out``
    (a log whose message no rule knows)."""
    split = json.loads((THREADS / "split.json").read_text())["split"]
    assert split[name] == "train", name
    log = THREADS / f"{name}.log"
    label = json.loads(log.with_suffix(".json").read_text())
    rs = without(*left_out) if left_out else None
    return diagnose([str(log)], exit_code=label.get("exit_code"), command=label.get("command"), ruleset=rs), label


def run_failing(tmp_path: Path, code: str) -> tuple[str, int]:
    """Run ``code`` as a real Python script in ``tmp_path``; it must fail. Its stderr and exit status."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


def cats(diag, n: int = 3) -> list[str]:
    return [c.category for c in diag.root_causes[:n]]


def context_checks(diag, category: str) -> dict[str, str]:
    """The ``context:`` checks of the first cause of ``category``: which facts the reasoning applied to it."""
    cause = next(c for c in diag.root_causes if c.category == category)
    return {v.name: v.status for v in cause.validation_checks if v.name.startswith("context:")}


def all_checks(diag) -> set[str]:
    return {v.name for c in diag.root_causes for v in c.validation_checks}
