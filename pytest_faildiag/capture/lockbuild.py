"""The environment lock of a run, built while the command runs (niced, in a subprocess) or reused from the
last green run when the environment's fingerprint did not change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from ..fsio import safe_atomic_write
from ..store import read_last_green

_LOCK_SCRIPT = "import json, sys\nfrom pytest_faildiag.capture.envlock import build_lock\njson.dump(build_lock(), sys.stdout, default=str)\n"
FINGERPRINT = ".faildiag/last-green.fingerprint"
_VOLATILE_ENV = {
    "_",
    "OLDPWD",
    "PWD",
    "SHLVL",
    "TERM_SESSION_ID",
    "WINDOWID",
    "SSH_CLIENT",
    "SSH_CONNECTION",
    "SSH_TTY",
}


class LockBuilder(threading.Thread):
    """Build the environment lock while the command runs, in a subprocess at the lowest CPU priority.

    Why a niced subprocess: the lock costs ~0.2 s of CPU (package metadata, git, probes); in a thread of
    ours it would compete with the user's job on a busy machine and hold our GIL. Niced, it uses a free
    core when there is one and otherwise waits. A run that ends before the lock is done waits at most
    ``result(timeout)`` for it, then goes on without one (noted)."""

    def __init__(self, out: Path | None = None, cwd: str | None = None) -> None:
        super().__init__(name="faildiag-lock", daemon=True)
        self.cwd = cwd or os.getcwd()
        self.out = out
        self.lock: dict[str, Any] | None = None
        self.redacted: dict[str, Any] | None = None
        self.note: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.fingerprint = ""
        self.reused = False

    def begin(self) -> None:
        """Start building, unless the last green run's lock still describes this environment (same
        interpreter, same package folders, same git commit, same environment variables): then that lock
        is this run's too, and a run repeated in the same folder pays nothing for it."""
        self.fingerprint = env_fingerprint(self.cwd)
        if self.out is not None:
            green = read_last_green(self.out)
            try:
                saved = (self.out / FINGERPRINT).read_text(encoding="utf-8").strip()
            except OSError:
                saved = ""
            if green is not None and saved == self.fingerprint:
                self.lock = self.redacted = green
                self.reused = True
                return
        self.start()

    def save_fingerprint(self) -> None:
        """After a passing run's lock was written: remember which environment it describes."""
        if self.out is not None and self.fingerprint and not self.reused:
            try:
                safe_atomic_write(self.out, FINGERPRINT, self.fingerprint + "\n")
            except OSError:
                pass

    def run(self) -> None:
        cmd = [sys.executable, "-c", _LOCK_SCRIPT]
        nice = shutil.which("nice")
        if nice:
            cmd = [nice, "-n", "19", *cmd]
        env = dict(os.environ)
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=self.cwd, env=env
            )
            out, _ = self.proc.communicate()
            lock = json.loads(out) if out else None
        except (OSError, ValueError) as exc:
            self.note = f"environment lock failed: {exc}"
            return
        if not isinstance(lock, dict):
            self.note = "environment lock failed: no lock was produced"
            return
        from ..redact import redact_obj

        self.lock, self.redacted = lock, redact_obj(lock)

    def cancel(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass

    def result(self, timeout: float = 1.0) -> dict[str, Any] | None:
        """The lock; when the niced build has not finished ``timeout`` s after the run, the job no longer
        needs the CPU: build it here at normal priority instead (an unprivileged process cannot un-nice)."""
        if self.reused or not self.ident:
            return self.lock
        self.join(timeout)
        if not self.is_alive():
            return self.lock
        self.cancel()
        try:
            from ..redact import redact_obj
            from .envlock import build_lock

            lock = build_lock(cwd=self.cwd)
            self.lock, self.redacted = lock, redact_obj(lock)
        except Exception as exc:  # never raises by contract; if it does, go on without a lock
            self.note = f"environment lock failed: {type(exc).__name__}: {exc}"
        return self.lock


def env_fingerprint(cwd: str) -> str:
    """A cheap digest of what the environment lock depends on (a few dozen stat calls, no imports):
    the interpreter, the modification times of the import path's folders (an install or removal
    changes them), the git commit of ``cwd``, and the environment variables."""
    import hashlib

    h = hashlib.sha256()
    h.update(f"{sys.executable}|{sys.version}|{cwd}".encode())
    for entry in sys.path:
        try:
            h.update(f"|{entry}:{os.stat(entry or '.').st_mtime_ns}".encode())
        except OSError:
            h.update(f"|{entry}:-".encode())
    git = Path(cwd)
    for folder in (git, *git.parents):
        head = folder / ".git" / "HEAD"
        if head.is_file():
            try:
                ref = head.read_text().strip()
                h.update(ref.encode())
                if ref.startswith("ref: "):
                    h.update((folder / ".git" / ref[5:]).read_bytes())
                h.update(str((folder / ".git" / "index").stat().st_mtime_ns).encode())
            except OSError:
                pass
            break
    for k in sorted(os.environ):
        if k not in _VOLATILE_ENV:
            h.update(f"|{k}={os.environ[k]}".encode())
    return h.hexdigest()
