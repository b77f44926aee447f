"""Roll-up across runs and the text/JSON outputs (atomic writes, redacted)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_faildiag.fsio import atomic_write
from pytest_faildiag.integrations.retort.model import VERDICTS, ExperimentResult
from pytest_faildiag.redact import redact_obj
from pytest_faildiag.sanitize import display


def rollup(result: ExperimentResult) -> dict[str, Any]:
    """Counts per verdict/subtype and whether the measurements can be trusted.

    Trustworthy when infrastructure false-fails plus undiagnosable runs are at most 5% of all recorded runs:
    above that, the pass rates retort reports are distorted by the harness, not the models.
    """
    by_verdict = Counter(d.verdict for d in result.diagnoses)
    by_subtype = Counter(f"{d.verdict}/{d.subtype}" for d in result.diagnoses)
    superseded = [d for d in result.diagnoses if d.superseded]
    suspect = sum(1 for d in result.diagnoses if d.verdict in {"infra_false_fail", "unknown"} and not d.superseded)
    total = max(result.total_runs, len(result.diagnoses), 1)
    share = suspect / total
    trust = share <= 0.05
    return {
        "failed_runs": len(result.diagnoses),
        "total_runs": result.total_runs,
        "by_verdict": {v: by_verdict.get(v, 0) for v in VERDICTS},
        "by_subtype": dict(sorted(by_subtype.items())),
        "hypothesis_only": sum(1 for d in result.diagnoses if not any(c.kind == "direct" and "tests" in c.text
                                                                      for c in d.claims)),
        "superseded_attempts": len(superseded),
        "suspect_share": round(share, 4),
        "measurements_trustworthy": trust,
        "why": (f"{suspect} of {total} recorded runs are infrastructure false-fails or undiagnosable "
                f"({share:.0%}; threshold 5%; {len(superseded)} superseded attempts whose retry was recorded "
                "are not counted)"),
        "problems": result.problems,
        "sandbox": sandbox_rollup(result),
    }


def sandbox_rollup(result: ExperimentResult) -> dict[str, Any]:
    """Which protections held for the archived tests this pass ran (they are untrusted, agent-written code).

    ``held``: held for every test run; ``not_held``: ``"name: why"``, once per name, for any run where it did
    not (the first reason seen). Runs whose tests were not run do not count.
    """
    runs = [d.test_run for d in result.diagnoses
            if d.test_run is not None and (d.test_run.sandbox_held or d.test_run.sandbox_not_held)]
    held = [n for n in (runs[0].sandbox_held if runs else []) if all(n in r.sandbox_held for r in runs)]
    not_held: dict[str, str] = {}
    for r in runs:
        for entry in r.sandbox_not_held:
            not_held.setdefault(entry.split(":", 1)[0], entry)
    return {"test_runs": len(runs), "held": held, "not_held": list(not_held.values())}


def render_text(result: ExperimentResult, roll: dict[str, Any]) -> str:
    """The text report. Run folders, claims quoting agent logs and their sources were written by the
    agents: each is one line, redacted, its control characters shown (a folder named ``\\x1b]0;...`` or
    holding a newline neither steers the terminal nor forges a verdict line)."""
    def one(x: object) -> str:
        return display(x, one_line=True)

    lines: list[str] = []
    for d in result.diagnoses:
        lines.append(f"[{one(d.verdict)}/{one(d.subtype)}] {one(d.run)}")
        for c in d.claims:
            lines.append(f"    [{one(c.kind.upper())}] {one(c.text)}  ({one(c.source)})")
        lines.append(f"    -> {one(d.action)}")
    lines.append("")
    lines.append(f"Roll-up: {roll['failed_runs']} failed of {roll['total_runs']} recorded runs: " + ", ".join(
        f"{k} {v}" for k, v in roll["by_verdict"].items()))
    for k, v in roll["by_subtype"].items():
        lines.append(f"    {k}: {v}")
    lines.append(("Measurements trustworthy: yes — " if roll["measurements_trustworthy"] else
                  "Measurements trustworthy: NO — ") + roll["why"])
    box = roll.get("sandbox") or {}
    if box.get("test_runs"):
        lines.append(f"Archived tests ran sandboxed (test runs: {box['test_runs']}); held: {', '.join(box['held']) or 'none'}")
        lines.extend(f"    NOT held: {entry}" for entry in box["not_held"])
    for p in roll["problems"]:
        lines.append(f"warning: {one(p)}")
    return display("\n".join(lines)) + "\n"


def write_outputs(out: Path, result: ExperimentResult, roll: dict[str, Any]) -> None:
    """Atomic writes of the detailed diagnosis, the roll-up and the text report into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    _atomic_json(out / "retort-diagnosis.json", {"runs": [d.to_detail() for d in result.diagnoses]})
    _atomic_json(out / "retort-rollup.json", roll)
    atomic_write(out / "retort-report.txt", render_text(result, roll))


def _atomic_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(redact_obj(data), indent=2, sort_keys=False) + "\n")
