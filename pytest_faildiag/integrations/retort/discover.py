"""Finding experiments and their failed runs: ``retort.db`` rows first, then ``runs/<cell>/rep<N>`` folders.

A locked or corrupt ``retort.db`` is reported as a problem and the folders are used alone.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_faildiag.fsio import loads_json, within
from pytest_faildiag.integrations.retort.model import _NOISE_DIRS, Claim, RetortInputError, RunRecord
from pytest_faildiag.integrations.retort.signals import _load_folder_signals, _read_json


def find_experiments(root: Path) -> list[Path]:
    """Experiment roots under ``root``: folders holding a ``retort.db`` or a ``runs/`` folder of cells.

    Raises RetortInputError when ``root`` is not a folder or holds no experiment at all.
    """
    if not root.is_dir():
        raise RetortInputError(f"experiment dir not found: {root}")
    found: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _NOISE_DIRS and not d.startswith(".")]
        here = Path(dirpath)
        if "retort.db" in filenames or ("runs" in dirnames and _looks_like_runs(here / "runs")):
            found.add(here)
            dirnames[:] = [d for d in dirnames if d != "runs"]
        if "runs" in here.parts[len(root.parts):]:
            dirnames[:] = []
    if not found:
        raise RetortInputError(f"no retort experiment (retort.db or runs/) under {root}")
    return sorted(found)


def _looks_like_runs(runs: Path) -> bool:
    try:
        return any(
            cell.is_dir() and any(re.fullmatch(r"rep\d+(-failed)?", r.name) for r in cell.iterdir())
            for cell in runs.iterdir()
        )
    except OSError:
        return False


def cell_name(run_config: dict[str, Any]) -> str:
    """The archive folder name retort derives from a run config (sorted ``k=v`` joined by ``_``)."""
    return "_".join(f"{k}={v}" for k, v in sorted(run_config.items()))


def _closest_cell(runs_dir: Path, run_config: dict[str, Any]) -> str:
    """A cell folder whose ``k=v`` factors are all in ``run_config`` (older archives dropped some factors).

    Returns the exact name when nothing matches, so the caller reports an archive gap.
    """
    want = {f"{k}={v}" for k, v in run_config.items()}
    best, best_n = cell_name(run_config), 0
    try:
        cells = [c.name for c in runs_dir.iterdir() if c.is_dir()]
    except OSError:
        return best
    for name in cells:
        parts = set(re.findall(r"(?:^|_)([A-Za-z][\w.-]*?=[^_=]+(?:_[^_=]+)*?)(?=_[A-Za-z][\w.-]*=|$)", name))
        if parts and parts <= want and len(parts) > best_n:
            best, best_n = name, len(parts)
    return best


@dataclass
class DbRows:
    rows: list[dict[str, Any]]
    total_runs: int
    problem: str | None = None


def read_db(db_path: Path) -> DbRows:
    """All experiment_runs rows with their metrics, read-only; a locked/corrupt DB yields ``problem``.
    A ``retort.db`` that is a symlink out of its experiment folder is a problem, not a read."""
    if not db_path.is_file():
        return DbRows([], 0, None)
    if within(db_path, [db_path.parent.resolve()]) is None:
        return DbRows([], 0, "retort.db points outside its experiment folder; not read")
    try:
        con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error as exc:
        return DbRows([], 0, f"retort.db could not be opened: {exc}")
    try:
        con.row_factory = sqlite3.Row
        runs = [dict(r) for r in con.execute(
            "SELECT id, replicate, status, error_message, run_config_json FROM experiment_runs")]
        metrics: dict[int, dict[str, float]] = {}
        for r in con.execute("SELECT run_id, metric_name, value FROM run_results"):
            metrics.setdefault(r["run_id"], {})[r["metric_name"]] = r["value"]
        for r in runs:
            r["metrics"] = metrics.get(r["id"], {})
        return DbRows(runs, len(runs))
    except sqlite3.Error as exc:
        return DbRows([], 0, f"retort.db could not be read ({exc})")
    finally:
        con.close()


def _scores_failed(scores: dict[str, Any]) -> bool:
    vals = [v for v in scores.values() if isinstance(v, int | float)]
    if not vals:
        return False
    return scores.get("test_coverage") == 0 or all(v == 0 for v in vals)


def collect_runs(exp: Path, root: Path) -> tuple[list[RunRecord], int, str | None]:
    """Every failed run of one experiment, DB rows first, then folders the DB does not account for."""
    db = read_db(exp / "retort.db")
    runs_dir = exp / "runs"
    records: list[RunRecord] = []
    claimed: set[Path] = set()

    def rel(p: Path) -> str:
        try:
            return p.relative_to(root).as_posix()
        except ValueError:
            return p.as_posix()

    by_key: dict[tuple[str, int], str] = {}
    completed_keys = set()
    for row in db.rows:
        if row.get("status") == "completed":
            try:
                rc0 = loads_json(row.get("run_config_json") or "{}")
                completed_keys.add((cell_name(rc0 if isinstance(rc0, dict) else {}), int(row.get("replicate") or 0)))
            except (ValueError, TypeError):
                pass
    for row in db.rows:
        try:
            rc = loads_json(row.get("run_config_json") or "{}")
            rc = rc if isinstance(rc, dict) else {}
        except (ValueError, TypeError):
            rc = {}
        cell = cell_name(rc)
        rep = int(row.get("replicate") or 0)
        by_key[(cell, rep)] = row.get("status") or ""
        if row.get("status") == "completed":
            continue
        matched_cell = cell if (runs_dir / cell).is_dir() else _closest_cell(runs_dir, rc)
        plain = runs_dir / matched_cell / f"rep{rep}"
        failed_dir = runs_dir / matched_cell / f"rep{rep}-failed"
        # A crashed run is archived as repN-failed; a gate-failed one (agent exited 0) keeps repN.
        order = [failed_dir, plain] if row.get("status") == "crashed" else [plain, failed_dir]
        if (cell, rep) in completed_keys:  # the plain repN folder belongs to the completed retry
            order = [failed_dir]
        rep_dir = next((d for d in order if d.is_dir()), None)
        rec = RunRecord(
            experiment=exp, rel=rel(rep_dir or plain), rep_dir=rep_dir, cell=cell, replicate=rep,
            db_id=row.get("id"), db_status=row.get("status"), db_error=row.get("error_message"),
            run_config={str(k): str(v) for k, v in rc.items()}, metrics=row.get("metrics", {}),
        )
        if (cell, rep) in completed_keys:
            rec.retry_completed = True
            rec.notes.append(Claim("another DB row with the same configuration and replicate is 'completed': this "
                                   "attempt was superseded by a recorded retry", "direct", "retort.db experiment_runs"))
        if rep_dir is not None:
            claimed.add(rep_dir)
            if matched_cell != cell:
                rec.notes.append(Claim(f"no folder named after the DB run config; matched folder {matched_cell} "
                                       "whose factors are a subset of it", "hypothesis", rec.rel))
        records.append(rec)

    if runs_dir.is_dir():
        for rep_dir in sorted(runs_dir.glob("*/rep*")):
            m = re.fullmatch(r"rep(\d+)(-failed)?", rep_dir.name)
            if not m or not rep_dir.is_dir() or rep_dir in claimed:
                continue
            scores, _ = _read_json(rep_dir / "scores.json", exp)
            is_failed_dir = bool(m.group(2))
            if not is_failed_dir and not (isinstance(scores, dict) and _scores_failed(scores)):
                continue
            rep = int(m.group(1))
            status = by_key.get((rep_dir.parent.name, rep))
            rec = RunRecord(experiment=exp, rel=rel(rep_dir), rep_dir=rep_dir, cell=rep_dir.parent.name,
                            replicate=rep, db_status=status)
            plain = rep_dir.parent / f"rep{rep}"
            if is_failed_dir and plain.is_dir():
                rec.superseded_by = rel(plain)
                rec.retry_completed = status == "completed"
            records.append(rec)

    cohorts = _instant_fail_cohorts(db.rows)
    for rec in records:
        if rec.db_id in cohorts:
            rec.cohort = cohorts[rec.db_id]
        _load_folder_signals(rec)
        if db.problem:
            rec.notes.append(Claim(f"{db.problem}; diagnosed from the run folder only", "direct", "retort.db"))
    total = db.total_runs or (len(list(runs_dir.glob("*/rep*"))) if runs_dir.is_dir() else 0)
    return records, total, db.problem


def _instant(row: dict[str, Any]) -> bool:
    m = row.get("metrics") or {}
    dur = m.get("_duration_seconds")
    return (row.get("status") != "completed" and dur is not None and dur < 60
            and not m.get("_tokens") and not m.get("_cost_usd"))


def _instant_fail_cohorts(rows: list[dict[str, Any]], min_size: int = 3) -> dict[int, str]:
    """DB ids of runs that belong to a factor level where EVERY run failed instantly for $0.

    Why a cohort and not the single run: one instant $0 failure is only a hint (local models cost $0, kills
    record 0 tokens), but a whole factor level failing that way while other levels of the same experiment
    complete is a pattern observed in the data — the configuration, not the model, stopped those runs.
    """
    if not any(r.get("status") == "completed" for r in rows):
        return {}
    levels: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        try:
            rc = loads_json(r.get("run_config_json") or "{}")
        except ValueError:
            continue
        if isinstance(rc, dict):
            for k, v in rc.items():
                levels.setdefault(f"{k}={v}", []).append(r)
    out: dict[int, str] = {}
    for level, members in sorted(levels.items(), key=lambda kv: len(kv[1])):
        if len(members) >= min_size and len(members) < len(rows) and all(_instant(r) for r in members):
            for r in members:
                out.setdefault(r["id"], f"all {len(members)} runs with {level} failed in under 60s at $0/0 tokens "
                                        f"while other runs of the experiment completed")
    return out
