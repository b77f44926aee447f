"""The engine's entry: evidence in, one Diagnosis out. Knows nothing of pytest.

``diagnose`` accepts files, folders (searched for logs and artifacts), texts already in memory (captured
output) and context (exit status, command, environment lock, thread dumps, a resource timeline). It
raises ``InputError`` with a one-line reason when nothing usable was given; everything else degrades
to a best-effort diagnosis with notes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import factory as _factory
from ..fsio import ReadRefused, check_regular, read_allowed, read_roots
from ..hookspecs import collect_checks, collect_evidence, collect_rule_packs
from ..model import Diagnosis, Evidence
from ..parse import artifacts
from ..parse.logread import COMPRESSED_SUFFIXES, InputError, check_readable, open_stream, sniff_binary
from ..parse.scan import ScanResult, scan_file, scan_stream, scan_text
from ..rules import RuleSet, load_ruleset
from . import checks, checks_env, checks_kb
from .analyze import analyze, failure_point
from .rank import build_causes, stuck_points
from .reason import gather_facts, refine_profile
from .report import finish
from .validate import CheckContext, CheckFn

if TYPE_CHECKING:  # annotations only: pluggy is imported where a plugin manager is made (hookspecs)
    import pluggy

LOG_SUFFIXES = {".log", ".txt", ".out", ".err", ".stderr", ".stdout", ""}
MAX_FILES = 2000
READ_BUDGET_S = 45.0  # finding and reading evidence; the rest of a diagnosis takes seconds at most
SKIP_NAMES = {
    "label.json",
    "report.json",
    "failure-profile.json",
    "root-causes.json",
    "failure.lock.json",
    "session.json",
}
BUILTIN_CHECKS: dict[str, CheckFn] = {**checks.CHECKS, **checks_env.CHECKS, **checks_kb.CHECKS}
"""The checks every diagnosis has, by name; plugins add theirs through ``pytest_faildiag_checks``."""


class _Inputs:
    def __init__(self) -> None:
        self.logs: list[tuple[str, Path]] = []
        self.texts: list[tuple[str, str]] = []
        self.flight: list[dict[str, Any]] = []
        self.lock: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.readiness: dict[str, Any] | None = None
        # why a deadline: any folder must be diagnosed in bounded time, whatever it holds (2000 huge files)
        self.deadline = time.monotonic() + READ_BUDGET_S

    def out_of_time(self, what: str) -> bool:
        """True (and a note, once) when the reading budget is spent."""
        if time.monotonic() <= self.deadline:
            return False
        self.notes.append(f"{what} not read: the {READ_BUDGET_S:.0f} s reading budget was spent")
        return True


def _name(path: Path, base: Path | None) -> str:
    if base is not None:
        try:
            return str(path.relative_to(base))
        except ValueError:
            pass
    return path.name


def _add_file(inp: _Inputs, path: Path, base: Path | None, explicit: bool) -> None:
    name = _name(path, base)
    lower = path.name.lower()
    if path.name in SKIP_NAMES and not explicit:
        return
    if artifacts.is_flight_recorder(path):
        fr = artifacts.read_flight_recorder(path)
        if fr:
            inp.flight.append(fr)
        else:
            inp.notes.append(f"{name}: not a readable flight-recorder dump")
        return
    if lower.endswith(".json"):
        _add_json(inp, path, name)
        return
    if lower.endswith(".xml"):
        text = artifacts.read_junit(path)
        if text:
            inp.texts.append((name, text))
        return
    if lower.endswith(".ipynb"):
        if explicit:  # a notebook is read when named, not found in a walk: an old cell's saved error is not this run's
            _add_notebook(inp, path, name)
        return
    if not explicit and not _log_name(path):
        return
    try:
        check_readable(str(path))
    except InputError as exc:
        if explicit and "empty" not in str(exc):
            raise
        return
    try:
        binary = sniff_binary(str(path))
    except InputError:  # compressed in a format read elsewhere (zstd, lz4)
        if explicit:
            raise
        inp.notes.append(f"{name}: skipped (compressed with a format not read here)")
        return
    if binary:
        if explicit:
            raise InputError(f"{path}: binary file, not a log")
        inp.notes.append(f"{name}: skipped (binary)")
        return
    inp.logs.append((name, path))


def _add_notebook(inp: _Inputs, path: Path, name: str) -> None:
    text = artifacts.read_notebook(path)
    if text is None:
        raise InputError(f"{path}: not a readable Jupyter notebook (nbformat 4 JSON)")
    if text:
        inp.texts.append((name, text))
    else:
        inp.notes.append(f"{name}: the notebook was saved without any cell's output")


def _log_name(path: Path) -> bool:
    """A file a folder's walk reads as a log: a log's suffix, also under a compression suffix (``rank0.log.gz``)."""
    suffix = path.suffix.lower()
    if suffix in COMPRESSED_SUFFIXES:
        suffix = Path(path.stem).suffix.lower()
    return suffix in LOG_SUFFIXES


def _add_json(inp: _Inputs, path: Path, name: str) -> None:
    lower = path.name.lower()
    if "error" in lower:
        text = artifacts.read_elastic_error(path)
        if text:
            inp.texts.append((name, text))
            return
    data, problem = artifacts.load_json_artifact(path)
    if not isinstance(data, dict):
        inp.notes.append(f"{name}: {problem or 'not a JSON object'}, ignored")
        return
    if lower.endswith("lock.json") and "packages" in data or str(data.get("schema", "")).startswith("faildiag.lock"):
        inp.lock = data
    elif "readiness" in lower or "verdict" in data or "readiness" in str(data.get("schema", "")):
        inp.readiness = data


def collect(paths: Iterable[str | os.PathLike[str]]) -> _Inputs:
    """Resolve files and folders into logs and artifacts. Raises InputError for unusable explicit paths."""
    inp = _Inputs()
    for raw in paths:
        p = Path(raw)
        check_path = str(p)
        try:
            os.stat(check_path)
        except OSError:
            check_readable(check_path)  # raises with the right one-line reason
        if p.is_dir():
            _walk(inp, p)
            continue
        try:
            check_regular(p)  # a device, FIFO or socket named on the command line: one line, not a hang
        except ReadRefused as exc:
            raise InputError(str(exc)) from None
        _add_file(inp, p, None, explicit=True)
    return inp


def _walk(inp: _Inputs, root: Path) -> None:
    count = 0
    roots = read_roots([root])
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".git", "__pycache__", "faildiag-out")))
        for fn in sorted(filenames):
            count += 1
            if count > MAX_FILES:
                inp.notes.append(f"{root}: more than {MAX_FILES} files; the rest were not read")
                return
            p = Path(dirpath) / fn
            if inp.out_of_time(f"{root}: the rest of the folder"):
                return
            try:  # special files and links out of the named folder are noted, never opened
                check_regular(p)
                read_allowed(p, roots)
            except FileNotFoundError:  # a dangling symlink
                continue
            except OSError as exc:
                inp.notes.append(f"{_name(p, root)}: {exc.strerror}")
                continue
            try:
                _add_file(inp, p, root, explicit=False)
            except InputError as exc:
                inp.notes.append(str(exc))


def diagnose(
    paths: Iterable[str | os.PathLike[str]] = (),
    *,
    texts: Mapping[str, str] | None = None,
    exit_code: int | None = None,
    command: str | None = None,
    lock: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
    ruleset: RuleSet | None = None,
    probe_machine: bool = False,
    stack: str | None = None,
    stream: BinaryIO | None = None,
    stream_name: str = "stdin",
    cwd: str | None = None,
    factory_root: str | os.PathLike[str] | None | bool = None,
    factory_base: str | os.PathLike[str] | None = None,
    hook: pluggy.HookRelay | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> Diagnosis:
    """Diagnose a failed or hung run from its evidence.

    ``context`` may carry ``timeline`` (resource samples), ``last_green_lock``, ``code_changes`` (what
    changed since the last green run, ``changes.code_changes``), ``extra_evidence`` (Evidence items to attach
    to the top cause) and anything a check reads. ``probe_machine`` says the
    failure happened on this machine just now, so checks may look at it (cgroup counters, modules).
    ``cwd`` (where the command ran) is recorded in the report so fix mode can rerun the command there.
    ``factory_root``: the team's known-issue cards (None: ``FAILDIAG_FACTORY_ROOT``, then
    ``./.faildiag/factory/``; False: none); see ``pytest_faildiag.factory``. ``factory_base``: the folder a
    relative root and ``./.faildiag/factory/`` are read from (None: the current one; under pytest, where
    pytest was started: a test may have changed the current folder, or removed it).
    ``hook`` is the relay whose ``pytest_faildiag_*`` implementations contribute rule packs, checks and
    evidence: pytest's ``config.hook`` under ``pytest --faildiag``, None for the command line's own
    manager (entry-point group ``faildiag``). ``out_dir`` (where the diagnosis will be written) is passed
    on to evidence collectors. Raises InputError when no usable evidence was given.
    """
    rs = ruleset or load_ruleset(collect_rule_packs(hook))
    factory_notes: list[str] = []
    if factory_root is not False:
        root = None if factory_root is True else factory_root
        rs, _, factory_notes = _factory.attach(rs, root, cwd=factory_base)
    inp = collect(paths)
    for name, text in (texts or {}).items():
        if text:
            inp.texts.append((name, text))
    hook_context = {"command": command, "exit_code": exit_code, "out_dir": os.fspath(out_dir) if out_dir else None}
    for name, text in collect_evidence(hook_context, hook).items():
        if text:
            inp.texts.append((name, text))
    if not inp.logs and not inp.texts and not inp.flight and exit_code is None and stream is None:
        what = ", ".join(str(p) for p in paths) or "the input"
        raise InputError(f"no logs found in {what}")
    scan = ScanResult()
    for i, (name, path) in enumerate(inp.logs):
        if inp.out_of_time(f"{len(inp.logs) - i} log(s) from {name} on"):
            break
        try:
            scan_file(str(path), name, rs, scan, deadline=inp.deadline)
        except OSError as exc:
            inp.notes.append(f"{name}: unreadable ({exc.strerror})")
    for name, text in inp.texts:
        scan_text(text, name, rs, scan)
    if stream is not None:
        scan_stream(open_stream(stream), stream_name, rs, scan)
        if not scan.sources[stream_name].bytes and not inp.logs and not inp.texts and exit_code is None:
            raise InputError(f"{stream_name}: empty input")
    ctx_data = dict(context or {})
    ctx_data.setdefault("flight_recorder", inp.flight)
    if inp.readiness is not None:
        ctx_data.setdefault("readiness", inp.readiness)
    analysis = analyze(scan, rs, exit_code=exit_code, command=command, hint_stack=stack)
    analysis.profile.first_failure = failure_point(scan, analysis.findings, ranked=bool(analysis.profile.ranks))
    facts = gather_facts(scan, analysis, rs)
    refine_profile(analysis, facts, rs, progressed=scan.progress > 0, scan=scan)
    # a crash's faulthandler dump (segfault, abort) shows where it died, not where it waited
    ctx_data["stuck"] = [] if analysis.profile.type == "crash" else stuck_points(scan, rs)
    the_lock = lock if lock is not None else inp.lock
    ctx = CheckContext(
        scan=scan,
        profile=analysis.profile,
        lock=the_lock,
        probe_machine=probe_machine,
        context=ctx_data,
        checks={**BUILTIN_CHECKS, **collect_checks(hook)},
        patterns=rs.reasoning.patterns,
    )
    causes = build_causes(scan, analysis, rs, ctx, facts)
    for ev in ctx_data.get("extra_evidence") or []:
        if causes and isinstance(ev, Evidence):
            causes[0].evidence.append(ev)
    diag = finish(analysis, causes, scan, rs, ctx_data, facts=facts.active)
    diag.notes.extend(inp.notes)
    diag.notes.extend(factory_notes)
    if ctx_data.get("factory"):  # the cards that matched: which card said what
        diag.extra["factory"] = ctx_data["factory"]
    if cwd:  # where the command ran: fix mode reruns it there
        diag.extra["cwd"] = cwd
    diag.sources = list(scan.sources)
    if the_lock is not None:
        diag.extra["_lock"] = the_lock
    for info in scan.sources.values():
        if info.skipped_bytes:
            diag.notes.append(
                f"{info.name}: {info.skipped_bytes >> 20} MiB in the middle were not read (the "
                f"{READ_BUDGET_S:.0f} s reading budget was spent); its last part was (line numbers after the jump are not the file's)"
            )
        if info.truncated_lines:
            diag.notes.append(f"{info.name}: {info.truncated_lines} over-long line(s) were read up to 16 KiB each")
    return diag
