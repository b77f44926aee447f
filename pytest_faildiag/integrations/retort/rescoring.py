"""Writing corrected ``test_coverage`` for scorer false-fails (``--rescore``), optionally into ``retort.db``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pytest_faildiag.integrations.retort.model import _GATE_ERROR, ExperimentResult
from pytest_faildiag.integrations.retort.report import _atomic_json


def rescore(result: ExperimentResult, out: Path, write_db: bool = False) -> list[dict[str, Any]]:
    """Record the corrected ``test_coverage`` of scorer false-fails into ``out/rescore.json``.

    Only runs classified ``infra_false_fail`` with a measured coverage (or a pass rate) qualify. retort.db is
    touched only with ``write_db``: then ``test_coverage`` is updated and a gate-failed status becomes
    ``completed``; the other metrics stay as the gate zeroed them (``retort rescore --only-failed`` recomputes
    them), which the change list says. A DB write that fails is reported in the entry, never raised.
    """
    changes: list[dict[str, Any]] = []
    for d in result.diagnoses:
        tr = d.test_run
        if d.verdict != "infra_false_fail" or tr is None or tr.status != "passed":
            continue
        new_cov = tr.coverage if tr.coverage else (tr.passed / max(tr.passed + tr.failed, 1))
        entry: dict[str, Any] = {
            "run": d.run,
            "subtype": d.subtype,
            "db_run_id": d.db_id,
            "test_coverage": {"old": d.recorded_test_coverage, "new": round(new_cov, 4)},
            "basis": "line coverage" if tr.coverage else "test pass rate (coverage unavailable)",
            "status": {"old": None, "new": None},
            "db_written": False,
            "note": "other metrics were zeroed by retort's gate and are not recomputed here",
        }
        if write_db and d.db_id is not None:
            entry.update(_write_db(Path(d.experiment) / "retort.db", d.db_id, new_cov))
        changes.append(entry)
    out.mkdir(parents=True, exist_ok=True)
    _atomic_json(out / "rescore.json", {"changes": changes, "write_db": write_db})
    return changes


def _write_db(db_path: Path, run_id: int, coverage: float) -> dict[str, Any]:
    try:
        con = sqlite3.connect(db_path, timeout=2.0)
    except sqlite3.Error as exc:
        return {"db_written": False, "db_error": str(exc)}
    try:
        with con:
            row = con.execute("SELECT status, error_message FROM experiment_runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                return {"db_written": False, "db_error": f"no experiment_runs row {run_id}"}
            cur = con.execute(
                "UPDATE run_results SET value=? WHERE run_id=? AND metric_name='test_coverage'", (coverage, run_id)
            )
            if cur.rowcount == 0:
                con.execute(
                    "INSERT INTO run_results (run_id, metric_name, value) VALUES (?, 'test_coverage', ?)",
                    (run_id, coverage),
                )
            new_status = row[0]
            if row[0] == "failed" and str(row[1] or "").startswith(_GATE_ERROR):
                new_status = "completed"
                con.execute("UPDATE experiment_runs SET status='completed', error_message=NULL WHERE id=?", (run_id,))
        return {"db_written": True, "status": {"old": row[0], "new": new_status}}
    except sqlite3.Error as exc:
        return {"db_written": False, "db_error": str(exc)}
    finally:
        con.close()
