"""What fix mode knows about a failure: the snapshot's report, the folder the run started in, the command,
and the evidence text (report excerpts plus the original logs when they are still on disk).

Why re-read the logs: ``report.json`` keeps one-line excerpts, but a fix needs the whole traceback (the
user frame that called ``torch.load``, the file that defines the layer). The logs named in the report's
``sources`` are looked up next to the run and inside the snapshot; when they are gone the excerpts are
still enough for most fixes. Nothing here writes anything.

What is trusted: the files named by the snapshot are candidates only; ``project_file`` keeps the regular
files inside the run's folder (see ``paths``). The command is trusted to run without its own confirmation
only when it was given with ``--command`` or this user's faildiag sealed it for this snapshot and folder
(see ``pytest_faildiag.seal``); ``command_recorded_here`` says which.
"""

from __future__ import annotations

import os
import re
import shlex
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..sanitize import visible
from ..seal import check_seal
from .paths import PathRefused, check_root, project_file, read_tail

MAX_LOG_BYTES = 4 * 1024 * 1024
LOG_SUFFIXES = {".log", ".txt", ".out", ".err", ".stderr", ".stdout", ""}
CONFIG_SUFFIXES = {
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "ini",
}
SKIP_DIRS = {
    ".git",
    ".venv",
    "venv",
    "env",
    "__pycache__",
    "node_modules",
    "site-packages",
    "faildiag-out",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
}
MAX_SCAN_FILES = 400

_TB_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_RAISED_FROM = re.compile(r"raised from (?P<file>\S+?):(?P<line>\d+) in (?P<func>\S+?)(?:: (?P<code>.*))?$")
_LIB_DIRS = tuple(p for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")} if p)


class SnapshotError(ValueError):
    """The snapshot folder cannot be used (missing or malformed report.json): one line for the user."""


@dataclass
class Frame:
    """One traceback frame: ``file`` as written in the log, ``path`` when it resolves to a file on disk."""

    file: str
    line: int
    func: str
    code: str = ""
    path: Path | None = None

    @property
    def is_user(self) -> bool:
        """A frame in the user's code: on disk, not in an installed package or the standard library."""
        if self.path is None or self.file.startswith("<"):
            return False
        text = str(self.path)
        return not ("site-packages" in text or "dist-packages" in text or text.startswith(_LIB_DIRS))


@dataclass
class FixContext:
    snapshot: Path
    report: dict[str, Any]
    cwd: Path
    command: str | None
    evidence_text: str = ""
    frames: list[Frame] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    command_origin: str = "report"  # "option" (--command) | "report"
    command_recorded_here: bool = False  # sealed by this user's faildiag for this snapshot and folder
    folder_chosen_here: bool = True  # --cwd, the current folder, or a sealed report's: not a foreign report's

    def project_file(self, path: str | os.PathLike[str]) -> Path | None:
        """``path`` resolved when fix mode may edit it (a regular file inside the run's folder), else None
        with the reason added to ``notes`` once."""
        try:
            return project_file(self.cwd, path, allow_home=self.folder_chosen_here)
        except PathRefused as exc:
            note = f"not edited: {exc}"
            if note not in self.notes:
                self.notes.append(note)
            return None

    def editable_frames(self) -> list[Frame]:
        """``user_frames`` whose file fix mode may edit (the others are noted and skipped)."""
        out = []
        for fr in self.user_frames():
            resolved = self.project_file(fr.path) if fr.path is not None else None
            if resolved is not None:
                out.append(Frame(fr.file, fr.line, fr.func, fr.code, resolved))
        return out

    def failure_frame(self) -> Frame | None:
        """The innermost frame of the user's code where the original run failed (what verification probes)."""
        frames = self.user_frames()
        return frames[0] if frames else None

    @property
    def causes(self) -> list[dict[str, Any]]:
        causes = self.report.get("root_causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []

    @property
    def first_failure(self) -> dict[str, Any]:
        ff = (self.report.get("profile") or {}).get("first_failure")
        return ff if isinstance(ff, dict) else {}

    def user_frames(self) -> list[Frame]:
        """User frames, innermost (most likely to hold the faulty line) first, without duplicates."""
        seen: set[tuple[str, int]] = set()
        out = []
        for fr in reversed(self.frames):
            key = (str(fr.path), fr.line)
            if fr.is_user and key not in seen:
                seen.add(key)
                out.append(fr)
        return out

    def rel(self, path: Path) -> str:
        """``path`` relative to the run's folder when inside it (how proposals show paths)."""
        try:
            return str(path.resolve().relative_to(self.cwd.resolve()))
        except ValueError:
            return str(path)

    def command_files(self) -> list[Path]:
        """Files named on the command line (the script, ``--config x.yaml``), resolved against cwd."""
        if not self.command:
            return []
        try:
            tokens = shlex.split(self.command)
        except ValueError:
            tokens = self.command.split()
        out: list[Path] = []
        for i, tok in enumerate(tokens):
            cand = tok.split("=", 1)[1] if tok.startswith("-") and "=" in tok else tok
            if i > 0 and tokens[i - 1] == "-m":
                cand = cand.replace(".", "/") + ".py"
            p = Path(cand) if os.path.isabs(cand) else self.cwd / cand
            if cand and not cand.startswith("-") and p.is_file():
                out.append(p)
        return out

    def source_files(self) -> list[Path]:
        """Python files worth searching for a source fix: user frames first, then the command's script,
        then the run folder's own files (bounded, virtual environments skipped)."""
        out: list[Path] = []
        for fr in self.editable_frames():
            if fr.path is not None and fr.path.suffix == ".py":
                out.append(fr.path)
        out += [p for p in self.command_files() if p.suffix == ".py"]
        out += walk_files(self.cwd, {".py"}, skip=self.snapshot)
        return self._editable(out)

    def _editable(self, paths: list[Path]) -> list[Path]:
        return _unique([r for r in (self.project_file(p) for p in _unique(paths)) if r is not None])

    def config_files(self) -> list[Path]:
        """Config files: those named on the command line first, then the run folder's (bounded)."""
        named = [p for p in self.command_files() if p.suffix.lower() in CONFIG_SUFFIXES]
        found = [
            p
            for p in walk_files(self.cwd, set(CONFIG_SUFFIXES), skip=self.snapshot)
            if p.name
            not in {
                "report.json",
                "session.json",
                "package.json",
                "package-lock.json",
                "pyproject.toml",
                "tsconfig.json",
                "setup.cfg",
                "tox.ini",
            }
            and not p.name.endswith(".lock.json")
        ]
        return self._editable(named + found)


def _unique(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for p in paths:
        r = Path(os.path.realpath(p))
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def walk_files(root: Path, suffixes: set[str], *, skip: Path | None = None, max_depth: int = 3) -> list[Path]:
    """Files under ``root`` with one of ``suffixes``, shallow first, skipping caches, venvs and ``skip``."""
    out: list[Path] = []
    skip_r = skip.resolve() if skip is not None else None
    root_depth = len(root.resolve().parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath).resolve()
        if skip_r is not None and (here == skip_r or skip_r in here.parents):
            dirnames[:] = []
            continue
        depth = len(here.parts) - root_depth
        dirnames[:] = (
            sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")) if depth < max_depth else []
        )
        for fn in sorted(filenames):
            if Path(fn).suffix.lower() in suffixes:
                out.append(here / fn)
                if len(out) >= MAX_SCAN_FILES:
                    return sorted(out, key=lambda p: len(p.parts))
    return sorted(out, key=lambda p: len(p.parts))


def read_report(snapshot: Path) -> dict[str, Any]:
    """``SNAPSHOT/report.json`` as a dict. Raises SnapshotError (one line) when it is missing or malformed.

    Read through ``store`` (bounded) and rebuilt through ``Diagnosis.from_dict``: a damaged or hand-edited
    report (``"fix_hints": true``) still gets a (manual) proposal, never a traceback."""
    from ..model import Diagnosis
    from ..store import REPORT, read_json

    path = snapshot / REPORT
    if not snapshot.is_dir():
        raise SnapshotError(f"{snapshot}: not a snapshot folder")
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise SnapshotError(f"{snapshot}: no report.json (not a faildiag snapshot)") from None
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"{path}: unreadable report ({exc})") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("faildiag.report/"):
        raise SnapshotError(f"{path}: not a faildiag report")
    out = Diagnosis.from_dict(data).to_dict()
    if not isinstance(out.get("cwd"), str | None):
        out["cwd"] = None
    return out


def load_context(
    snapshot: str | os.PathLike[str], *, cwd: str | os.PathLike[str] | None = None, command: str | None = None
) -> FixContext:
    """Build the context of ``snapshot``. The working folder is ``cwd`` when given, else the report's
    ``"cwd"`` key, else the current folder. Raises SnapshotError for an unusable snapshot or folder."""
    snap = Path(snapshot)
    report = read_report(snap)
    notes: list[str] = []
    where = cwd or report.get("cwd")
    if not where:
        where = os.getcwd()
        notes.append("the snapshot records no working folder: using the current one (pass --cwd to change it)")
    folder = Path(str(where))
    if not folder.is_dir():
        raise SnapshotError(f"{visible(folder, one_line=True)}: the run's working folder does not exist (pass --cwd)")
    recorded = report["profile"].get("command")
    cmd = command or (recorded if isinstance(recorded, str) and recorded.strip() else None)
    ctx = FixContext(snapshot=snap, report=report, cwd=folder, command=cmd, notes=notes)
    if command:
        ctx.command_origin, ctx.command_recorded_here = "option", False
    elif cmd:
        ctx.command_recorded_here = check_seal(snap, cmd, folder)
    ctx.folder_chosen_here = not (cwd is None and report.get("cwd")) or ctx.command_recorded_here
    try:
        check_root(folder, allow_home=ctx.folder_chosen_here)
    except PathRefused as exc:
        notes.append(f"not edited: {exc}")
    ctx.evidence_text = _evidence_text(ctx)
    ctx.frames = parse_frames(ctx.evidence_text, folder)
    return ctx


def _evidence_text(ctx: FixContext) -> str:
    parts: list[str] = []
    ff = ctx.first_failure
    if ff.get("excerpt"):
        parts.append(str(ff["excerpt"]))
    for cause in ctx.causes:
        for ev in cause.get("evidence") or []:
            if isinstance(ev, dict) and ev.get("excerpt"):
                parts.append(str(ev["excerpt"]))
    for log in _log_files(ctx):
        data = read_tail(log, MAX_LOG_BYTES)
        if data is not None:
            parts.append(data.decode("utf-8", "replace"))
    return "\n".join(parts)


def _log_files(ctx: FixContext) -> list[Path]:
    out: list[Path] = []
    for name in ctx.report.get("sources") or []:
        if not isinstance(name, str) or not name or name == "stdin" or ".." in Path(name).parts or os.path.isabs(name):
            continue  # only logs next to the run or in the snapshot, never a path the report points elsewhere
        for base in (ctx.snapshot, ctx.cwd):
            p = base / name
            inside = Path(os.path.realpath(p)).is_relative_to(os.path.realpath(base))
            if inside and p.is_file() and p.suffix.lower() in LOG_SUFFIXES:  # a link out of the folder is not read
                out.append(p)
                break
    return _unique(out)


def parse_frames(text: str, cwd: Path) -> list[Frame]:
    """Traceback frames (``File "x", line N, in f`` + the code line) and the engine's ``raised from`` lines."""
    frames: list[Frame] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _TB_FRAME.search(line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _TB_FRAME.search(lines[i + 1]) else ""
            frames.append(_frame(m["file"], int(m["line"]), m["func"], code, cwd))
            continue
        m = _RAISED_FROM.search(line)
        if m:
            frames.append(_frame(m["file"], int(m["line"]), m["func"], (m["code"] or "").strip(), cwd))
    return frames


def _frame(file: str, line: int, func: str, code: str, cwd: Path) -> Frame:
    p = Path(file) if os.path.isabs(file) else cwd / file
    return Frame(file=file, line=line, func=func, code=code, path=p.resolve() if p.is_file() else None)
