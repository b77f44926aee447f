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
from pytest_faildiag.integrations.retort.environment import experiment_limits, mark_clusters
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
        if "runs" in here.parts[len(root.parts) :]:
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
        # every column: older schemas lack some (finished_at dates the failures for the time clustering)
        runs = [dict(r) for r in con.execute("SELECT * FROM experiment_runs")]
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


def _rel(p: Path, root: Path) -> str:
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.as_posix()


def _rep_folders(runs_dir: Path) -> dict[tuple[str, int], dict[str, Path]]:
    """Every archived attempt, keyed by (cell path relative to runs/, replicate) -> {"plain"|"failed": folder}.

    Why a walk and not ``runs/*/rep*``: a factor value holding ``/`` (``model=mlxlocal/org--name``) nests the cell
    several folders deep, exactly as retort's own ``_iter_archive_cells`` walks it; a rep folder holds the
    workspace, never further cells, so the walk does not descend into one.
    """
    found: dict[tuple[str, int], dict[str, Path]] = {}
    if not runs_dir.is_dir():
        return found
    for dirpath, dirnames, _files in os.walk(runs_dir):
        here = Path(dirpath)
        reps = [d for d in dirnames if re.fullmatch(r"rep\d+(-failed)?", d)]
        dirnames[:] = [d for d in dirnames if d not in reps and d not in _NOISE_DIRS and not d.startswith(".")]
        if len(here.relative_to(runs_dir).parts) > 8:
            dirnames[:] = []
        for name in reps:
            m = re.fullmatch(r"rep(\d+)(-failed)?", name)
            assert m is not None
            cell = here.relative_to(runs_dir).as_posix()
            found.setdefault((cell, int(m.group(1))), {})["failed" if m.group(2) else "plain"] = here / name
    return found


def _succeeded(folder: Path) -> bool | None:
    meta, _ = _read_json(folder / "_meta.json", folder)
    v = meta.get("succeeded") if isinstance(meta, dict) else None
    return v if isinstance(v, bool) else None


def _captured_at(folder: Path) -> str | None:
    cap, _ = _read_json(folder / ".faildiag" / ".capture.json", folder)
    v = cap.get("captured_at") if isinstance(cap, dict) and cap.get("origin") != "rescore" else None
    return v if isinstance(v, str) else None


def _attempt_order(plain: Path, failed: Path, decisive_only: bool = False) -> tuple[str | None, str]:
    """Which of ``repN`` and ``repN-failed`` is the LATER attempt when no DB row says so: ``("plain"|"failed", why)``
    or ``(None, why)``.

    retort names a folder ``-failed`` when the agent exited non-zero, and when a retry or second chance that
    succeeded replaces ``repN`` it renames the older ``repN`` to ``repN-failed`` (keeping its ``succeeded: true``).
    A crashed retry lands in ``repN-failed`` next to the older ``repN``, so the name alone does not order them.
    """
    if _succeeded(failed) is True:
        return "plain", ("repN-failed records succeeded=true: retort renamed it when a later attempt replaced repN")
    a, b = _captured_at(plain), _captured_at(failed)
    if a and b and a != b:
        return ("plain" if a > b else "failed"), "the faildiag captures' timestamps"
    if (failed / "FEEDBACK.md").is_file() and not (plain / "FEEDBACK.md").is_file():
        return "failed", (
            "repN-failed holds FEEDBACK.md (a second chance is seeded with it) and exited non-zero: "
            "it is the crashed second chance after repN"
        )
    if decisive_only:  # archive times are a weaker signal than a DB row
        return None, "the archive does not record which attempt came first"
    try:
        ta, tb = (plain / "_meta.json").stat().st_mtime, (failed / "_meta.json").stat().st_mtime
    except OSError:
        return None, "the archive does not record which attempt came first"
    if abs(ta - tb) > 2:
        return ("plain" if ta > tb else "failed"), "the archive times of their _meta.json"
    return None, "the archive does not record which attempt came first"


def _scores_of(folder: Path) -> dict[str, Any]:
    scores, _ = _read_json(folder / "scores.json", folder)
    return scores if isinstance(scores, dict) else {}


def collect_runs(exp: Path, root: Path) -> tuple[list[RunRecord], int, str | None]:
    """Every failed attempt of one experiment: the DB's failed rows, and every other archived attempt that failed
    (superseded ``repN-failed`` folders, the older ``repN`` a crashed retry left behind, folders without a row).

    Each record says which later attempt superseded it (``superseded_by``) — retort's DB keeps only the LAST
    attempt of a (cell, replicate), so the older folders are the only trace of the earlier ones.
    """
    db = read_db(exp / "retort.db")
    runs_dir = exp / "runs"
    folders = _rep_folders(runs_dir)
    records: list[RunRecord] = []
    claimed: set[Path] = set()
    rows_by_key: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in db.rows:
        try:
            rc = loads_json(row.get("run_config_json") or "{}")
        except (ValueError, TypeError):
            rc = {}
        row["_rc"] = rc if isinstance(rc, dict) else {}
        try:
            rep = int(row.get("replicate") or 0)
        except (TypeError, ValueError):
            rep = 0
        row["_rep"] = rep
        cell = cell_name(row["_rc"])
        row["_cell"] = (
            cell if (runs_dir / cell).is_dir() or not runs_dir.is_dir() else _closest_cell(runs_dir, row["_rc"])
        )
        rows_by_key.setdefault((row["_cell"], rep), []).append(row)

    def add(rec: RunRecord) -> RunRecord:
        records.append(rec)
        if rec.rep_dir is not None:
            claimed.add(rec.rep_dir)
        return rec

    for (cell, rep), rows in rows_by_key.items():
        pair = folders.get((cell, rep), {})
        completed = [r for r in rows if r.get("status") == "completed"]
        # The folder of the recorded (latest) attempt; the other one is an older attempt it superseded. What the
        # folders themselves record (a renamed attempt, a crashed second chance, capture times) outranks the DB
        # status, which `retort rescore` rewrites from whichever folder it scores.
        latest_row = completed[0] if completed else rows[-1]
        recorded = _recorded_folder(latest_row, pair)
        if pair.get("plain") and pair.get("failed") and not completed:
            later, _why = _attempt_order(pair["plain"], pair["failed"], decisive_only=True)
            if later is not None:
                recorded = pair[later]
        for row in rows:
            _add_db_row(
                exp,
                root,
                row,
                pair,
                bool(completed) and row.get("status") != "completed",
                add,
                recorded if row is latest_row else _recorded_folder(row, pair),
            )
        for folder in pair.values():
            if folder in claimed or folder == recorded:
                continue
            rec = add(_folder_record(exp, root, folder, cell, rep, latest_row.get("status")))
            if recorded is None and latest_row.get("status") == "completed":
                rec.superseded_by = f"{_rel(exp / 'runs' / cell, root)}/rep{rep} (completed in retort.db, not archived)"
                rec.retry_completed = True
                rec.notes.append(
                    Claim(
                        "retort.db records this cell and replicate as completed by a later attempt "
                        "whose folder is not archived",
                        "direct",
                        "retort.db experiment_runs",
                    )
                )
            elif recorded is not None:
                rec.superseded_by = _rel(recorded, root)
                rec.retry_completed = latest_row.get("status") == "completed"
                rec.notes.append(
                    Claim(
                        f"an earlier attempt of this cell and replicate: retort's DB keeps one row per "
                        f"replicate, and that row ('{latest_row.get('status')}') belongs to "
                        f"{_rel(recorded, root)}",
                        "direct",
                        "retort.db experiment_runs",
                    )
                )

    for (cell, rep), pair in sorted(folders.items()):
        if (cell, rep) in rows_by_key:
            continue
        _add_folder_pair(exp, root, cell, rep, pair, add)

    cohorts = _instant_fail_cohorts(db.rows)
    limits = experiment_limits(exp)
    for rec in records:
        if rec.db_id in cohorts:
            rec.cohort = cohorts[rec.db_id]
        rec.limits = dict(limits)
        _load_folder_signals(rec)
        if db.problem:
            rec.notes.append(Claim(f"{db.problem}; diagnosed from the run folder only", "direct", "retort.db"))
    peers = scorer_peers(db.rows, folders)
    for rec in records:
        rec.scorer_peers = peers.get(rec.language) if rec.language else None
    mark_clusters(records)
    total = db.total_runs or len(folders)
    return records, total, db.problem


def scorer_peers(rows: list[dict[str, Any]], folders: dict[tuple[str, int], dict[str, Path]]) -> dict[str, str]:
    """language -> a sentence naming the runs of this experiment whose tests retort's scorer measured (coverage>0).

    Why: retort's gate says "tests did not run" both when the run's own project is broken and when the harness
    cannot drive that language's tests (a runner format it does not parse, a toolchain it lacks). When other runs
    of the same language in the same experiment got a non-zero test_coverage, the harness demonstrably could run
    that language's tests there, which points the zero at the run itself. DB rows first; an archive without a DB
    falls back to the folders' scores.json.
    """
    seen: dict[str, list[str]] = {}
    for row in rows:
        lang = str((row.get("_rc") or {}).get("language") or "").lower()
        tc = (row.get("metrics") or {}).get("test_coverage")
        if lang and isinstance(tc, int | float) and tc > 0:
            seen.setdefault(lang, []).append(f"{row.get('_cell')}/rep{row.get('_rep')} ({tc:.2f})")
    if not rows:
        for (cell, _rep), pair in sorted(folders.items()):
            for folder in pair.values():
                tc = _scores_of(folder).get("test_coverage")
                meta, _ = _read_json(folder / "_meta.json", folder)
                rc = meta.get("run_config") if isinstance(meta, dict) else None
                lang = str(rc.get("language") or "").lower() if isinstance(rc, dict) else ""
                if lang and isinstance(tc, int | float) and tc > 0:
                    seen.setdefault(lang, []).append(f"{cell}/{folder.name} ({tc:.2f})")
    return {
        lang: f"retort's scorer measured test_coverage>0 for {len(hits)} other {lang} run(s) of this experiment "
        f"(e.g. {', '.join(sorted(hits)[:2])}): the harness could run {lang} tests here"
        for lang, hits in seen.items()
    }


def _recorded_folder(row: dict[str, Any], pair: dict[str, Path]) -> Path | None:
    """The folder of the attempt a DB row records: a crash is archived ``-failed``, anything else as ``repN``.

    Older retort versions named the folder after the gate verdict instead, so the other folder is the fallback.
    """
    first, second = ("failed", "plain") if row.get("status") == "crashed" else ("plain", "failed")
    if row.get("status") == "completed" and first == "plain" and not pair.get("plain"):
        # a completed run's agent exited 0: a -failed folder whose agent exited non-zero is not its folder
        failed = pair.get("failed")
        return failed if failed is not None and _succeeded(failed) is not False else None
    return pair.get(first) or pair.get(second)


def _add_db_row(
    exp: Path, root: Path, row: dict[str, Any], pair: dict[str, Path], later_completed: bool, add: Any, own: Path | None
) -> None:
    """A record for one DB row that is not ``completed`` (a completed row only supersedes others)."""
    if row.get("status") == "completed":
        return
    runs_dir = exp / "runs"
    cell, rep = row["_cell"], row["_rep"]
    rep_dir = None if later_completed else own
    if later_completed:  # the folders belong to the completed retry; this row's own folder was replaced
        rep_dir = pair.get("failed") if pair.get("failed") and _succeeded(pair["failed"]) is not True else None
    plain = runs_dir / cell / f"rep{rep}"
    rec = RunRecord(
        experiment=exp,
        rel=_rel(rep_dir or plain, root),
        rep_dir=rep_dir,
        cell=cell,
        replicate=rep,
        db_id=row.get("id"),
        db_status=row.get("status"),
        db_error=row.get("error_message"),
        run_config={str(k): str(v) for k, v in row["_rc"].items()},
        metrics=row.get("metrics", {}),
        finished_at=str(row.get("finished_at") or "") or None,
    )
    if later_completed:
        rec.retry_completed = True
        rec.superseded_by = _rel(pair["plain"], root) if pair.get("plain") else "a completed DB row"
        rec.notes.append(
            Claim(
                "another DB row with the same configuration and replicate is 'completed': this "
                "attempt was superseded by a recorded retry",
                "direct",
                "retort.db experiment_runs",
            )
        )
    if rep_dir is not None and cell != cell_name(row["_rc"]):
        rec.notes.append(
            Claim(
                f"no folder named after the DB run config; matched folder {cell} whose factors are a subset of it",
                "hypothesis",
                rec.rel,
            )
        )
    add(rec)


def _folder_record(exp: Path, root: Path, folder: Path, cell: str, rep: int, status: str | None) -> RunRecord:
    """A record for an archived attempt the DB has no row for (its own row was replaced by a later attempt's).

    ``status`` is the DB status of the attempt that superseded it, kept only for context, never as this one's."""
    rec = RunRecord(experiment=exp, rel=_rel(folder, root), rep_dir=folder, cell=cell, replicate=rep)
    rec.later_status = status
    return rec


def _add_folder_pair(exp: Path, root: Path, cell: str, rep: int, pair: dict[str, Path], add: Any) -> None:
    """Attempts with no DB row: order ``repN``/``repN-failed`` from what the folders themselves record."""
    plain, failed = pair.get("plain"), pair.get("failed")
    plain_failed = plain is not None and _scores_failed(_scores_of(plain))
    if plain is None or failed is None:
        if failed is not None:
            add(_folder_record(exp, root, failed, cell, rep, None))
        elif plain is not None and plain_failed:
            add(_folder_record(exp, root, plain, cell, rep, None))
        return
    later, why = _attempt_order(plain, failed)
    if later == "plain":
        rec = add(_folder_record(exp, root, failed, cell, rep, None))
        rec.superseded_by = _rel(plain, root)
        rec.retry_completed = not plain_failed and bool(_scores_of(plain))
        rec.notes.append(Claim(f"superseded by the later attempt {_rel(plain, root)} ({why})", "direct", rec.rel))
        if plain_failed:
            add(_folder_record(exp, root, plain, cell, rep, None))
        return
    if later == "failed":
        # repN was retried, so it had failed whatever its scores say; the -failed crash is the recorded attempt
        rec = add(_folder_record(exp, root, plain, cell, rep, None))
        rec.superseded_by = _rel(failed, root)
        rec.notes.append(Claim(f"superseded by the later attempt {_rel(failed, root)} ({why})", "direct", rec.rel))
        add(_folder_record(exp, root, failed, cell, rep, None))
        return
    for folder, other in ((failed, plain), (plain, failed)):
        if folder is plain and not plain_failed:
            continue
        rec = add(_folder_record(exp, root, folder, cell, rep, None))
        rec.attempt_order_unknown = True
        rec.notes.append(
            Claim(f"another attempt of this cell and replicate exists ({_rel(other, root)}); {why}", "direct", rec.rel)
        )


def _instant(row: dict[str, Any]) -> bool:
    m = row.get("metrics") or {}
    dur = m.get("_duration_seconds")
    return (
        row.get("status") != "completed"
        and dur is not None
        and dur < 60
        and not m.get("_tokens")
        and not m.get("_cost_usd")
    )


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
                out.setdefault(
                    r["id"],
                    f"all {len(members)} runs with {level} failed in under 60s at $0/0 tokens "
                    f"while other runs of the experiment completed",
                )
    return out
