"""The engine as tools for coding agents: each tool is a name, a JSON schema for its arguments and one for
its result, and a handler. No MCP import here: the protocol adapter (``mcp_server``) only lists these and
passes calls through, so the tools behave the same under any SDK version and are testable without one.

Rules every call follows (see ``docs/agents.md``):

* every path is resolved and must lie inside the server's roots (``roots.Roots``), and so must a folder's
  symbolic links, the run's folder of a fix and every file a fix edits;
* every result is redacted (``redact_obj``) on the way out, whatever the handler already did;
* a bad call raises ``ToolFailure`` with one line (unknown path, outside the roots, not a snapshot, a fix
  id that is not the current proposal); anything unexpected becomes one too, never a crash of the server;
* fixes follow ``faildiag fix``'s own rules, through its own code: only the current proposal's id applies
  it, a command faildiag did not record runs only with its own command id, verification and rollback are
  the CLI's. A command an agent gave to ``diagnose`` counts as not recorded: the user confirms it apart.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..redact import redact_obj, redact_text
from ..sanitize import display
from .budget import compact_size, cut_text, fit_rendered, fit_report
from .roots import PathOutsideRoots, Roots

DEFAULT_OUT = "faildiag-out"
MAX_TEXT_CHARS = 20_000_000
MAX_RESOURCE_BYTES = 20 * 1024 * 1024
MAX_RESOURCES = 200
RESOURCE_PREFIX = "faildiag://snapshot/"
SKILL_URI = "faildiag://skill"


class ToolFailure(Exception):
    """A call the tool refuses or cannot complete: one line, returned to the agent as a tool error."""


def _one_line(exc: BaseException | str) -> str:
    return display(exc, one_line=True, limit=600)


# ----------------------------------------------------------------------------------------------- schemas


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


MAX_CHARS = {
    "type": "integer",
    "minimum": 1,
    "description": "answer in at most this many characters: the first "
    "failure, the ranked causes and their direct evidence are kept, the rest is dropped first",
}
SNAPSHOT_ARG = _string("a snapshot folder (holds report.json), relative to the first root or absolute")
CWD_ARG = _string("the folder the failing command ran in (default: the one the report records, else the first root)")


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], "additionalProperties": False}


def report_schema() -> dict[str, Any]:
    """The shipped ``report.json`` schema (``faildiag.report/1``), plus the two keys a tool may add."""
    from importlib import resources

    schema = json.loads(resources.files("pytest_faildiag").joinpath("schemas/report.schema.json").read_text("utf-8"))
    schema.pop("$id", None)  # a relative id: nothing refers to it, and a validator would try to resolve it
    schema.setdefault("properties", {})
    schema["properties"]["budget"] = {"type": "object", "description": "what max_chars dropped"}
    schema["properties"]["snapshot"] = {"type": ["string", "null"], "description": "where the snapshot was written"}
    return schema


_CHANGE = {
    "type": "object",
    "properties": {
        "kind": {"type": "string"},
        "description": {"type": "string"},
        "path": {"type": "string"},
        "diff": {"type": "string"},
    },
}
_RERUN = {
    "type": ["object", "null"],
    "properties": {
        "command": {"type": ["string", "null"]},
        "cwd": {"type": "string"},
        "recorded_here": {"type": "boolean"},
        "command_id": {"type": "string"},
    },
}
PROPOSAL_SCHEMA = {
    "type": "object",
    "required": ["id", "summary", "impact", "changes", "automatic", "needs_command_confirmation"],
    "properties": {
        "id": {"type": "string"},
        "summary": {"type": "string"},
        "impact": {"type": "string"},
        "cause": {"type": ["string", "null"]},
        "changes": {"type": "array", "items": _CHANGE},
        "automatic": {"type": "boolean"},
        "manual_steps": {"type": "array", "items": {"type": "string"}},
        "notes": {"type": "array", "items": {"type": "string"}},
        "rerun": _RERUN,
        "needs_command_confirmation": {"type": "boolean"},
    },
}
FIX_RECORD_SCHEMA = {
    "type": "object",
    "required": ["id", "summary", "applied", "verification", "rolled_back"],
    "properties": {
        "id": {"type": "string"},
        "summary": {"type": "string"},
        "applied": {"type": "boolean"},
        "verification": {"enum": ["passed", "failed", "not_run"]},
        "rolled_back": {"type": "boolean"},
        "outcome": {"type": "string"},
        "kept": {"type": "boolean"},
        "command": {"type": ["string", "null"]},
        "after": {"type": ["object", "null"]},
    },
}
LOCK_DIFF_SCHEMA = {
    "type": "object",
    "required": ["old", "new", "changes", "lines"],
    "properties": {
        "old": {"type": "string"},
        "new": {"type": "string"},
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kind", "name", "change"],
                "properties": {
                    "kind": {"type": "string"},
                    "name": {"type": "string"},
                    "change": {"enum": ["added", "removed", "changed"]},
                },
            },
        },
        "lines": {"type": "array", "items": {"type": "string"}},
        "budget": {"type": "object"},
    },
}
_CLAIM = {
    "type": "object",
    "required": ["text", "kind", "source"],
    "properties": {
        "text": {"type": "string"},
        "kind": {"enum": ["direct", "hypothesis"]},
        "source": {"type": "string"},
    },
}
RETORT_SCHEMA = {
    "type": "object",
    "required": ["runs"],
    "properties": {
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["run", "verdict", "subtype", "claims", "action"],
                "properties": {
                    "run": {"type": "string"},
                    "verdict": {"enum": ["infra_false_fail", "genuine", "environment", "unknown"]},
                    "subtype": {"type": "string"},
                    "claims": {"type": "array", "items": _CLAIM},
                    "action": {"type": "string"},
                },
            },
        },
        "budget": {"type": "object"},
    },
}
EXPLAIN_SCHEMA = {
    "type": "object",
    "required": ["snapshot", "markdown"],
    "properties": {"snapshot": {"type": "string"}, "markdown": {"type": "string"}},
}


# ------------------------------------------------------------------------------------------ the tools

Handler = Callable[["Toolbox", dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    handler: Handler
    read_only: bool = True


def check_arguments(schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """``arguments`` checked against ``schema`` (the subset the tools use: object, string, integer, number,
    boolean, array of strings, required, no other keys, minimum/maximum, maxItems), defaults filled in.
    Raises ToolFailure naming the first problem: the agent gets one line, not a validator's dump."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolFailure("arguments: give an object")
    props: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(k for k in arguments if k not in props)
    if unknown:
        raise ToolFailure(f"unknown argument {_one_line(unknown[0])} (known: {', '.join(props)})")
    missing = [k for k in schema.get("required", []) if arguments.get(k) is None]
    if missing:
        raise ToolFailure(f"missing argument {missing[0]}")
    out: dict[str, Any] = {}
    for key, spec in props.items():
        value = arguments.get(key, spec.get("default"))
        if value is not None:
            _check_value(key, spec, value)
        out[key] = value
    return out


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v == v,
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
}


def _check_value(key: str, spec: Mapping[str, Any], value: Any) -> None:
    kind = spec.get("type", "string")
    if not _TYPES[kind](value):
        raise ToolFailure(f"argument {key}: expected {'an' if kind[0] in 'aei' else 'a'} {kind}")
    if "minimum" in spec and value < spec["minimum"]:
        raise ToolFailure(f"argument {key}: at least {spec['minimum']}")
    if "maximum" in spec and value > spec["maximum"]:
        raise ToolFailure(f"argument {key}: at most {spec['maximum']}")
    if kind == "string" and len(value) > spec.get("maxLength", MAX_TEXT_CHARS):
        raise ToolFailure(f"argument {key}: longer than {spec.get('maxLength', MAX_TEXT_CHARS)} characters")
    if kind == "array":
        if len(value) > spec.get("maxItems", 1000):
            raise ToolFailure(f"argument {key}: more than {spec.get('maxItems', 1000)} items")
        item_kind = spec.get("items", {}).get("type", "string")
        if not all(_TYPES[item_kind](v) for v in value):
            raise ToolFailure(f"argument {key}: every item must be a {item_kind}")


@dataclass
class Toolbox:
    """The tools bound to one server's roots. ``outs`` remembers the snapshot folders ``diagnose`` wrote
    (the latest session's resources); one fix is applied at a time."""

    roots: Roots
    outs: list[Path] = field(default_factory=list)
    _fix_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        """Run tool ``name``; its redacted result, or ToolFailure with one line."""
        spec = TOOLS.get(name)
        if spec is None:
            raise ToolFailure(f"unknown tool {_one_line(name)} (tools: {', '.join(TOOLS)})")
        args = check_arguments(spec.input_schema, arguments)
        try:
            result = spec.handler(self, args)
        except ToolFailure:
            raise
        except PathOutsideRoots as exc:
            raise ToolFailure(str(exc)) from None
        except OSError as exc:
            raise ToolFailure(
                f"{name}: {_one_line(exc.strerror or exc)}" + (f": {_one_line(exc.filename)}" if exc.filename else "")
            ) from None
        except Exception as exc:  # the last line of defence: the server keeps serving
            raise ToolFailure(f"{name}: internal error: {type(exc).__name__}: {_one_line(exc)}") from None
        return redact_obj(result)

    # ------------------------------------------------------------------------------------ diagnose

    def diagnose(self, a: dict[str, Any]) -> dict[str, Any]:
        from ..engine import diagnose, report_dict, write_snapshot
        from ..parse.logread import InputError
        from ..seal import SEAL_FILE

        paths = self.roots.resolve_all(a["paths"])
        for p in paths:
            self.roots.check_tree(p)
        cwd = self._folder(a.get("cwd"), "cwd")
        out = self.roots.resolve(a.get("out") or DEFAULT_OUT, what="out", must_exist=False)
        if not paths and not a.get("text") and a.get("exit_code") is None:
            raise ToolFailure("give paths (log files or folders), text, or an exit_code")
        try:
            diag = _merged_job(paths, a) or diagnose(
                [str(p) for p in paths],
                texts={"text": a["text"]} if a.get("text") else None,
                exit_code=a.get("exit_code"),
                command=a.get("command"),
                cwd=str(cwd) if cwd else None,
            )
        except InputError as exc:
            raise ToolFailure(_one_line(exc)) from None
        except UnicodeDecodeError as exc:
            raise ToolFailure(f"cannot read input: {_one_line(exc)}") from None
        report = report_dict(diag)
        snapshot: str | None = None
        try:
            write_snapshot(diag, out)
            # the command came from an agent, not from the user's own run: fix mode must ask for it apart
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out / SEAL_FILE)
            snapshot = self.roots.relative(out)
            if out not in self.outs:
                self.outs.append(out)
        except OSError as exc:
            report.setdefault("notes", []).append(
                f"snapshot not written to {self.roots.relative(out)}: {exc.strerror or exc}"
            )
        if a.get("max_chars"):
            report = fit_report(report, a["max_chars"])
        report["snapshot"] = snapshot
        return report

    # ------------------------------------------------------------------------------------- explain

    def explain(self, a: dict[str, Any]) -> dict[str, Any]:
        from ..ci._load import ReportInputError, load
        from ..commands.report import _text
        from ..engine.report import render_markdown
        from ..model import Diagnosis

        folder = self._snapshot(a["snapshot"])
        try:
            session = load(folder)
        except ReportInputError as exc:
            raise ToolFailure(_one_line(exc)) from None
        lone = len(session.failures) == 1 and session.failures[0].snapshot == session.root
        limit = a.get("max_chars")
        if lone and limit and session.failures[0].report is not None:
            markdown = fit_rendered(
                session.failures[0].report, limit, lambda r: render_markdown(Diagnosis.from_dict(r))
            )
        else:
            markdown = _text(session, markdown=True)
            markdown = cut_text(markdown, limit) if limit else markdown
        return {"snapshot": self.roots.relative(folder), "markdown": redact_text(markdown)}

    # ----------------------------------------------------------------------------------- lock_diff

    def lock_diff(self, a: dict[str, Any]) -> dict[str, Any]:
        from ..capture import envlock

        new = self.roots.resolve(a["new"], what="new")
        new_lock = new / "artifacts" / "failure.lock.json" if new.is_dir() else new
        if not os.path.lexists(new_lock):
            raise ToolFailure(
                f"new {_one_line(a['new'])}: a folder without artifacts/failure.lock.json "
                "(give a lock file or a snapshot folder)"
            )
        new_lock = self.roots.resolve(str(new_lock), what="new")
        if a.get("old"):
            old = self.roots.resolve(a["old"], what="old")
        else:
            old = self._last_green(new if new.is_dir() else new.parent)
        try:
            changes = envlock.diff_locks(envlock.load_lock(old), envlock.load_lock(new_lock))
        except envlock.LockError as exc:
            raise ToolFailure(_one_line(exc)) from None
        result = {
            "old": self.roots.relative(old),
            "new": self.roots.relative(new_lock),
            "changes": changes,
            "lines": envlock.format_diff(changes),
        }
        return _fit_list(result, "changes", a.get("max_chars"), also=("lines",))

    def _last_green(self, folder: Path) -> Path:
        """The lock of the last passing run kept next to a snapshot (its folder, or the session folder above)."""
        from ..capture.envlock import GREEN_FILENAME

        for candidate in (folder / GREEN_FILENAME, folder.parent / GREEN_FILENAME):
            if os.path.lexists(candidate):
                return self.roots.resolve(str(candidate), what="last green lock")
        raise ToolFailure(
            f"no {GREEN_FILENAME} next to {_one_line(self.roots.relative(folder))}: give old (a lock file)"
        )

    # ----------------------------------------------------------------------------------------- fix

    def fix_propose(self, a: dict[str, Any]) -> dict[str, Any]:
        _, proposal, _ = self._proposal(a["snapshot"], a.get("cwd"))
        return {**proposal.to_dict(), "needs_command_confirmation": proposal.needs_command_confirmation}

    def fix_apply(self, a: dict[str, Any]) -> dict[str, Any]:
        """``faildiag fix SNAPSHOT --confirm FIX_ID [--confirm-command CMD_ID] [--keep] --format json``, run
        through the CLI's own code once the paths are checked against the roots."""
        from ..cli import UsageError
        from ..commands import fix as fix_command

        with self._fix_lock:  # also keeps the captured stdout below to this call
            ctx, _, run_folder = self._proposal(a["snapshot"], a.get("cwd"))
            args = argparse.Namespace(
                snapshot=str(ctx.snapshot),
                format="json",
                confirm=a["fix_id"],
                confirm_command=a.get("command_id"),
                keep=bool(a.get("keep")),
                yes=False,
                cwd=str(run_folder) if run_folder else None,
                command=None,
                timeout=float(a.get("timeout") or 900.0),
            )
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    fix_command.run(args)
            except UsageError as exc:
                raise ToolFailure(_one_line(exc)) from None
        try:
            return json.loads(buf.getvalue())
        except ValueError:
            raise ToolFailure("fix_apply: the fix printed no record") from None

    def _proposal(self, snapshot: str, cwd: str | None) -> tuple[Any, Any, Path | None]:
        """The fix context, the current proposal of ``snapshot`` and the run's folder as given (None: the
        report's), refused unless the snapshot, the run's folder and every file the proposal would write lie
        inside the roots. With no folder given or recorded, the run's folder is the first root."""
        from ..fix.context import SnapshotError, load_context, read_report
        from ..fix.propose import propose

        folder = self._snapshot(snapshot)
        if not (folder / "report.json").is_file() and (folder / "session.json").is_file():
            raise ToolFailure(
                f"{_one_line(snapshot)} is a pytest session folder: give one test's snapshot "
                f"({_one_line(snapshot)}/<test-slug>)"
            )
        try:
            recorded = read_report(folder).get("cwd")
            run_folder = self._folder(cwd, "cwd") or (None if recorded else self.roots.first)
            ctx = load_context(folder, cwd=run_folder)
        except SnapshotError as exc:
            raise ToolFailure(_one_line(exc)) from None
        self.roots.resolve(str(ctx.cwd), what="the run's folder")
        proposal = propose(ctx)
        for change in proposal.changes:
            if change.resolved_path:
                self.roots.resolve(change.resolved_path, what="a file the fix would write", must_exist=False)
        return ctx, proposal, run_folder

    # -------------------------------------------------------------------------------------- retort

    def retort_diagnose(self, a: dict[str, Any]) -> dict[str, Any]:
        from ..integrations import retort as rt

        folder = self.roots.resolve(a["experiment_dir"], what="experiment_dir")
        if not folder.is_dir():
            raise ToolFailure(f"experiment_dir {_one_line(a['experiment_dir'])}: not a folder")
        self.roots.check_tree(folder, what="experiment_dir")
        opts = rt.Options(
            run_tests=bool(a.get("run_tests")),
            test_timeout=float(a.get("test_timeout") or 120.0),
            work_dir=None,
            jobs=1,
        )
        try:
            result = rt.diagnose_experiments(folder, opts)
        except rt.RetortInputError as exc:
            raise ToolFailure(_one_line(exc)) from None
        return _fit_runs({"runs": [d.to_contract() for d in result.diagnoses]}, a.get("max_chars"))

    # --------------------------------------------------------------------------------------- paths

    def _snapshot(self, raw: str) -> Path:
        folder = self.roots.resolve(raw, what="snapshot")
        if not folder.is_dir():
            raise ToolFailure(f"snapshot {_one_line(raw)}: not a folder (give the folder that holds report.json)")
        self.roots.check_tree(folder, what="snapshot")
        return folder

    def _folder(self, raw: str | None, what: str) -> Path | None:
        if raw is None:
            return None
        folder = self.roots.resolve(raw, what=what)
        if not folder.is_dir():
            raise ToolFailure(f"{what} {_one_line(raw)}: not a folder")
        return folder

    # ----------------------------------------------------------------------------------- resources

    def snapshot_resources(self) -> list[dict[str, str]]:
        """The latest session's snapshots as resources: ``report.json`` and ``report.md`` of each snapshot in
        the most recently written output folder (``faildiag-out`` under each root, or one ``diagnose`` wrote)."""
        latest = _latest_out([*self.outs, *(r / DEFAULT_OUT for r in self.roots.folders)], self.roots)
        if latest is None:
            return []
        out: list[dict[str, str]] = []
        for snap in _snapshots_in(latest)[:MAX_RESOURCES]:
            rel = self.roots.relative(snap)
            for name, mime in (("report.json", "application/json"), ("report.md", "text/markdown")):
                out.append(
                    {
                        "uri": RESOURCE_PREFIX + urllib.parse.quote(f"{rel}/{name}"),
                        "name": f"{rel}/{name}",
                        "mime": mime,
                        "description": f"faildiag {name} of the snapshot {rel}",
                    }
                )
        return redact_obj(out)

    def read_resource(self, uri: str) -> tuple[str, str]:
        """(text, mime type) of a resource listed by ``snapshot_resources`` (or the skill). Raises ToolFailure
        for another address, a path outside the roots, or a file that is not a snapshot's report."""
        if uri == SKILL_URI:
            from . import skill_text

            return skill_text(), "text/markdown"
        if not uri.startswith(RESOURCE_PREFIX):
            raise ToolFailure(f"unknown resource {_one_line(uri)}")
        rel = urllib.parse.unquote(uri[len(RESOURCE_PREFIX) :])
        folder_part, _, name = rel.rpartition("/")
        if name not in ("report.json", "report.md") or not folder_part:
            raise ToolFailure(f"unknown resource {_one_line(uri)}: a snapshot's report.json or report.md")
        folder = self._snapshot(folder_part)
        path = self.roots.resolve(str(folder / name), what="resource")
        data = _read_bounded(path)
        if name == "report.json":
            try:
                report = json.loads(data)
            except (ValueError, RecursionError):
                raise ToolFailure(f"{_one_line(rel)}: not a readable report") from None
            return json.dumps(redact_obj(report), indent=2, ensure_ascii=False), "application/json"
        return redact_text(data), "text/markdown"


def _merged_job(paths: list[Path], a: dict[str, Any]) -> Any:
    """A multi-node job folder (``DIR/nodes/<NAME>/``) given alone is merged, as ``faildiag diagnose DIR`` does."""
    from ..job.merge import is_job_dir, merge

    if len(paths) != 1 or a.get("text") or not is_job_dir(str(paths[0])):
        return None
    try:
        return merge(str(paths[0]))
    except ValueError as exc:
        raise ToolFailure(_one_line(exc)) from None


def _read_bounded(path: Path) -> str:
    from ..fix.paths import read_regular

    data = read_regular(path, limit=MAX_RESOURCE_BYTES)
    if data is None:
        raise ToolFailure(
            f"{_one_line(path.name)}: not a readable regular file (or larger than {MAX_RESOURCE_BYTES} bytes)"
        )
    return data.decode("utf-8", errors="replace")


def _snapshots_in(folder: Path) -> list[Path]:
    """The snapshot folders of one output folder: itself (``faildiag run``/``diagnose``) and its children
    (``pytest --faildiag``: one per failed test)."""
    found = [folder] if (folder / "report.json").is_file() else []
    try:
        children = sorted(p for p in folder.iterdir() if not p.is_symlink() and (p / "report.json").is_file())
    except OSError:
        children = []
    return found + children


def _latest_out(candidates: list[Path], roots: Roots) -> Path | None:
    best: tuple[float, Path] | None = None
    for c in candidates:
        real = Path(os.path.realpath(c))
        if not real.is_dir() or not roots.contains(real):
            continue
        stamps = [p.stat().st_mtime for p in (real / "session.json", real / "report.json") if p.is_file()]
        stamps += [s.joinpath("report.json").stat().st_mtime for s in _snapshots_in(real)]
        if stamps and (best is None or max(stamps) > best[0]):
            best = (max(stamps), real)
    return best[1] if best else None


def _fit_list(result: dict[str, Any], key: str, max_chars: int | None, also: tuple[str, ...] = ()) -> dict[str, Any]:
    """Drop items of ``result[key]`` (and the parallel lists ``also``) from the end until it fits."""
    if not max_chars or compact_size(result) <= max_chars:
        return result
    total = len(result[key])
    while result[key] and compact_size(result) > max_chars:
        keep = len(result[key]) // 2 if compact_size(result) > 2 * max_chars else len(result[key]) - 1
        result[key] = result[key][:keep]
        for k in also:
            result[k] = result[k][:keep]
        result["budget"] = {
            "max_chars": max_chars,
            "dropped": {key: total - len(result[key])},
            "fits": compact_size(result) <= max_chars,
        }
    return result


def _fit_runs(result: dict[str, Any], max_chars: int | None) -> dict[str, Any]:
    """Retort runs within the budget: hypothesis claims first, then direct claims beyond 3, then beyond 1,
    then the last runs."""
    if not max_chars or compact_size(result) <= max_chars:
        return result
    for keep in (None, 3, 1):
        for run in result["runs"]:
            run["claims"] = [c for c in run["claims"] if c.get("kind") == "direct"][:keep]
        if compact_size(result) <= max_chars:
            return result
    return _fit_list(result, "runs", max_chars)


# ---------------------------------------------------------------------------------------- registry


def _spec(
    name: str,
    description: str,
    inputs: dict[str, Any],
    required: list[str],
    output: dict[str, Any],
    handler: Handler,
    read_only: bool = True,
) -> ToolSpec:
    return ToolSpec(name, description, _object(inputs, required), output, handler, read_only)


def _build() -> dict[str, ToolSpec]:
    specs = [
        _spec(
            "diagnose",
            "Diagnose a failed or hung run from its logs (files or folders inside the server's roots, streamed "
            "whatever their size) or pasted text; returns report.json (faildiag.report/1): the failure profile, "
            "ranked root causes with direct/hypothesis evidence, checks, fix hints. Writes the snapshot to out.",
            {
                "paths": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": 200,
                    "description": "log files or folders (torchelastic error.json, flight-recorder dumps, "
                    "env.lock.json, JUnit XML are read too); may be empty when text is given",
                },
                "text": _string("log text already in hand (e.g. a CI step's output)"),
                "exit_code": {"type": "integer", "description": "the run's exit status (137 = SIGKILL, -11 = SIGSEGV)"},
                "command": _string("the command that failed (fix_apply reruns it only with its own command_id)"),
                "cwd": CWD_ARG,
                "out": _string("snapshot folder to write (default faildiag-out in the first root)"),
                "max_chars": MAX_CHARS,
            },
            ["paths"],
            report_schema(),
            Toolbox.diagnose,
            read_only=False,
        ),
        _spec(
            "explain",
            "A snapshot (or a pytest session folder) as the Markdown report a person reads.",
            {"snapshot": SNAPSHOT_ARG, "max_chars": MAX_CHARS},
            ["snapshot"],
            EXPLAIN_SCHEMA,
            Toolbox.explain,
        ),
        _spec(
            "lock_diff",
            "What changed in the environment between two env.lock.json files, or between a snapshot's lock and "
            "the last green run's (last-green.lock.json next to the snapshot): ML stack and drivers first.",
            {
                "new": _string("a lock file, or a snapshot folder (its artifacts/failure.lock.json)"),
                "old": _string("a lock file (default: the last green lock next to the snapshot)"),
                "max_chars": MAX_CHARS,
            },
            ["new"],
            LOCK_DIFF_SCHEMA,
            Toolbox.lock_diff,
        ),
        _spec(
            "fix_propose",
            "Propose ONE fix for a snapshot's top cause; changes nothing. Shows every change (file, diff) and "
            "the verification command. Show it to the user: apply only after they confirm it.",
            {"snapshot": SNAPSHOT_ARG, "cwd": CWD_ARG},
            ["snapshot"],
            PROPOSAL_SCHEMA,
            Toolbox.fix_propose,
        ),
        _spec(
            "fix_apply",
            "Apply the proposal with fix_id (only the current proposal's id works), rerun the original command "
            "to verify, roll back unless verified (or keep). A command faildiag did not record runs only with "
            "its own command_id. Call only after the user confirmed this exact proposal.",
            {
                "snapshot": SNAPSHOT_ARG,
                "fix_id": _string("the id fix_propose returned"),
                "command_id": _string(
                    "the rerun's command_id, when needs_command_confirmation is true and the "
                    "user confirmed that command"
                ),
                "keep": {
                    "type": "boolean",
                    "default": False,
                    "description": "keep the change even if it did not verify",
                },
                "cwd": CWD_ARG,
                "timeout": {
                    "type": "number",
                    "minimum": 1,
                    "maximum": 86400,
                    "default": 900,
                    "description": "seconds the verification rerun may take",
                },
            },
            ["snapshot", "fix_id"],
            FIX_RECORD_SCHEMA,
            Toolbox.fix_apply,
            read_only=False,
        ),
        _spec(
            "retort_diagnose",
            "Classify every failed run of a retort experiment: harness false-fail, genuine miss, environment "
            "or unknown, each with direct/hypothesis claims and an action.",
            {
                "experiment_dir": _string("a retort experiment folder, or a folder holding several"),
                "run_tests": {
                    "type": "boolean",
                    "default": False,
                    "description": "re-run each failed run's tests (slower, runs the agents' code)",
                },
                "test_timeout": {"type": "number", "minimum": 1, "maximum": 3600, "default": 120},
                "max_chars": MAX_CHARS,
            },
            ["experiment_dir"],
            RETORT_SCHEMA,
            Toolbox.retort_diagnose,
        ),
    ]
    return {s.name: s for s in specs}


TOOLS: dict[str, ToolSpec] = _build()
