"""Apply a confirmed proposal: back up, replace atomically, record; and roll it back byte for byte.

Backups go to ``SNAPSHOT/fix/backup/`` before any file is touched, and every file is replaced through a
temp file + rename in its own folder, with its permission bits kept, so an interrupted apply leaves each
file either old or new, never half-written. A change list is all-or-nothing: when one file fails, the
files already changed are restored before the error is raised. Environment changes are not written into
the user's project: they are recorded in ``SNAPSHOT/fix/fix.env`` and given to the verification rerun.

Just before each write the target is checked again (``paths.project_file``): still a regular file inside
the run's folder, still resolving to the path the proposal showed, still with the content hash it showed.
A symbolic link swapped in after the proposal, or any other difference, stops the apply with one line.
Fix mode's own folders in the snapshot are never symbolic links (``paths.private_dir``).
"""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fsio import atomic_write
from ..sanitize import visible
from .context import FixContext
from .paths import PathRefused, private_dir, project_file, read_regular
from .propose import Proposal, env_text

ENV_FILE = "fix/fix.env"


class FixError(Exception):
    """The fix cannot be applied or rolled back as confirmed: reported as one line."""


@dataclass
class Applied:
    """One change as applied: what to restore and the hashes that prove it."""

    kind: str
    path: Path
    backup: Path | None
    before_sha256: str | None
    after_sha256: str
    created: bool = False

    def to_dict(self, ctx: FixContext) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind,
            "path": ctx.rel(self.path),
            "before_sha256": self.before_sha256,
            "after_sha256": self.after_sha256,
            "created": self.created,
        }
        if self.backup is not None:
            d["backup"] = str(self.backup.relative_to(ctx.snapshot))
        return d


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Atomically replace ``path`` with ``data`` (temp file + fsync + rename), keeping ``mode``."""
    atomic_write(path, data, mode=mode)


def env_file_text(proposal: Proposal) -> str:
    return env_text([(c.key, c.new or "") for c in proposal.changes if c.kind == "env" and c.key])


def env_overrides(proposal: Proposal) -> dict[str, str]:
    """The environment variables a proposal sets for the rerun."""
    return {c.key: c.new or "" for c in proposal.changes if c.kind == "env" and c.key}


def apply_proposal(proposal: Proposal, ctx: FixContext) -> list[Applied]:
    """Apply every change of ``proposal``. Raises FixError (after restoring what was already changed)
    when a file differs from the one the proposal was computed on, or cannot be written."""
    done: list[Applied] = []
    try:
        for i, change in enumerate(proposal.changes):
            if change.kind == "env":
                continue
            if change.new_text is None or change.path is None:
                continue
            path = _target(ctx, change.path, change.resolved_path)
            before = read_regular(path)
            if before is None:
                raise FixError(f"{visible(change.path, one_line=True)}: cannot read it as a regular file")
            mode = stat.S_IMODE(path.stat().st_mode)
            if _sha(before) != change.before_sha256:
                raise FixError(
                    f"{visible(change.path, one_line=True)} changed since the proposal was made: run `faildiag fix` again"
                )
            backup_dir = _fix_dir(ctx, "backup")
            backup = backup_dir / f"{i}-{path.name}"
            replace_file(backup, before)
            new = change.new_text.encode("utf-8")
            if change.after_sha256 is not None and _sha(new) != change.after_sha256:
                raise FixError(f"{visible(change.path, one_line=True)}: the new content differs from the proposal's")
            try:
                replace_file(path, new, mode)
            except OSError as exc:
                raise FixError(f"{visible(change.path, one_line=True)}: cannot write ({exc.strerror or exc})") from None
            done.append(Applied(change.kind, path, backup, change.before_sha256, _sha(new)))
        if any(c.kind == "env" for c in proposal.changes):
            env_path = _fix_dir(ctx) / "fix.env"
            data = env_file_text(proposal).encode("utf-8")
            replace_file(env_path, data, 0o600)
            done.append(Applied("env", env_path, None, None, _sha(data), created=True))
    except BaseException:
        rollback(done)
        raise
    return done


def _target(ctx: FixContext, name: str, shown: str | None) -> Path:
    """The file to write for a change: checked again now, and the same file the proposal showed."""
    try:
        path = project_file(ctx.cwd, name, allow_home=ctx.folder_chosen_here)
    except PathRefused as exc:
        raise FixError(visible(str(exc), one_line=True)) from None
    if shown is not None and str(path) != shown:
        raise FixError(
            f"{visible(name, one_line=True)} now resolves to {visible(path, one_line=True)}, not to {visible(shown, one_line=True)} as proposed: "
            "run `faildiag fix` again"
        )
    return path


def _fix_dir(ctx: FixContext, *sub: str) -> Path:
    """``SNAPSHOT/fix[/sub]`` as real folders of this user (never through a symbolic link)."""
    try:
        folder = private_dir(ctx.snapshot / "fix")
        for name in sub:
            folder = private_dir(folder / name)
    except PathRefused as exc:
        raise FixError(visible(str(exc), one_line=True)) from None
    return folder


def rollback(applied: list[Applied]) -> list[str]:
    """Undo ``applied`` in reverse order, byte-identical; returns the problems (empty when all restored)."""
    problems: list[str] = []
    for a in reversed(applied):
        try:
            if a.created:
                a.path.unlink(missing_ok=True)
                continue
            if a.backup is None:
                continue
            data = a.backup.read_bytes()
            mode = stat.S_IMODE(a.path.stat().st_mode) if a.path.exists() else None
            replace_file(a.path, data, mode)
            if _sha(a.path.read_bytes()) != a.before_sha256:
                problems.append(f"{a.path}: restored content differs from the original")
        except OSError as exc:
            problems.append(f"{a.path}: not restored ({exc.strerror or exc}); the original is in {a.backup}")
    return problems
