"""Stage 3: the snapshot builder. The contract's folder layout, written atomically.

Each file is written to a temp file in the same folder and renamed into place, so a reader (or a process
killed mid-write) never sees half a ``report.json``; concurrent writers to one folder serialise on a
file lock. Paths come only from the caller's output folder, never from log content, and nothing is written
through a symlink: the folder is refused when it is one or when others can write into it, each subfolder
(``artifacts/``, ``meta/``, ``evidence/``) is checked or created private (``fsio.safe_atomic_write``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ..fsio import (
    atomic_write,  # noqa: F401 - re-exported: engine.atomic_write, used by the reporters
    ensure_output_root,
    open_nofollow_for_write,
    safe_atomic_write,
)
from ..model import Diagnosis
from ..redact import redact_obj
from ..seal import write_seal
from ..store import FAILURE_LOCK, REPORT_MD, dump_json, folder_lock, write_report
from .report import render_markdown

__all__ = ["atomic_write", "dump_json", "report_dict", "write_snapshot"]


def report_dict(diag: Diagnosis) -> dict[str, Any]:
    """The redacted ``report.json`` content (private keys such as the lock copy are left out)."""
    d = diag.to_dict()
    d.pop("_lock", None)
    redacted: dict[str, Any] = redact_obj(d)
    return redacted


def write_snapshot(
    diag: Diagnosis,
    out_dir: str | os.PathLike[str],
    *,
    lock: dict[str, Any] | None = None,
    extra_files: dict[str, str | bytes] | None = None,
) -> Path:
    """Write the snapshot folder and return its path. Raises OSError when the folder is not writable, and
    ``fsio.OutputFolderRefused`` (an OSError) when it is a symlink or a folder others can write into."""
    out = ensure_output_root(out_dir)
    lock_data = lock if lock is not None else diag.extra.get("_lock")
    _own_lock_file(out / ".faildiag.lock")
    with folder_lock(out / ".faildiag.lock", timeout=30):  # not had in 30 s: written anyway, see folder_lock
        _write_all(out, diag, lock_data, extra_files or {})
    return out


def _own_lock_file(path: Path) -> None:
    """Make sure the lock file is a plain file we created: older ``filelock`` releases open it with
    ``O_TRUNC`` and follow a symlink, so a planted ``.faildiag.lock -> ~/.bashrc`` would be emptied."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_uid == os.geteuid():
        return
    os.close(open_nofollow_for_write(path))  # replaces whatever is there with a new empty file


def _write_all(out: Path, diag: Diagnosis, lock: dict[str, Any] | None, extra: dict[str, str | bytes]) -> None:
    rep = report_dict(diag)
    for name, data in extra.items():
        try:
            safe_atomic_write(out, name, redact_obj(data) if isinstance(data, str) else data)
        except ValueError:
            continue  # a name that leaves the output folder: never written
    lock_obj = redact_obj(lock) if lock else {"reason": "no environment lock was available for this diagnosis"}
    safe_atomic_write(out, FAILURE_LOCK, dump_json(lock_obj))
    safe_atomic_write(out, "meta/failure-profile.json", dump_json(rep["profile"]))
    safe_atomic_write(out, "meta/root-causes.json", dump_json(rep["root_causes"]))
    safe_atomic_write(out, REPORT_MD, render_markdown(diag))
    write_report(out, rep)  # last: its presence means the snapshot is whole
    write_seal(out, rep["profile"].get("command"), rep.get("cwd"))  # fix mode reruns only sealed commands unasked
