"""Stage 2b: validation checks, executed against the evidence and (when allowed) the machine.

A check is a small function known by name; rule files list the names of the checks that support or
contradict their causes. Which names exist is data handed in with the context (``CheckContext.checks``):
the built-in tables (``checks.CHECKS``, ``checks_env.CHECKS``, ``checks_kb.CHECKS``) plus whatever the
``pytest_faildiag_checks`` hook returned, so importing a module never changes what runs. A check returns a
``ValidationCheck`` whose status
moves the cause's confidence (passed raises it, failed lowers it, skipped leaves it) or ``None`` when it
has nothing to say. Checks must never raise: the runner turns an exception into ``skipped`` with the
reason, because a broken check must not cost the user their diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import RootCause, ValidationCheck


@dataclass
class CheckContext:
    """What a check may look at. ``scan`` is the engine's ScanResult (lines matched, tracebacks,
    tails); ``lock`` the environment lock when one was given; ``probe_machine`` is False when the
    evidence comes from another machine (a stored log), so checks of the live machine must skip.
    ``checks`` maps a check's name to its function: the names a rule may list in this diagnosis; ``patterns`` the
    rule set's named texts (``[patterns]`` of the packs), the words a check looks for kept as data."""

    scan: Any
    profile: Any
    lock: dict[str, Any] | None = None
    probe_machine: bool = False
    context: dict[str, Any] = field(default_factory=dict)
    checks: Mapping[str, CheckFn] = field(default_factory=dict)
    patterns: Mapping[str, Any] = field(default_factory=dict)


CheckFn = Callable[[CheckContext, RootCause, dict[str, Any]], "ValidationCheck | None"]
"""A check: (context, the cause it tests, the finding that produced the cause as plain data) → result."""

# How much a check result moves a cause's confidence.
PASSED_FACTOR = 1.15
FAILED_FACTOR = 0.55
# a failed check whose result refutes the premise of the cause (``ValidationCheck.refutes``): the cause falls
# to about a tenth of its prior, below the symptom's other homes
REFUTED_FACTOR = 0.11


def run_checks(ctx: CheckContext, cause: RootCause, names: list[str], finding: dict[str, Any]) -> None:
    """Run the named checks for ``cause`` and fold their outcome into its confidence."""
    for name in names:
        fn = ctx.checks.get(name)
        if fn is None:
            result: ValidationCheck | None = ValidationCheck(name, "skipped", "no such check is installed")
        else:
            try:
                result = fn(ctx, cause, finding)
            except Exception as exc:  # a broken check never costs the diagnosis
                result = ValidationCheck(name, "skipped", f"check raised {type(exc).__name__}: {exc}")
        if result is None:
            continue
        cause.validation_checks.append(result)
        if result.status == "passed":
            cause.confidence = min(0.99, cause.confidence * PASSED_FACTOR)
        elif result.status == "failed":
            cause.confidence = cause.confidence * (REFUTED_FACTOR if result.refutes else FAILED_FACTOR)


def listed(items: list[str], shown: int = 4, sep: str = ", ") -> str:
    """The first ``shown`` of ``items`` joined, and how many more there are: a check's detail stays one line."""
    more = f" (+{len(items) - shown} more)" if len(items) > shown else ""
    return sep.join(items[:shown]) + more
