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

_GROUP = {"infra_false_fail": "harness", "environment": "environment", "genuine": "genuine", "unknown": "unknown"}


def rollup(result: ExperimentResult) -> dict[str, Any]:
    """Counts per verdict/subtype and per experiment, and whether the measurements can be trusted.

    Only the attempt each replicate's result rests on counts as a failure: a superseded attempt (a retry or
    second chance replaced it) is listed, never counted, so the failures can never outnumber the recorded runs.
    Trustworthy when infrastructure false-fails, environment stops and undiagnosable runs together are at most 5%
    of all recorded runs: above that, the pass rates retort reports are distorted by something other than the
    models.
    """
    recorded = _one_per_replicate([d for d in result.diagnoses if not d.superseded])
    superseded = [d for d in result.diagnoses if d.superseded or d not in recorded]
    by_verdict = Counter(d.verdict for d in recorded)
    by_subtype = Counter(f"{d.verdict}/{d.subtype}" for d in recorded)
    suspect = sum(1 for d in recorded if d.verdict in {"infra_false_fail", "environment", "unknown"})
    total = max(result.total_runs, len(recorded), 1)
    share = suspect / total
    return {
        "failed_runs": len(recorded),
        "total_runs": result.total_runs,
        "superseded_attempts": len(superseded),
        "by_verdict": {v: by_verdict.get(v, 0) for v in VERDICTS},
        "by_subtype": dict(sorted(by_subtype.items())),
        "superseded_by_verdict": dict(Counter(d.verdict for d in superseded)),
        "hypothesis_only": sum(
            1 for d in recorded if not any(c.kind == "direct" and "tests" in c.text for c in d.claims)
        ),
        "suspect_share": round(share, 4),
        "measurements_trustworthy": share <= 0.05,
        "why": (
            f"{suspect} of {total} recorded runs failed for the harness, the environment or an undiagnosable "
            f"reason ({share:.0%}; threshold 5%; {len(superseded)} superseded attempts are listed, not counted)"
        ),
        "experiments": per_experiment(result),
        "problems": result.problems,
        "sandbox": sandbox_rollup(result),
    }


def _one_per_replicate(diagnoses: list[Any]) -> list[Any]:
    """One entry per replicate: when the archive cannot order ``repN`` and ``repN-failed`` both are listed, but
    the replicate is one recorded run and counts once (the first entry)."""
    seen: set[str] = set()
    out = []
    for d in diagnoses:
        key = d.run[: -len("-failed")] if d.run.endswith("-failed") else d.run
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def per_experiment(result: ExperimentResult) -> dict[str, dict[str, Any]]:
    """Per experiment: failures by cause group, superseded attempts, and the published scores that would change.

    A recorded failure whose cause is the harness or the environment is a data point the published pass rate
    should not hold as the model's: that cell's score changes once it is rescored or re-run.
    """
    out: dict[str, dict[str, Any]] = {}
    counted = {id(d) for d in _one_per_replicate([d for d in result.diagnoses if not d.superseded])}
    for d in result.diagnoses:
        try:
            name = Path(d.experiment).relative_to(result.root).as_posix() or "."
        except ValueError:
            name = d.experiment
        e = out.setdefault(
            name,
            {
                "recorded_failures": 0,
                "harness": 0,
                "environment": 0,
                "genuine": 0,
                "unknown": 0,
                "superseded_attempts": 0,
                "scores_that_would_change": [],
            },
        )
        if id(d) not in counted:
            e["superseded_attempts"] += 1
            continue
        e["recorded_failures"] += 1
        e[_GROUP.get(d.verdict, "unknown")] += 1
        if d.verdict in {"infra_false_fail", "environment"}:
            how = (
                "rescore"
                if d.verdict == "infra_false_fail" and d.subtype in {"scorer_gap", "mis_measurement", "undeclared_deps"}
                else "re-run"
            )
            e["scores_that_would_change"].append(f"{d.run} ({d.verdict}/{d.subtype}: {how})")
    return dict(sorted(out.items()))


def sandbox_rollup(result: ExperimentResult) -> dict[str, Any]:
    """Which protections held for the archived tests this pass ran (they are untrusted, agent-written code).

    ``held``: held for every test run; ``not_held``: ``"name: why"``, once per name, for any run where it did
    not (the first reason seen). Runs whose tests were not run do not count.
    """
    runs = [
        d.test_run
        for d in result.diagnoses
        if d.test_run is not None and (d.test_run.sandbox_held or d.test_run.sandbox_not_held)
    ]
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
    lines.append(
        f"Roll-up: {roll['failed_runs']} failed of {roll['total_runs']} recorded runs "
        f"(+{roll.get('superseded_attempts', 0)} superseded attempts, listed above, not counted): "
        + ", ".join(f"{k} {v}" for k, v in roll["by_verdict"].items())
    )
    for k, v in roll["by_subtype"].items():
        lines.append(f"    {k}: {v}")
    for name, e in (roll.get("experiments") or {}).items():
        lines.append(
            f"  {name}: {e['recorded_failures']} failed — harness {e['harness']}, environment "
            f"{e['environment']}, genuine {e['genuine']}, unknown {e['unknown']}; "
            f"{e['superseded_attempts']} superseded attempt(s)"
        )
        for run in e["scores_that_would_change"]:
            lines.append(f"      score would change: {run}")
    lines.append(
        ("Measurements trustworthy: yes — " if roll["measurements_trustworthy"] else "Measurements trustworthy: NO — ")
        + roll["why"]
    )
    box = roll.get("sandbox") or {}
    if box.get("test_runs"):
        lines.append(
            f"Archived tests ran sandboxed (test runs: {box['test_runs']}); held: {', '.join(box['held']) or 'none'}"
        )
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
