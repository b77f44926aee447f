"""What a run leaves besides a diagnosis: ``run.json`` always, ``watchdog.txt`` after a hang (the evidence a
later ``faildiag diagnose`` of the folder reads, as the run's own diagnosis did), the last-green lock after a
passing run.

Written without importing the engine: a passing run should not pay for loading the rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..fsio import safe_atomic_write
from ..store import LAST_GREEN_LOCK, RUN_FILE, WATCHDOG_FILE, write_last_green
from .options import RunResult

LAST_GREEN = LAST_GREEN_LOCK  # the name is the output folder's: defined in store


def write_run_files(result: RunResult, out: Path, lock: dict[str, Any] | None, *, redacted: bool = False) -> None:
    """``run.json`` always; ``last-green.lock.json`` after a passing run (the baseline for the next failure).

    Written without importing the engine: a passing run should not pay for loading the rules."""
    from ..redact import redact_obj

    safe_atomic_write(out, RUN_FILE, _dump(redact_obj(result.to_json())))
    if result.hung:
        safe_atomic_write(out, WATCHDOG_FILE, result.watchdog_text())
    if not result.failed and lock:
        write_last_green(out, _dump(lock if redacted else redact_obj(lock)))


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"
