"""Atomic file writes, shared by every writer of the project (snapshots, locks, session index, run
records, retort captures, fix backups).

Why one place: "a reader never sees half a file" is a promise of the contract; it holds only if every
writer does temp file + fsync + rename in the same folder, and a single helper keeps it that way.
Standard library only, so the pytest plugin can import it without pulling in the engine.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> Path:
    """Replace ``path`` with ``data`` atomically (parents created; ``mode`` applied before the rename).
    Raises OSError when the folder is not writable; the temp file never stays behind."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target
