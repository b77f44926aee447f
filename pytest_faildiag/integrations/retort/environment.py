"""Environment evidence from run metadata: configured limits, runs that did no model work, failures clustered in time.

Why metadata: the public archive keeps no agent logs, yet the DB still says how long a run took and how many
tokens it used. A run that spent no tokens did no model work at all — whatever stopped it (no login, a quota or
usage-limit window, a model server that was down) was outside the model. Several such runs of one experiment
within minutes of each other point at an outage rather than at any one cell. A run that ended at the
experiment's configured wall clock, or used every turn of its ``max_turns`` budget, was stopped by the harness;
both limits are read from ``workspace.yaml``.

Reads only the experiment's own files; no YAML library (a dependency the project does not take): the three keys
needed are plain ``key: number`` lines.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_faildiag.fsio import read_capped
from pytest_faildiag.integrations.retort.model import RunRecord

# Seconds under which no agent finishes real work; used only together with zero recorded tokens/cost.
INSTANT_S = 10.0
# A run that recorded zero tokens within this many seconds did no model work (kills are excluded separately).
NO_WORK_S = 120.0
# No-work failures of one experiment closer than this are one event (an outage), not independent misses.
CLUSTER_WINDOW_S = 15 * 60.0
_LIMIT_KEYS = {"timeout_minutes": "timeout_s", "stall_minutes": "stall_s"}
_KILL = re.compile(r"^(Timeout after \d+s|Killed after \d+s)", re.I | re.M)


def experiment_limits(exp: Path) -> dict[str, float]:
    """``{"timeout_s": ..., "stall_s": ..., "max_turns": ...}`` from the experiment's ``workspace.yaml`` (absent keys
    left out; the two clocks in seconds, the turn budget as a count)."""
    for name in ("workspace.yaml", "workspace.yml"):
        try:
            text = read_capped(exp / name, 200_000).decode("utf-8", "replace")
        except OSError:
            continue
        out: dict[str, float] = {}
        for key, field in _LIMIT_KEYS.items():
            m = re.search(rf"^\s*{key}\s*:\s*(\d+(?:\.\d+)?)\b", text, re.M)
            if m:
                out[field] = float(m.group(1)) * 60.0
        m = re.search(r"^\s*max_turns\s*:\s*(\d+)\b", text, re.M)
        if m:
            out["max_turns"] = float(m.group(1))
        return out
    return {}


def _num(v: Any) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def telemetry(rec: RunRecord) -> tuple[float | None, float | None, float | None]:
    """(duration s, tokens, cost $) from the DB row, else from a live (not re-score) capture."""
    cap = rec.capture if rec.capture.get("origin") != "rescore" else {}
    m = rec.metrics
    dur = _num(m.get("_duration_seconds") if "_duration_seconds" in m else cap.get("duration_seconds"))
    tok = _num(m.get("_tokens") if "_tokens" in m else cap.get("token_count"))
    cost = _num(m.get("_cost_usd") if "_cost_usd" in m else (cap.get("metadata") or {}).get("total_cost_usd"))
    return dur, tok, cost


def is_kill(rec: RunRecord) -> bool:
    cap = rec.capture if rec.capture.get("origin") != "rescore" else {}
    return bool(
        _KILL.search(rec.db_error or "") or (cap.get("metadata") or {}).get("kill_reason") or cap.get("kill_reason")
    )


def did_no_work(rec: RunRecord) -> str | None:
    """Why the run did no model work, or None: zero tokens in a short run that was not a harness kill.

    Under INSTANT_S a $0 cost counts too when tokens were not recorded (a cloud agent that ran costs money).
    """
    if is_kill(rec):
        return None
    dur, tok, cost = telemetry(rec)
    if dur is None:
        return None
    if tok == 0 and dur < NO_WORK_S:
        return f"ran {dur:.0f}s and recorded 0 tokens"
    if dur < INSTANT_S and tok is None and cost == 0:
        return f"ran {dur:.1f}s at $0 with no token count"
    return None


def turns(rec: RunRecord) -> float | None:
    """Agent turns the run used, from the DB row (``_turns``) or a live capture (``num_turns``)."""
    cap = rec.capture if rec.capture.get("origin") != "rescore" else {}
    v = rec.metrics.get("_turns")
    return _num(v if v is not None else cap.get("num_turns") or (cap.get("metadata") or {}).get("num_turns"))


def at_limit(rec: RunRecord) -> str | None:
    """A run that used up a configured budget: its duration reached the wall clock (within 2%), or it took as many
    turns as ``max_turns`` allows. Said with both numbers.

    Why turns too: an agent CLI stopped at its turn cap exits non-zero exactly like one the clock killed; it is the
    harness's budget that ended the run, and whether that blames the model depends on whether its code already
    works (the caller re-runs the tests to tell).
    """
    dur, _, _ = telemetry(rec)
    limit = rec.limits.get("timeout_s")
    if dur is not None and limit and dur >= 0.98 * limit:
        return (
            f"ran {dur:.0f}s against the experiment's configured wall clock of {limit:.0f}s "
            f"(workspace.yaml timeout_minutes: {limit / 60:g})"
        )
    used, cap = turns(rec), rec.limits.get("max_turns")
    if used is not None and cap and used >= cap:
        return f"used {used:.0f} agent turns against the experiment's configured max_turns: {cap:.0f} (workspace.yaml)"
    return None


def _when(rec: RunRecord) -> float | None:
    if not rec.finished_at:
        return None
    try:
        return datetime.fromisoformat(rec.finished_at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def mark_clusters(records: list[RunRecord]) -> None:
    """Set ``cluster`` on no-work failures of one experiment that happened within CLUSTER_WINDOW_S of another.

    Two or more runs of different cells that each did no model work at nearly the same time share a cause
    outside any one cell (a model server or provider that was down, a login that expired for all of them).
    """
    timed = sorted(((t, r) for r in records if did_no_work(r) and (t := _when(r)) is not None), key=lambda x: x[0])
    for t, rec in timed:
        near = [r for t2, r in timed if r is not rec and abs(t2 - t) <= CLUSTER_WINDOW_S]
        if near:
            cells = sorted({r.cell for r in [rec, *near]})
            rec.cluster = (
                f"{len(near) + 1} runs of this experiment ({len(cells)} cell(s)) did no model work within "
                f"{CLUSTER_WINDOW_S / 60:.0f} minutes of each other (recorded {rec.finished_at})"
            )
