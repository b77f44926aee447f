"""Stage 3: the snapshot builder. The contract's folder layout, written atomically.

Each file is written to a temp file in the same folder and renamed into place, so a reader (or a process
killed mid-write) never sees half a ``report.json``; concurrent writers to one folder serialise on a
file lock. Paths come only from the caller's output folder, never from log content.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ..fsio import atomic_write
from ..model import Diagnosis
from ..redact import redact_obj
from ..seal import write_seal
from .report import render_markdown


def dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def report_dict(diag: Diagnosis) -> dict[str, Any]:
    """The redacted ``report.json`` content (private keys such as the lock copy are left out)."""
    d = diag.to_dict()
    d.pop("_lock", None)
    return redact_obj(d)


def write_snapshot(diag: Diagnosis, out_dir: str | os.PathLike[str], *, lock: dict[str, Any] | None = None,
                   extra_files: dict[str, str | bytes] | None = None) -> Path:
    """Write the snapshot folder and return its path. Raises OSError when the folder is not writable."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lock_data = lock if lock is not None else diag.extra.get("_lock")
    try:
        with FileLock(str(out / ".faildiag.lock"), timeout=30):
            _write_all(out, diag, lock_data, extra_files or {})
    except Timeout:
        _write_all(out, diag, lock_data, extra_files or {})  # atomic renames still keep every file whole
    return out


def _write_all(out: Path, diag: Diagnosis, lock: dict[str, Any] | None, extra: dict[str, str | bytes]) -> None:
    rep = report_dict(diag)
    for name, data in extra.items():
        target = (out / name).resolve()
        if out.resolve() not in target.parents:
            continue  # never write outside the output folder
        atomic_write(target, redact_obj(data) if isinstance(data, str) else data)
    lock_obj = redact_obj(lock) if lock else {"reason": "no environment lock was available for this diagnosis"}
    atomic_write(out / "artifacts" / "failure.lock.json", dump_json(lock_obj))
    atomic_write(out / "meta" / "failure-profile.json", dump_json(rep["profile"]))
    atomic_write(out / "meta" / "root-causes.json", dump_json(rep["root_causes"]))
    atomic_write(out / "report.md", render_markdown(diag))
    atomic_write(out / "report.json", dump_json(rep))  # last: its presence means the snapshot is whole
    write_seal(out, rep["profile"].get("command"), rep.get("cwd"))  # fix mode reruns only sealed commands unasked
