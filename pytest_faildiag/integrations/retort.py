"""Post-hoc diagnosis of failed retort runs (``faildiag retort diagnose``).

retort (adrianco/retort) runs AI coding agents on tasks, scores the workspace, and gates a run as ``failed``
when ``test_coverage == 0``; its DB then says "tests did not run" for *any* gate failure. Most recorded
failures turned out to be harness artefacts, so this module never concludes from the gate verdict alone:

1. *find* failed runs — ``retort.db`` rows with status failed/crashed, ``rep<N>-failed`` folders, runs whose
   ``scores.json`` is all zero or has ``test_coverage == 0``;
2. *gather* every signal the run left (DB status/error/metrics, ``_meta.json``, scores, ``evaluation.md``,
   ``findings.jsonl``, agent logs in their JSON formats, our own ``.faildiag/.capture.json``);
3. *ground-truth*: inventory the code (subfolders count) and run the run's own tests in a clean copy, bounded
   by a timeout; when the toolchain or dependencies are missing, say so and downgrade to ``hypothesis``;
4. *classify* into the contract's verdict/subtype, every claim labelled ``direct`` or ``hypothesis``.

Bad input never raises out of :func:`diagnose_experiments` except :class:`RetortInputError` (missing folder,
nothing retort-like in it), which the CLI turns into one line and exit 2. A locked or corrupt ``retort.db``
degrades to a folder-only diagnosis with a claim saying so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_faildiag.fsio import atomic_write
from pytest_faildiag.redact import redact_obj, redact_text

__all__ = [
    "Claim",
    "RetortInputError",
    "RunDiagnosis",
    "RunRecord",
    "TestRun",
    "ab_test",
    "diagnose_experiments",
    "find_experiments",
    "rescore",
    "rollup",
]

VERDICTS = ("infra_false_fail", "genuine", "environment", "unknown")

# Files retort itself writes into a run folder: never "code the agent produced".
_HARNESS_FILES = {
    "TASK.md", "stack.json", "REQUIREMENTS.json", "_meta.json", "scores.json", "evaluation.md",
    "assessment.json", "findings.jsonl", "FEEDBACK.md", "_agent_stdout.log", "_agent_stderr.log",
    "README.md", "prompts.txt", "_hermes_session.jsonl", "attempt.patch",
}
_HARNESS_DIRS = {"summary", ".faildiag"}
# Regenerable or vendored trees: skipped when inventorying and when copying for a test run.
_NOISE_DIRS = {
    "node_modules", "_build", "deps", "target", "build", "dist", "vendor", "__pycache__", ".gradle", ".cpcache",
    ".rebar3", ".elixir_ls", ".pytest_cache", ".mypy_cache", ".git", "venv", ".venv", ".build", ".faildiag",
    ".swarm", ".claude-flow", ".hive-mind",
}
_SOURCE_EXT = {
    ".py": "python", ".go": "go", ".rs": "rust", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript",
    ".mjs": "javascript", ".java": "java", ".kt": "kotlin", ".cs": "csharp", ".clj": "clojure", ".cljc": "clojure",
    ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".swift": "swift", ".rb": "ruby", ".c": "c", ".cpp": "cpp",
    ".zig": "zig", ".hs": "haskell", ".scala": "scala", ".php": "php", ".dart": "dart", ".m": "objc", ".mm": "objc",
    ".h": "c", ".hpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".fs": "fsharp", ".ml": "ocaml", ".nim": "nim",
    ".lua": "lua", ".jl": "julia", ".groovy": "groovy", ".vue": "javascript", ".svelte": "javascript",
}
_TEST_NAME = re.compile(
    r"(^test_.*\.py$|_test\.py$|_test\.go$|\.test\.[cm]?[jt]sx?$|\.spec\.[cm]?[jt]sx?$|Tests?\.(java|kt|cs|swift)$"
    r"|_test\.exs$|_tests?\.erl$|_SUITE\.erl$|_test\.clj$|_spec\.rb$)"
)
_TEST_DIRS = {"tests", "test", "__tests__", "spec", "features"}
_GATE_ERROR = "tests did not run"
_TIMEOUT_ERROR = re.compile(r"^(Timeout after \d+s|Killed after \d+s)", re.I | re.M)
_FACTUAL_ERROR = re.compile(r"answers wrong|factual_accuracy", re.I)
_WRONG_PLACE = re.compile(
    r"outside (of )?(the )?(sandbox|workspace|playpen)|not in (the )?(run )?workspace|to the user'?s home directory"
    r"|written to /(Users|home)/",
    re.I,
)
_MAX_LOG_BYTES = 4_000_000


class RetortInputError(Exception):
    """The experiment folder is missing or holds nothing retort wrote: the CLI exits 2 with this message."""


@dataclass
class Claim:
    """One statement in a diagnosis; ``kind`` is ``direct`` (observed) or ``hypothesis`` (inferred)."""

    text: str
    kind: str
    source: str


@dataclass
class RunRecord:
    """Everything a failed run left behind, gathered before any judgement is made."""

    experiment: Path
    rel: str
    rep_dir: Path | None
    cell: str = ""
    replicate: int | None = None
    db_id: int | None = None
    db_status: str | None = None
    db_error: str | None = None
    run_config: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    stack: dict[str, Any] = field(default_factory=dict)
    eval_status: str = ""
    eval_text: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    capture: dict[str, Any] = field(default_factory=dict)
    superseded_by: str | None = None
    retry_completed: bool = False
    cohort: str | None = None
    notes: list[Claim] = field(default_factory=list)

    @property
    def language(self) -> str:
        return str(self.run_config.get("language") or self.stack.get("language") or "").lower()


@dataclass
class Inventory:
    """What code the run produced and where (package subfolders count)."""

    sources: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    languages: Counter = field(default_factory=Counter)
    roots: list[str] = field(default_factory=list)


@dataclass
class TestRun:
    """Outcome of running a run's own tests in a clean copy.

    ``status``: passed, failed, compile_error, no_tests, undeclared_deps, deps_unavailable, toolchain_missing,
    data_missing (task support data the archive does not keep),
    timeout, not_run, error. Only passed/failed/compile_error/no_tests/undeclared_deps are ground truth.
    """

    status: str
    command: str = ""
    root: str = "."
    passed: int = 0
    failed: int = 0
    coverage: float | None = None
    missing_module: str | None = None
    excerpt: str = ""
    duration_s: float = 0.0

    @property
    def conclusive(self) -> bool:
        return self.status in {"passed", "failed", "compile_error", "no_tests", "undeclared_deps"}


@dataclass
class Signature:
    """One row of ``rules/retort.toml``."""

    id: str
    verdict: str
    subtype: str
    kind: str
    regex: re.Pattern[str]
    action: str
    blocks_work: bool = False
    tool_scope: bool = False


@dataclass
class SignatureHit:
    signature: Signature
    source: str
    excerpt: str


@dataclass
class RunDiagnosis:
    """The verdict for one run; ``to_contract`` is exactly the contract's per-run entry."""

    run: str
    verdict: str
    subtype: str
    claims: list[Claim]
    action: str
    experiment: str = ""
    db_id: int | None = None
    test_run: TestRun | None = None
    recorded_test_coverage: float | None = None
    superseded: bool = False

    def to_contract(self) -> dict[str, Any]:
        return redact_obj({
            "run": self.run, "verdict": self.verdict, "subtype": self.subtype,
            "claims": [asdict(c) for c in self.claims], "action": self.action,
        })

    def to_detail(self) -> dict[str, Any]:
        out = self.to_contract()
        out["experiment"] = self.experiment
        out["db_run_id"] = self.db_id
        out["recorded_test_coverage"] = self.recorded_test_coverage
        out["superseded"] = self.superseded
        out["test_run"] = redact_obj(asdict(self.test_run)) if self.test_run else None
        return out


@dataclass
class Options:
    """Knobs of one diagnosis pass (CLI flags map 1:1)."""

    run_tests: bool = True
    test_timeout: float = 120.0
    install_deps: bool = False
    work_dir: Path | None = None
    extra_env: dict[str, str | None] = field(default_factory=dict)
    jobs: int = 1


# --------------------------------------------------------------------------- signatures


def load_signatures(path: Path | None = None) -> list[Signature]:
    """Load ``rules/retort.toml``; a broken rule file yields no signatures rather than a crash."""
    try:
        if path is None:
            try:
                raw = resources.files("pytest_faildiag.rules").joinpath("retort.toml").read_bytes()
            except Exception:  # the rules package's own __init__ is another module: do not depend on it importing
                raw = (Path(__file__).resolve().parent.parent / "rules" / "retort.toml").read_bytes()
        else:
            raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    out: list[Signature] = []
    for row in data.get("signature", []):
        try:
            out.append(Signature(
                id=row["id"], verdict=row["verdict"], subtype=row["subtype"], kind=row.get("kind", "direct"),
                regex=re.compile(row["pattern"], re.I), action=row.get("action", ""),
                blocks_work=bool(row.get("blocks_work", False)), tool_scope=bool(row.get("tool_scope", False)),
            ))
        except (KeyError, re.error):
            continue
    return out


# --------------------------------------------------------------------------- discovery


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


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace")), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{path.name} unreadable: {type(exc).__name__}"


@dataclass
class DbRows:
    rows: list[dict[str, Any]]
    total_runs: int
    problem: str | None = None


def read_db(db_path: Path) -> DbRows:
    """All experiment_runs rows with their metrics, read-only; a locked/corrupt DB yields ``problem``."""
    if not db_path.is_file():
        return DbRows([], 0, None)
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
                rc0 = json.loads(row.get("run_config_json") or "{}")
                completed_keys.add((cell_name(rc0 if isinstance(rc0, dict) else {}), int(row.get("replicate") or 0)))
            except (ValueError, TypeError):
                pass
    for row in db.rows:
        try:
            rc = json.loads(row.get("run_config_json") or "{}")
            rc = rc if isinstance(rc, dict) else {}
        except ValueError:
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
            scores, _ = _read_json(rep_dir / "scores.json")
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
            rc = json.loads(r.get("run_config_json") or "{}")
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


def _load_folder_signals(rec: RunRecord) -> None:
    """Read _meta.json, scores.json, stack.json, evaluation.md, findings.jsonl and our capture; never raises."""
    d = rec.rep_dir
    if d is None:
        return
    for name, attr in (("_meta.json", "meta"), ("scores.json", "scores"), ("stack.json", "stack"),
                       (".faildiag/.capture.json", "capture"), (".faildiag/capture.json", "capture")):
        if attr == "capture" and rec.capture:
            continue
        data, problem = _read_json(d / name)
        if isinstance(data, dict):
            setattr(rec, attr, data)
        elif problem:
            rec.notes.append(Claim(f"{problem} (malformed JSON), ignored", "direct", f"{rec.rel}/{name}"))
    if not rec.run_config and isinstance(rec.meta.get("run_config"), dict):
        rec.run_config = {str(k): str(v) for k, v in rec.meta["run_config"].items()}
    try:
        text = (d / "evaluation.md").read_text(encoding="utf-8", errors="replace")
        rec.eval_text = text[:200_000]
        m = re.search(r"\*\*Status:\*\*\s*(.+)", text)
        rec.eval_status = (m.group(1).strip() if m else "")[:400]
        if _WRONG_PLACE.search(text):
            rec.eval_status = rec.eval_status or _WRONG_PLACE.search(text).group(0)
            rec.notes.append(Claim("evaluation.md reports the deliverables were written outside the run workspace",
                                   "direct", f"{rec.rel}/evaluation.md"))
    except OSError:
        pass
    try:
        for line in (d / "findings.jsonl").read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                rec.findings.append(item)
    except OSError:
        pass


# --------------------------------------------------------------------------- agent logs


@dataclass
class LogSignals:
    """What the agent's own logs say: agent-level errors, failed tool calls, permission denials, usage."""

    agent_errors: list[tuple[str, str]] = field(default_factory=list)  # (source, text)
    tool_errors: list[tuple[str, str]] = field(default_factory=list)
    denials: list[tuple[str, str]] = field(default_factory=list)
    tokens: int = 0
    cost_usd: float | None = None
    result_subtype: str | None = None
    present: list[str] = field(default_factory=list)


def _event_error_texts(ev: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """Split one JSON event into agent-level errors, failed-tool texts and permission denials.

    Covers claude stream-json (``result``/``is_error``, ``permission_denials``, ``tool_result``), codex
    (``error``, ``turn.failed``, ``item.completed`` with failed status), opencode (``type: error``,
    ``part.state.status == error``), omp (``stopReason: error``/``errorMessage``) and gemini (``error`` object).
    """
    agent, tool, denials = [], [], []
    etype = str(ev.get("type") or "")
    err = ev.get("error")
    if isinstance(err, dict):
        agent.append(str(err.get("message") or err.get("data") or err))
    elif isinstance(err, str) and err:
        agent.append(err)
    if etype in {"error", "turn.failed", "session.error"} or etype.endswith(".error"):
        msg = ev.get("message") or ev.get("error") or ev
        agent.append(str(msg)[:2000])
    if etype == "result" and ev.get("is_error"):
        agent.append(str(ev.get("result") or ev.get("subtype") or "")[:2000])
    for key in ("errorMessage", "error_message"):
        if ev.get(key):
            agent.append(str(ev[key])[:2000])
    for d in ev.get("permission_denials") or []:
        denials.append(json.dumps(d)[:400] if not isinstance(d, str) else d[:400])
    msg = ev.get("message")
    if isinstance(msg, dict):
        if msg.get("stopReason") == "error" and msg.get("errorMessage"):
            agent.append(str(msg["errorMessage"]))
        for part in msg.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "tool_result" and part.get("is_error"):
                tool.append(_flatten(part.get("content"))[:2000])
    part = ev.get("part")
    if isinstance(part, dict):
        state = part.get("state")
        if isinstance(state, dict) and state.get("status") == "error":
            tool.append(str(state.get("error") or state)[:2000])
    item = ev.get("item")
    if isinstance(item, dict) and str(item.get("status")) in {"failed", "declined", "rejected"}:
        tool.append(str(item.get("aggregated_output") or item.get("error") or item)[:2000])
    return agent, tool, denials


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("content") or "")
    return str(content or "")


def _usage_tokens(ev: dict[str, Any]) -> int:
    usage = ev.get("usage")
    msg = ev.get("message")
    if not isinstance(usage, dict) and isinstance(msg, dict):
        usage = msg.get("usage")
    if not isinstance(usage, dict):
        return 0
    total = 0
    for k in ("input_tokens", "output_tokens", "input", "output", "prompt_tokens", "completion_tokens"):
        v = usage.get(k)
        if isinstance(v, int | float):
            total += int(v)
    return total


def read_agent_logs(rec: RunRecord) -> LogSignals:
    """Parse ``_agent_stdout.log``/``_agent_stderr.log`` (any of the agents' JSON formats, or plain text)."""
    sig = LogSignals()
    if rec.rep_dir is None:
        return sig
    for name in ("_agent_stdout.log", "_agent_stderr.log", "_hermes_session.jsonl"):
        path = rec.rep_dir / name
        try:
            with open(path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - _MAX_LOG_BYTES))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        sig.present.append(name)
        src = f"{rec.rel}/{name}"
        for line in text.splitlines():
            s = line.strip()
            if not s:
                continue
            if s.startswith("{"):
                try:
                    ev = json.loads(s)
                except ValueError:
                    ev = None
                if isinstance(ev, dict):
                    agent, tool, denials = _event_error_texts(ev)
                    sig.agent_errors += [(src, t) for t in agent if t]
                    sig.tool_errors += [(src, t) for t in tool if t]
                    sig.denials += [(src, t) for t in denials if t]
                    if ev.get("type") == "result":
                        sig.result_subtype = str(ev.get("subtype") or "") or sig.result_subtype
                        if isinstance(ev.get("total_cost_usd"), int | float):
                            sig.cost_usd = float(ev["total_cost_usd"])
                    sig.tokens += _usage_tokens(ev) if ev.get("type") != "result" else 0
                    continue
            # A plain line: stderr of every agent, and opencode's --print-logs lines, are plain text.
            if name != "_agent_stdout.log" or re.search(r"\b(error|denied|refus|fatal|exception)\b", s, re.I):
                sig.agent_errors.append((src, s[:1000]))
    return sig


def match_signatures(rec: RunRecord, logs: LogSignals, signatures: list[Signature]) -> list[SignatureHit]:
    """Signatures seen in error-flagged content, in rule-file order (first is strongest)."""
    texts: list[tuple[str, str, bool]] = []  # (source, text, is_tool)
    if rec.db_error:
        texts.append(("retort.db experiment_runs.error_message", rec.db_error, False))
    for key in ("stderr_tail", "kill_reason", "tool_refusal"):
        v = rec.capture.get(key) or (rec.capture.get("metadata") or {}).get(key)
        if v and key != "kill_reason":
            texts.append((f"{rec.rel}/.faildiag/.capture.json", str(v), key == "tool_refusal"))
    if rec.capture.get("usage_limited") is True:
        texts.append((f"{rec.rel}/.faildiag/.capture.json", "usage limit flagged by retort's runner", False))
    texts += [(s, t, False) for s, t in logs.agent_errors]
    texts += [(s, t, True) for s, t in logs.tool_errors]
    # The evaluator's report quotes the agent log when the logs themselves were not archived; only tool-scoped
    # signatures (a refused tool) may match it — its prose discusses the task's own features too.
    if rec.eval_text:
        texts.append((f"{rec.rel}/evaluation.md", rec.eval_text, True))
    for f in rec.findings:
        texts.append((f"{rec.rel}/findings.jsonl", f"{f.get('title', '')} {f.get('evidence', '')}", True))
    texts += [(s, "permission denied: " + t, True) for s, t in logs.denials]
    hits: list[SignatureHit] = []
    for sig in signatures:
        for src, text, is_tool in texts:
            if is_tool and not sig.tool_scope:
                continue
            m = sig.regex.search(text)
            if m:
                start = max(0, m.start() - 60)
                hits.append(SignatureHit(sig, src, text[start:m.end() + 100].strip()))
                break
    return hits


# --------------------------------------------------------------------------- ground truth


def inventory(rep_dir: Path) -> Inventory:
    """Source and test files the agent produced, anywhere below the run folder (subfolders count)."""
    inv = Inventory()
    roots: Counter = Counter()
    for dirpath, dirnames, filenames in os.walk(rep_dir):
        dirnames[:] = [d for d in dirnames if d not in _NOISE_DIRS and d not in _HARNESS_DIRS
                       and not d.startswith(".")]
        rel_dir = Path(dirpath).relative_to(rep_dir)
        if rel_dir.parts[:1] == ("data",):
            continue
        for fn in filenames:
            if fn in _HARNESS_FILES or fn.startswith("."):
                continue
            lang = _SOURCE_EXT.get(Path(fn).suffix.lower())
            if not lang:
                continue
            relp = (rel_dir / fn).as_posix()
            inv.sources.append(relp)
            inv.languages[lang] += 1
            if _TEST_NAME.search(fn) or any(p in _TEST_DIRS for p in rel_dir.parts) or \
                    _has_inline_tests(Path(dirpath) / fn):
                inv.tests.append(relp)
            roots[rel_dir.parts[0] if rel_dir.parts else "."] += 1
    inv.roots = [r for r, _ in roots.most_common()]
    return inv


_INLINE_TEST = re.compile(
    r"#\[(tokio::)?test\]|@Test\b|\bdeftest\b|ExUnit\.Case|-include_lib\(\"eunit|\bXCTestCase\b|@Suite\b|"
    r"\[(Fact|Test|TestMethod)\]|^\s*(describe|it|test)\(['\"`]"
    , re.M)


def _has_inline_tests(path: Path) -> bool:
    """Tests that live inside source files (Rust ``#[test]``, JUnit ``@Test`` in odd places, xUnit attributes)."""
    try:
        if path.stat().st_size > 400_000:
            return False
        return bool(_INLINE_TEST.search(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False


_MANIFESTS = {
    "python": ("pyproject.toml", "setup.py", "requirements.txt", "setup.cfg"),
    "go": ("go.mod",), "rust": ("Cargo.toml",), "typescript": ("package.json",), "javascript": ("package.json",),
    "java": ("pom.xml", "build.gradle", "build.gradle.kts"), "csharp": ("*.csproj", "*.sln"),
    "clojure": ("deps.edn", "project.clj"), "elixir": ("mix.exs",), "erlang": ("rebar.config",),
    "swift": ("Package.swift",),
}


def project_root(rep_dir: Path, language: str) -> Path:
    """Where the project lives: the run folder, or the shallowest subfolder holding its manifest."""
    patterns = _MANIFESTS.get(language, ())
    if not patterns or any(list(rep_dir.glob(p)) for p in patterns):
        return rep_dir
    best: Path | None = None
    for pat in patterns:
        for hit in rep_dir.glob(f"*/{pat}"):
            if hit.parent.name not in _NOISE_DIRS and (best is None or len(hit.parts) < len(best.parts)):
                best = hit.parent
    return best or rep_dir


def _copy_clean(src: Path, dest: Path) -> None:
    def ignore(_d: str, names: list[str]) -> set[str]:
        return {n for n in names if n in _NOISE_DIRS or n in {".coverage", "erl_crash.dump"}}

    shutil.copytree(src, dest, ignore=ignore, ignore_dangling_symlinks=True, symlinks=True)


def _run(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> tuple[int | None, str, float]:
    """Run ``cmd`` in its own process group; kill the whole group on timeout (rc None)."""
    import time

    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return 127, f"{type(exc).__name__}: {exc}", 0.0
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace"), time.monotonic() - start
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
        return None, out.decode("utf-8", "replace"), time.monotonic() - start


def _clean_env(extra: dict[str, str] | None = None, ab: dict[str, str | None] | None = None) -> dict[str, str]:
    """Our own environment minus what would steer the run's tests (pytest/coverage/python knobs)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COV_", "COVERAGE_", "PYTHON")) and k != "VIRTUAL_ENV"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["CI"] = "1"
    if extra:
        env.update(extra)
    for k, v in (ab or {}).items():  # the A/B variable, applied last so nothing above can undo it
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def _declared_python_deps(root: Path) -> str:
    text = ""
    for name in ("requirements.txt", "requirements-dev.txt", "requirements_dev.txt", "pyproject.toml", "setup.py",
                 "setup.cfg", "Pipfile"):
        for p in (root / name, *root.glob(f"*/{name}")):
            try:
                text += p.read_text(encoding="utf-8", errors="replace").lower() + "\n"
            except OSError:
                continue
    return text


# import name → distribution name, for the few common ones that differ
_DIST_ALIASES = {"yaml": "pyyaml", "sklearn": "scikit-learn", "pil": "pillow", "dateutil": "python-dateutil",
                 "jwt": "pyjwt", "dotenv": "python-dotenv", "bs4": "beautifulsoup4"}


def _is_declared(module: str, declared: str) -> bool:
    m = module.lower()
    names = {m, m.replace("_", "-"), _DIST_ALIASES.get(m, m)}
    return any(re.search(rf"(^|[\s\"'\[,]){re.escape(n)}\b", declared) for n in names)


def _local_module(root: Path, module: str) -> bool:
    return any((root / p).exists() for p in (module, f"{module}.py")) or any(root.glob(f"*/{module}"))


def _python_tests(root: Path, timeout: float, install_deps: bool, work: Path,
                  ab: dict[str, str | None] | None = None) -> TestRun:
    py = sys.executable
    env = _clean_env(ab=ab)
    if install_deps and (root / "requirements.txt").is_file():
        # Install into a private folder on PYTHONPATH: our interpreter keeps its pytest + coverage, the run's
        # declared dependencies come first, and nothing is installed anywhere else.
        site = work / "site"
        rc, out, _ = _run([py, "-m", "pip", "install", "-q", "--no-cache-dir", "--disable-pip-version-check",
                           "--target", str(site),
                           "-r", "requirements.txt"], root, 300, env)
        if rc != 0:
            return TestRun("deps_unavailable", "pip install -r requirements.txt", excerpt=_tail(out))
        env["PYTHONPATH"] = str(site)
    cov_file = work / ".coverage"
    env["COVERAGE_FILE"] = str(cov_file)
    if "PYTHONPATH" not in env:
        # Without the run's own dependencies installed, the pytest plugins around are OURS (not the run's):
        # autoloading them costs seconds per run and can change how the run's tests behave.
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    cmd = [py, "-m", "coverage", "run", "--source=.", "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider",
           "-p", "no:faildiag", "-o", "addopts="]
    rc, out, dur = _run(cmd, root, timeout, env)
    shown = "python -m coverage run --source=. -m pytest -q"
    if rc is None:
        return TestRun("timeout", shown, excerpt=_tail(out), duration_s=dur)
    passed, failed = _count(r"(\d+) passed", out), _count(r"(\d+) (?:failed|errors?)\b", out)
    missing = re.search(r"No module named '([\w\.]+)'", out)
    cov = None
    if cov_file.exists():
        crc, cout, _ = _run([py, "-m", "coverage", "report", "--format=total"], root, 60, env)
        try:
            cov = float(cout.strip().splitlines()[-1]) / 100.0 if crc == 0 else None
        except (ValueError, IndexError):
            cov = None
    result = TestRun("passed", shown, passed=passed, failed=failed, coverage=cov, excerpt=_tail(out), duration_s=dur)
    if "No module named 'pytest'" in out or "No module named coverage" in out:
        result.status = "toolchain_missing"
    elif rc == 0 and passed > 0:
        result.status = "passed"
    elif rc == 5 or (rc == 0 and passed == 0):
        result.status = "no_tests"
    elif missing and not _local_module(root, missing.group(1).split(".")[0]):
        top = missing.group(1).split(".")[0]
        result.missing_module = top
        declared = _declared_python_deps(root)
        result.status = "deps_unavailable" if _is_declared(top, declared) else "undeclared_deps"
    elif re.search(r"\b(SyntaxError|IndentationError)\b", out):
        result.status = "compile_error"
    elif passed == 0 and failed == 0 and rc in (2, 3, 4):
        result.status = "error"
    else:
        result.status = "failed"
    return result


def _count(pattern: str, text: str) -> int:
    return sum(int(m) for m in re.findall(pattern, text))


def _tail(text: str, lines: int = 25) -> str:
    """The last lines of a command's output, capped before redaction (the redactor is slow on huge lines)."""
    return "\n".join(redact_text(line[-1000:]) for line in text.strip().splitlines()[-lines:])[-3000:]


_NATIVE = {
    "go": (["go", "test", "-cover", "./..."], "go"),
    "rust": (["cargo", "test", "--offline"], "cargo"),
    "java": (["mvn", "-q", "-o", "test"], "mvn"),
    "csharp": (["dotnet", "test", "--nologo"], "dotnet"),
    "elixir": (["mix", "test"], "mix"),
    "erlang": (["rebar3", "eunit"], "rebar3"),
    "swift": (["swift", "test"], "swift"),
    "clojure": (["clojure", "-M:test"], "clojure"),
}
_DEPS_OFFLINE = re.compile(
    r"no matching package|failed to (download|get|load source)|attempting to make an http request, but --offline"
    r"|could not resolve (dependencies|host)|cannot access central .{0,40}offline|dependency .{0,80} not found"
    r"|cannot find module '(?!\.)|sh: \d*:? ?[\w.@/-]+: not found|command not found|missing script|not installed"
    r"|in offline mode|non-resolvable parent pom|could not resolve (plugin|artifact)",
    re.I,
)
_TOOL_TOO_OLD = re.compile(r"bad option: --|unknown file extension \"?\.ts|requires (go|node|python) ?>= ?[\d.]+|"
                           r"unsupported engine|error: package `[^`]+` cannot be built because it requires rustc",
                           re.I)
_DATA_REF = re.compile(r"""["'`](\./)?data/[\w./-]+""")
_DATA_ERR = re.compile(r"(FileNotFoundError|No such file or directory|ENOENT|dataset not found)[^\n]{0,200}", re.I)
_COMPILE = re.compile(r"error\[E\d+\]|could not compile|cannot find symbol|COMPILATION ERROR|error TS\d+|"
                      r"\bundefined: \w+|syntax error|build failed", re.I)


def _native_tests(root: Path, language: str, timeout: float, install_deps: bool, work: Path,
                  ab: dict[str, str | None] | None = None) -> TestRun:
    if language in {"typescript", "javascript"}:
        pkg, _ = _read_json(root / "package.json")
        if not isinstance(pkg, dict):
            return TestRun("no_tests", "npm test", excerpt="no readable package.json")
        script = str((pkg.get("scripts") or {}).get("test") or "")
        deps = {**(pkg.get("dependencies") or {}), **(pkg.get("devDependencies") or {})}
        if script and "no test specified" not in script:
            cmd = ["npm", "test", "--silent"]
        elif "vitest" in deps:
            cmd = ["npx", "--no-install", "vitest", "run"]
        elif "jest" in deps:
            cmd = ["npx", "--no-install", "jest", "--ci"]
        else:
            return TestRun("no_tests", "npm test", excerpt="package.json has no test script and no test runner")
        tool = "npm"
    elif language == "java" and not (root / "pom.xml").exists():
        cmd, tool = (["gradle", "test", "--offline", "-q"], "gradle")
    else:
        if language not in _NATIVE:
            return TestRun("toolchain_missing", excerpt=f"no test runner known for language {language!r}")
        cmd, tool = _NATIVE[language]
    if shutil.which(tool) is None:
        return TestRun("toolchain_missing", " ".join(cmd), excerpt=f"{tool} is not installed on this machine")
    env = _clean_env({"CARGO_TARGET_DIR": str(work / "target"), "GOFLAGS": "-mod=mod",
                      "GOCACHE": str(work / "go-build"), "npm_config_cache": str(work / "npm-cache")}, ab=ab)
    if install_deps:
        # Allowed to fetch: drop the offline switches, and keep every download cache inside the temporary work
        # folder so nothing is written outside it (npm, cargo, go and maven default to the home directory).
        cmd = [c for c in cmd if c not in ("--offline", "-o")]
        env.update({"CARGO_HOME": str(work / "cargo-home"),
                    "GOPATH": str(work / "gopath"), "GOMODCACHE": str(work / "gopath" / "mod")})
        if tool == "mvn":
            cmd = [*cmd, f"-Dmaven.repo.local={work / 'm2'}"]
    if tool == "npm" and install_deps and not (root / "node_modules").exists():
        rc, out, _ = _run(["npm", "install", "--no-audit", "--no-fund"], root, 300, env)
        if rc != 0:
            return TestRun("deps_unavailable", "npm install", excerpt=_tail(out))
    rc, out, dur = _run(cmd, root, timeout, env)
    shown = " ".join(cmd)
    if rc is None:
        return TestRun("timeout", shown, excerpt=_tail(out), duration_s=dur)
    passed = _count(r"(\d+) passed", out) + len(re.findall(r"^(ok|PASS)\s", out, re.M)) \
        + _count(r"Tests run: (\d+), Failures: 0, Errors: 0", out)
    failed = _count(r"(\d+) failed", out) + len(re.findall(r"^(FAIL|--- FAIL)", out, re.M))
    cov = None
    m = re.findall(r"coverage: (\d+(?:\.\d+)?)% of statements", out)
    if m:
        cov = sum(float(x) for x in m) / len(m) / 100.0
    res = TestRun("failed", shown, passed=passed, failed=failed, coverage=cov, excerpt=_tail(out), duration_s=dur)
    if rc == 0:
        res.status = "passed" if passed or "no test files" not in out else "no_tests"
        if passed == 0 and re.search(r"no test files|0 tests|running 0 tests", out) and not m:
            res.status = "no_tests"
    elif _DEPS_OFFLINE.search(out) and not _COMPILE.search(out):
        res.status = "deps_unavailable"
    elif _COMPILE.search(out):
        res.status = "compile_error"
    return res


def _missing_support_data(root: Path, output: str) -> bool:
    """Do the tests depend on a ``data/`` folder the archive does not hold (support files are not archived)?"""
    if (root / "data").is_dir():
        return False
    if _DATA_ERR.search(output) and "data/" in output:
        return True
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _NOISE_DIRS]
        for fn in filenames:
            if Path(fn).suffix.lower() in _SOURCE_EXT:
                try:
                    if _DATA_REF.search((Path(dirpath) / fn).read_text(encoding="utf-8", errors="replace")):
                        return True
                except OSError:
                    continue
    return False


def ground_truth(rec: RunRecord, inv: Inventory, opts: Options) -> TestRun:
    """Run the run's own tests in a clean temporary copy, bounded by ``opts.test_timeout``."""
    if not opts.run_tests:
        return TestRun("not_run", excerpt="--no-run-tests given")
    if rec.rep_dir is None:
        return TestRun("not_run", excerpt="no archived run folder")
    language = rec.language or (inv.languages.most_common(1)[0][0] if inv.languages else "")
    if language == "typescript" and not inv.languages.get("typescript") and inv.languages.get("javascript"):
        language = "javascript"
    base = opts.work_dir
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="faildiag-retort-", dir=base) as tmp:
        work = Path(tmp)
        copy = work / "run"
        try:
            _copy_clean(rec.rep_dir, copy)
        except (OSError, shutil.Error) as exc:
            return TestRun("error", excerpt=f"could not copy the run folder: {exc}")
        root = project_root(copy, language)
        rel_root = root.relative_to(copy).as_posix()
        try:
            if language == "python":
                res = _python_tests(root, opts.test_timeout, opts.install_deps, work, opts.extra_env)
            else:
                res = _native_tests(root, language, opts.test_timeout, opts.install_deps, work, opts.extra_env)
        except Exception as exc:  # a broken project must never crash the whole diagnosis
            res = TestRun("error", excerpt=f"{type(exc).__name__}: {exc}")
        if res.status in {"failed", "error", "compile_error"} and _TOOL_TOO_OLD.search(res.excerpt):
            res.status = "toolchain_missing"
            res.excerpt = "the local toolchain is too old for this project: " + res.excerpt[-600:]
        elif res.status in {"failed", "error"} and _missing_support_data(root, res.excerpt):
            res.status = "data_missing"
        res.root = rel_root
        res.excerpt = res.excerpt.replace(str(copy), "<run>")
        return res


# --------------------------------------------------------------------------- classification


def _num(v: Any) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def recorded_test_coverage(rec: RunRecord) -> float | None:
    v = rec.metrics.get("test_coverage")
    return _num(v if v is not None else rec.scores.get("test_coverage"))


def _telemetry_claims(rec: RunRecord, logs: LogSignals) -> list[Claim]:
    """Duration/tokens/cost as context; '$0 and instant' is noted as a hint, never used as a verdict."""
    out: list[Claim] = []
    dur = _num(rec.metrics.get("_duration_seconds") or rec.capture.get("duration_seconds"))
    tok = _num(rec.metrics.get("_tokens") if "_tokens" in rec.metrics else rec.capture.get("token_count"))
    cost = _num(rec.metrics.get("_cost_usd") or (rec.capture.get("metadata") or {}).get("total_cost_usd"))
    if dur is not None or tok is not None:
        parts = [f"duration {dur:.0f}s" if dur is not None else "", f"tokens {int(tok)}" if tok is not None else "",
                 f"cost ${cost:.4f}" if cost is not None else ""]
        src = "retort.db run_results" if rec.metrics else f"{rec.rel}/.faildiag/.capture.json"
        out.append(Claim("recorded " + ", ".join(p for p in parts if p), "direct", src))
        if dur is not None and dur < 60 and not tok and not cost:
            out.append(Claim("finished in under a minute for $0/0 tokens: hints at an interrupted or blocked start, "
                             "but local models cost $0 and wall-clock kills record 0 tokens, so this is not a verdict",
                             "hypothesis", src))
    if logs.present:
        out.append(Claim(f"agent logs present: {', '.join(logs.present)}", "direct", rec.rel))
    return out


@dataclass
class _Verdict:
    verdict: str
    subtype: str
    action: str


def _test_claim(rec: RunRecord, tr: TestRun) -> Claim:
    src = f"{tr.command or 'test run'} in a clean copy of {rec.rel}/{'' if tr.root == '.' else tr.root}".rstrip("/")
    cov = f", coverage {tr.coverage:.0%}" if tr.coverage is not None else ""
    text = {
        "passed": f"the run's own tests pass: {tr.passed} passed, {tr.failed} failed{cov}",
        "failed": f"the run's own tests fail: {tr.passed} passed, {tr.failed} failed",
        "compile_error": "the code does not compile / import (syntax or build error)",
        "no_tests": "the test runner found no tests to run",
        "undeclared_deps": f"tests fail at import of '{tr.missing_module}', which no requirements/pyproject declares",
        "deps_unavailable": "the project's dependencies are not available here (offline/not installed); "
                            "tests could not be ground-truthed",
        "toolchain_missing": f"could not run the tests: {(tr.excerpt or 'toolchain missing')[:300]}",
        "data_missing": "the tests need task support data (data/...) that the archive does not hold; "
                        f"{tr.failed} failed/errored here for that reason, which says nothing about the code",
        "timeout": "the test run did not finish within the timeout",
        "not_run": f"tests not run: {tr.excerpt}",
        "error": f"test run errored before any test ran: {tr.excerpt[-200:]}",
    }.get(tr.status, tr.status)
    kind = "direct" if tr.status not in {"not_run"} else "hypothesis"
    return Claim(text, kind, src)


def classify(rec: RunRecord, signatures: list[Signature], opts: Options) -> RunDiagnosis:
    """Judge one run from its gathered signals; every branch says what it saw and where."""
    claims: list[Claim] = list(rec.notes)
    logs = read_agent_logs(rec)
    hits = match_signatures(rec, logs, signatures)
    tc = recorded_test_coverage(rec)
    if rec.db_status:
        err = (rec.db_error or "").strip().splitlines()
        claims.append(Claim(f"retort recorded status '{rec.db_status}'" + (f" with error '{err[-1][:200]}'" if err else ""),
                            "direct", "retort.db experiment_runs"))
    if rec.meta:
        claims.append(Claim(f"_meta.json succeeded={rec.meta.get('succeeded')} (the agent's exit status, not pass/fail)",
                            "direct", f"{rec.rel}/_meta.json"))
    if tc is not None:
        zero_all = rec.scores and all(v == 0 for v in rec.scores.values() if isinstance(v, int | float))
        claims.append(Claim(f"recorded test_coverage={tc:g}" + (" and every score zeroed by the gate" if zero_all else ""),
                            "direct", "retort.db run_results" if "test_coverage" in rec.metrics else
                            f"{rec.rel}/scores.json"))
    if rec.superseded_by:
        claims.append(Claim(f"an earlier attempt, superseded by {rec.superseded_by}", "direct", rec.rel))
    if rec.eval_status:
        claims.append(Claim(f"evaluation.md status: {rec.eval_status[:200]}", "direct", f"{rec.rel}/evaluation.md"))
    claims += _telemetry_claims(rec, logs)
    for h in hits:
        # rule id last: the redactor masks the word after a secret-looking "name:" (e.g. "auth-expired: x")
        claims.append(Claim(f"{h.excerpt[:240]} (rule {h.signature.id})", h.signature.kind, h.source))

    crashed = rec.db_status == "crashed" or rec.meta.get("succeeded") is False or \
        (rec.capture.get("exit_code") not in (None, 0))
    err = (rec.db_error or "").strip()
    kill = (rec.capture.get("metadata") or {}).get("kill_reason") or rec.capture.get("kill_reason")

    inv = inventory(rec.rep_dir) if rec.rep_dir is not None else Inventory()
    if rec.rep_dir is not None:
        where = ", ".join(r if r != "." else "top level" for r in inv.roots[:4]) or "-"
        claims.append(Claim(f"{len(inv.sources)} source file(s), {len(inv.tests)} test file(s) in the run folder "
                            f"(where: {where})", "direct", rec.rel))

    # 1. A signature that explains why nothing could happen wins when the run crashed or produced no code.
    for h in hits:
        if (crashed or not inv.sources) and (h.signature.kind == "direct" or not inv.sources):
            return _done(rec, claims, _Verdict(h.signature.verdict, h.signature.subtype, h.signature.action), tc)

    # 2. Killed by the harness's wall clock or stall guard: the agent did not terminate.
    if _TIMEOUT_ERROR.search(err) or kill:
        return _done(rec, claims, _Verdict(
            "genuine", "non_termination",
            "count as a genuine non-termination; if the code already passes its tests, consider a larger turn/time "
            "budget and re-run"), tc, test_run=None)

    # 3. The DB records a run the archive does not hold.
    if rec.rep_dir is None:
        claims.append(Claim(f"no archived folder runs/{rec.cell}/rep{rec.replicate}[-failed] for this DB row", "direct",
                            rec.rel))
        return _done(rec, claims, _Verdict(
            "infra_false_fail", "archive_gap",
            "the measurement cannot be verified; re-run the cell (retort run --resume --retry-failed) with archiving on"),
            tc)

    # 4. No code at all.
    if not inv.sources:
        if tc is not None and tc > 0:
            claims.append(Claim(f"test_coverage={tc:g} was measured at scoring time, so code existed then; the "
                                "archive holds none of it", "direct", rec.rel))
            return _done(rec, claims, _Verdict("infra_false_fail", "archive_gap",
                                               "the archived run cannot be re-checked; keep source in the archive "
                                               "(or diagnose before the workspace is trimmed)"), tc)
        if any("outside the run workspace" in c.text for c in rec.notes):
            return _done(rec, claims, _Verdict("genuine", "wrong_location",
                                               "count as a genuine miss (wrote outside the workspace); tighten the "
                                               "agent's working-directory instructions"), tc)
        if rec.cohort:
            claims.append(Claim(rec.cohort, "direct", "retort.db run_results"))
            claims.append(Claim("the harness could not launch or configure runs of that factor level",
                                "hypothesis", "retort.db"))
            return _done(rec, claims, _Verdict("infra_false_fail", "harness_config",
                                               "fix how the harness runs that factor level (prompt file, agent "
                                               "flags, tooling) and re-run those cells"), tc)
        if crashed and rec.retry_completed:
            claims.append(Claim("a retry of the identical configuration completed, so what stopped this attempt "
                                "was transient (interruption, limit, serving hiccup), not the model", "hypothesis",
                                rec.rel))
        if crashed and not logs.present and not rec.capture:
            claims.append(Claim("the agent exited non-zero and left no code and no logs; the cause is not recorded",
                                "hypothesis", rec.rel))
            return _done(rec, claims, _Verdict("unknown", "insufficient_evidence",
                                               "re-run this cell with the faildiag retort plugin enabled to capture "
                                               "agent output"), tc)
        if not logs.present and not rec.capture:
            claims.append(Claim("a blocked file-write tool leaves the same empty workspace; the agent logs that "
                                "would tell the two apart were not archived", "hypothesis", rec.rel))
        return _done(rec, claims, _Verdict("genuine", "no_code",
                                           "count as a genuine miss; check the agent log for a blocked tool before "
                                           "trusting it"), tc)

    # 5. Code exists: ground-truth it.
    tr = ground_truth(rec, inv, opts)
    claims.append(_test_claim(rec, tr))
    gate_failed = err.startswith(_GATE_ERROR) or tc == 0
    spec_short = bool(_FACTUAL_ERROR.search(err)) or (
        _num(rec.metrics.get("requirement_coverage")) is not None and rec.metrics["requirement_coverage"] < 1.0
        and not gate_failed)
    if spec_short:
        claims.append(Claim("retort's spec/factual gate failed the run (requirement_coverage<1 or wrong answers)",
                            "direct", "retort.db"))
    elif (rec.rep_dir.name.endswith("-failed") and rec.meta.get("succeeded") is True and tc is not None and tc > 0):
        # retort names a folder -failed only for a non-zero agent exit, or when a retry superseded the attempt;
        # with exit 0 and tests that ran, the gate that failed it was the spec or factual one.
        spec_short = True
        claims.append(Claim("the agent exited 0 and its tests ran (test_coverage>0), yet the attempt was archived "
                            "as -failed: the spec/factual gate is what failed it", "hypothesis", rec.rel))

    if tr.status == "passed":
        if spec_short and not gate_failed:
            return _done(rec, claims, _Verdict("genuine", "spec_shortfall",
                                               "count as a genuine spec shortfall (tests pass, spec/answers do not)"),
                         tc, tr)
        if gate_failed:
            sub = "scorer_gap" if (tr.root != "." or _unusual_runner(rec.rep_dir, rec.language)) else "mis_measurement"
            why = ("the project lives in a subfolder or uses a runner the scorer does not drive" if sub == "scorer_gap"
                   else "coverage was measured 0 on tests that pass")
            claims.append(Claim(why, "direct" if tr.root != "." else "hypothesis", _test_claim(rec, tr).source))
            return _done(rec, claims, _Verdict("infra_false_fail", sub,
                                               "rescore it (faildiag retort diagnose --rescore, or retort rescore "
                                               "--only-failed) after fixing the scorer"), tc, tr)
        if crashed:
            return _done(rec, claims, _Verdict("unknown", "insufficient_evidence",
                                               "the code passes its tests but the agent exited non-zero; re-run with "
                                               "capture to see why"), tc, tr)
        return _done(rec, claims, _Verdict("unknown", "insufficient_evidence",
                                           "tests pass and no recorded gate explains the failure; read evaluation.md"),
                     tc, tr)
    if tr.status == "undeclared_deps":
        return _done(rec, claims, _Verdict("infra_false_fail", "undeclared_deps",
                                           f"declare '{tr.missing_module}' (or have the scorer install test deps) and "
                                           "rescore"), tc, tr)
    if tr.status == "compile_error":
        return _done(rec, claims, _Verdict("genuine", "compile_error", "count as a genuine miss (does not build)"), tc, tr)
    if tr.status == "failed":
        contention = [h for h in (s for s in signatures if s.subtype in {"stray_process", "concurrency_env_contention"})
                      if h.regex.search(tr.excerpt)]
        if contention:
            s = contention[0]
            claims.append(Claim(f"the failing test output matches {s.id}; run `faildiag retort ab` to confirm",
                                "hypothesis", _test_claim(rec, tr).source))
            return _done(rec, claims, _Verdict(s.verdict, s.subtype, s.action), tc, tr)
        return _done(rec, claims, _Verdict("genuine", "tests_fail", "count as a genuine miss (its tests fail)"), tc, tr)
    if tr.status == "no_tests" and not inv.tests:
        return _done(rec, claims, _Verdict("genuine", "no_tests", "count as a genuine miss (no tests written)"), tc, tr)
    if not inv.tests:
        claims.append(Claim("no test file exists in the run folder", "direct", rec.rel))
        return _done(rec, claims, _Verdict("genuine", "no_tests", "count as a genuine miss (no tests written)"), tc, tr)

    # 6. Could not ground-truth: fall back to what was recorded, as hypotheses.
    if spec_short:
        return _done(rec, claims, _Verdict("genuine", "spec_shortfall",
                                           "count as a genuine spec shortfall (per retort's gate); tests not re-run"),
                     tc, tr)
    guess = _guess_from_records(rec)
    if guess is not None:
        claims.append(Claim(guess[2], "hypothesis", guess[3]))
        return _done(rec, claims, _Verdict(guess[0], guess[1],
                                           "install the toolchain/dependencies and re-run the diagnosis to confirm"),
                     tc, tr)
    return _done(rec, claims, _Verdict("unknown", "insufficient_evidence",
                                       "install the language toolchain (or pass --install-deps) and diagnose again"),
                 tc, tr)


def _unusual_runner(rep_dir: Path | None, language: str) -> bool:
    """A layout retort's test_coverage scorer is known not to drive (bun, deno, lein-only, CT-only suites)."""
    if rep_dir is None:
        return False
    if (rep_dir / "bun.lockb").exists() or (rep_dir / "bunfig.toml").exists() or (rep_dir / "deno.json").exists():
        return True
    pkg, _ = _read_json(rep_dir / "package.json")
    if isinstance(pkg, dict) and re.search(r"\b(bun|deno|node --test|tap)\b", str((pkg.get("scripts") or {}).get("test"))):
        return True
    return language == "clojure" and (rep_dir / "project.clj").exists() and not (rep_dir / "deps.edn").exists()


_EVAL_HINTS: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"build fail|does not (build|compile)|compil\w* (error|fail)|won'?t compile", re.I), "genuine",
     "compile_error"),
    (re.compile(r"\d+ test failures?|tests? fail(ed|ing|s)?\b", re.I), "genuine", "tests_fail"),
    (re.compile(r"no tests\b|without tests", re.I), "genuine", "no_tests"),
    (re.compile(r"\bok\b|tests pass|build \+ tests passed|functional", re.I), "infra_false_fail", "scorer_gap"),
]


def _guess_from_records(rec: RunRecord) -> tuple[str, str, str, str] | None:
    """A verdict suggested by evaluation.md / findings.jsonl when tests could not be re-run (hypothesis only)."""
    if rec.eval_status:
        for rx, verdict, subtype in _EVAL_HINTS:
            if rx.search(rec.eval_status):
                if subtype == "scorer_gap" and recorded_test_coverage(rec) not in (0, 0.0):
                    continue
                return verdict, subtype, f"evaluation.md suggests {subtype.replace('_', ' ')}", \
                    f"{rec.rel}/evaluation.md"
    kinds = Counter(str(f.get("kind")) for f in rec.findings if str(f.get("severity")) in {"critical", "high"})
    if kinds.get("build_failure") or kinds.get("compile_error"):
        return "genuine", "compile_error", "findings.jsonl reports a build failure", f"{rec.rel}/findings.jsonl"
    if kinds.get("test_failure"):
        return "genuine", "tests_fail", "findings.jsonl reports failing tests", f"{rec.rel}/findings.jsonl"
    return None


def _done(rec: RunRecord, claims: list[Claim], v: _Verdict, tc: float | None,
          test_run: TestRun | None = None) -> RunDiagnosis:
    safe = [Claim(redact_text(c.text), c.kind if c.kind in {"direct", "hypothesis"} else "hypothesis",
                  redact_text(c.source)) for c in claims]
    return RunDiagnosis(run=rec.rel, verdict=v.verdict, subtype=v.subtype, claims=safe, action=v.action,
                        experiment=str(rec.experiment), db_id=rec.db_id, test_run=test_run,
                        recorded_test_coverage=tc,
                        superseded=rec.retry_completed)


# --------------------------------------------------------------------------- entry points


@dataclass
class ExperimentResult:
    root: Path
    diagnoses: list[RunDiagnosis]
    total_runs: int
    problems: list[str]


def diagnose_experiments(root: Path, opts: Options | None = None) -> ExperimentResult:
    """Diagnose every failed run of every experiment under ``root`` (see module docstring)."""
    opts = opts or Options()
    signatures = load_signatures()
    diagnoses: list[RunDiagnosis] = []
    total = 0
    problems: list[str] = []
    records: list[RunRecord] = []
    for exp in find_experiments(root):
        found, n, problem = collect_runs(exp, root)
        records += found
        total += n
        if problem:
            problems.append(f"{exp}: {problem}")
    if opts.jobs > 1:  # test runs dominate and are subprocesses: threads are enough, order is kept by map
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
            diagnoses = list(pool.map(lambda r: _classify_safely(r, signatures, opts), records))
    else:
        diagnoses = [_classify_safely(r, signatures, opts) for r in records]
    return ExperimentResult(root, diagnoses, total, problems)


def _classify_safely(rec: RunRecord, signatures: list[Signature], opts: Options) -> RunDiagnosis:
    """``classify`` that turns an internal error into an ``unknown`` verdict: one odd run must not sink the rest."""
    try:
        return classify(rec, signatures, opts)
    except Exception as exc:
        return RunDiagnosis(
            run=rec.rel, verdict="unknown", subtype="insufficient_evidence",
            claims=[Claim(f"internal error while diagnosing: {type(exc).__name__}: {exc}", "direct", "faildiag")],
            action="report this as a faildiag bug", experiment=str(rec.experiment), db_id=rec.db_id)


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
    }


def render_text(result: ExperimentResult, roll: dict[str, Any]) -> str:
    lines: list[str] = []
    for d in result.diagnoses:
        lines.append(f"[{d.verdict}/{d.subtype}] {d.run}")
        for c in d.claims:
            lines.append(f"    [{c.kind.upper()}] {c.text}  ({c.source})")
        lines.append(f"    -> {d.action}")
    lines.append("")
    lines.append(f"Roll-up: {roll['failed_runs']} failed of {roll['total_runs']} recorded runs: " + ", ".join(
        f"{k} {v}" for k, v in roll["by_verdict"].items()))
    for k, v in roll["by_subtype"].items():
        lines.append(f"    {k}: {v}")
    lines.append(("Measurements trustworthy: yes — " if roll["measurements_trustworthy"] else
                  "Measurements trustworthy: NO — ") + roll["why"])
    for p in roll["problems"]:
        lines.append(f"warning: {p}")
    return redact_text("\n".join(lines)) + "\n"


def write_outputs(out: Path, result: ExperimentResult, roll: dict[str, Any]) -> None:
    """Atomic writes of the detailed diagnosis, the roll-up and the text report into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    _atomic_json(out / "retort-diagnosis.json", {"runs": [d.to_detail() for d in result.diagnoses]})
    _atomic_json(out / "retort-rollup.json", roll)
    _atomic_write(out / "retort-report.txt", render_text(result, roll))


def _atomic_write(path: Path, text: str) -> None:
    atomic_write(path, text)

def _atomic_json(path: Path, data: Any) -> None:
    _atomic_write(path, json.dumps(redact_obj(data), indent=2, sort_keys=False) + "\n")


# --------------------------------------------------------------------------- rescore


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
            "run": d.run, "subtype": d.subtype, "db_run_id": d.db_id,
            "test_coverage": {"old": d.recorded_test_coverage, "new": round(new_cov, 4)},
            "basis": "line coverage" if tr.coverage else "test pass rate (coverage unavailable)",
            "status": {"old": None, "new": None}, "db_written": False,
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
            cur = con.execute("UPDATE run_results SET value=? WHERE run_id=? AND metric_name='test_coverage'",
                              (coverage, run_id))
            if cur.rowcount == 0:
                con.execute("INSERT INTO run_results (run_id, metric_name, value) VALUES (?, 'test_coverage', ?)",
                            (run_id, coverage))
            new_status = row[0]
            if row[0] == "failed" and str(row[1] or "").startswith(_GATE_ERROR):
                new_status = "completed"
                con.execute("UPDATE experiment_runs SET status='completed', error_message=NULL WHERE id=?", (run_id,))
        return {"db_written": True, "status": {"old": row[0], "new": new_status}}
    except sqlite3.Error as exc:
        return {"db_written": False, "db_error": str(exc)}
    finally:
        con.close()


# --------------------------------------------------------------------------- A/B


@dataclass
class ABArm:
    label: str
    value: str | None
    outcomes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for o in self.outcomes if o == "passed")


def ab_test(rep_dir: Path, variable: str, value_a: str | None, value_b: str | None, n: int = 5,
            language: str | None = None, timeout: float = 120.0, work_dir: Path | None = None) -> tuple[ABArm, ABArm]:
    """Run the run's tests ``n`` times per arm, changing only environment variable ``variable``.

    Why an env var: it is the one knob every runner honours without editing the run's code (a DB path, a port,
    a worker count, a seed). ``None`` as a value means "unset". Arms alternate (A, B, A, B, ...) so a drift in the
    machine affects both equally. Each run gets a fresh clean copy. Raises RetortInputError for a missing folder.
    """
    if not rep_dir.is_dir():
        raise RetortInputError(f"run folder not found: {rep_dir}")
    meta, _ = _read_json(rep_dir / "_meta.json")
    stack, _ = _read_json(rep_dir / "stack.json")
    lang = language or (stack or {}).get("language") or ((meta or {}).get("run_config") or {}).get("language")
    if not lang:
        inv = inventory(rep_dir)
        lang = inv.languages.most_common(1)[0][0] if inv.languages else "python"
    arms = (ABArm("A", value_a), ABArm("B", value_b))
    inv = inventory(rep_dir)
    for _ in range(max(1, n)):
        for arm in arms:
            rec = RunRecord(experiment=rep_dir.parent, rel=rep_dir.name, rep_dir=rep_dir,
                            run_config={"language": str(lang)})
            opts = Options(test_timeout=timeout, work_dir=work_dir, extra_env={variable: arm.value})
            arm.outcomes.append(ground_truth(rec, inv, opts).status)
    return arms
