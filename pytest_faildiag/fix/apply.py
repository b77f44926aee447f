"""Apply a confirmed proposal: back up, replace atomically, record; and roll it back byte for byte.

Backups go to ``SNAPSHOT/fix/backup/`` before any file is touched, and every file is replaced through a
temp file + rename in its own folder, with its permission bits kept, so an interrupted apply leaves each
file either old or new, never half-written. A change list is all-or-nothing: when one file fails, the
files already changed are restored before the error is raised. Environment changes are not written into
the user's project: they are recorded in ``SNAPSHOT/fix/fix.env`` and given to the verification rerun.
"""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fsio import atomic_write
from .context import FixContext
from .propose import Proposal

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
        d: dict[str, Any] = {"kind": self.kind, "path": ctx.rel(self.path), "before_sha256": self.before_sha256,
                             "after_sha256": self.after_sha256, "created": self.created}
        if self.backup is not None:
            d["backup"] = str(self.backup.relative_to(ctx.snapshot))
        return d


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """Atomically replace ``path`` with ``data`` (temp file + fsync + rename), keeping ``mode``."""
    atomic_write(path, data, mode=mode)

def env_file_text(proposal: Proposal) -> str:
    lines = ["# written by `faildiag fix`: the environment of the verification rerun\n"]
    for c in proposal.changes:
        if c.kind == "env" and c.key:
            value = (c.new or "").replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'{c.key}="{value}"\n')
    return "".join(lines)


def env_overrides(proposal: Proposal) -> dict[str, str]:
    """The environment variables a proposal sets for the rerun."""
    return {c.key: c.new or "" for c in proposal.changes if c.kind == "env" and c.key}


def apply_proposal(proposal: Proposal, ctx: FixContext) -> list[Applied]:
    """Apply every change of ``proposal``. Raises FixError (after restoring what was already changed)
    when a file differs from the one the proposal was computed on, or cannot be written."""
    backup_dir = ctx.snapshot / "fix" / "backup"
    done: list[Applied] = []
    try:
        for i, change in enumerate(proposal.changes):
            if change.kind == "env":
                continue
            if change.new_text is None or change.path is None:
                continue
            path = (ctx.cwd / change.path).resolve()
            try:
                before = path.read_bytes()
                mode = stat.S_IMODE(path.stat().st_mode)
            except OSError as exc:
                raise FixError(f"{change.path}: cannot read ({exc.strerror or exc})") from None
            if _sha(before) != change.before_sha256:
                raise FixError(f"{change.path} changed since the proposal was made: run `faildiag fix` again")
            backup_dir.mkdir(parents=True, exist_ok=True)
            backup = backup_dir / f"{i}-{path.name}"
            replace_file(backup, before)
            new = change.new_text.encode("utf-8")
            try:
                replace_file(path, new, mode)
            except OSError as exc:
                raise FixError(f"{change.path}: cannot write ({exc.strerror or exc})") from None
            done.append(Applied(change.kind, path, backup, change.before_sha256, _sha(new)))
        if any(c.kind == "env" for c in proposal.changes):
            env_path = ctx.snapshot / ENV_FILE
            env_path.parent.mkdir(parents=True, exist_ok=True)
            data = env_file_text(proposal).encode("utf-8")
            replace_file(env_path, data, 0o600)
            done.append(Applied("env", env_path, None, None, _sha(data), created=True))
    except BaseException:
        rollback(done)
        raise
    return done


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
