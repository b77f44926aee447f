"""The session journal: one JSON line per event, appended and flushed as it happens.

A pytest process killed outright (OOM killer, SIGKILL, ``os._exit``, a CI cancel) runs no session-end
hook, so ``<out>/journal.jsonl`` is what survives: ``start`` before each test (the next ``start`` of the
same process, or its ``worker_end``/``session_end``, means it finished: one line per passing test), ``artifact`` when a test's command writes output files, ``result`` for each diagnosed failure. Lines are
written with one ``write`` on an ``O_APPEND`` descriptor, so pytest-xdist workers sharing the file never
interleave inside a line. No pytest import here: ``faildiag recover`` reads journals without pytest.

Reading a journal back (its events, the tests a killed process left, their evidence) is
``pytest_journal_replay``'s: every ``pytest --faildiag`` session loads this module, and one whose previous
session ended cleanly (``ended_cleanly``) needs nothing of that.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..fsio import open_regular
from ..store import JOURNAL, open_journal
from ..store import PREVIOUS_JOURNAL as PREVIOUS

__all__ = [
    "JOURNAL",
    "PREVIOUS",
    "Journal",
    "ended_cleanly",
    "slugify",
    "stacks_file",
    "annotate_main_thread",
]

MAX_LINE = 64 * 1024


class Journal:
    """An append-only, line-flushed event log. Write errors are swallowed after the first: a full disk
    must not fail the test session (the caller is told once through ``error``). ``path`` is
    ``<out>/journal.jsonl``; it is opened through ``store.open_journal``, never through a symlink."""

    def __init__(self, path: Path, *, worker: str | None = None) -> None:
        if path.name != JOURNAL:
            raise ValueError(f"{path}: a journal is named {JOURNAL}")
        self.path = path
        self.worker = worker
        self.pid = os.getpid()
        self.error: OSError | None = None
        self._fd: int | None = open_journal(path.parent)
        self._clean: frozenset[str] = frozenset()

    def expect(self, nodeids: Iterable[str]) -> None:
        """The ids of the tests about to run, redacted in one pass over all of them instead of one per
        ``mark``: ``redact_text`` treats a text of more than ``BULK_LINES`` lines line by line, so a line it
        leaves unchanged is an id that needs no masking. Those ids are written as they are; any other id
        (one that holds a secret, one collected later, any id when the lines do not line up) still goes
        through ``_redacted_id``, so every event carries the same redacted id as before."""
        from ..redact import BULK_LINES, redact_text

        ids = [n for n in nodeids if "\n" not in n and "\r" not in n]
        if len(ids) <= BULK_LINES + 1:
            return  # a short text is redacted as a whole, not line by line: one redact_text per id then
        joined = "\n".join(ids)
        lines = redact_text(joined).split("\n")
        if len(lines) == len(ids):
            self._clean = frozenset(a for a, b in zip(ids, lines, strict=True) if a == b)

    def write(self, event: str, **fields: Any) -> None:
        if self._fd is None:
            return
        rec: dict[str, Any] = {"e": event, "t": round(time.time(), 3), "pid": self.pid}
        if self.worker:
            rec["worker"] = self.worker
        rec.update(fields)
        if isinstance(rec.get("nodeid"), str):
            rec["nodeid"] = _redacted_id(rec["nodeid"])
        line = json.dumps(rec, ensure_ascii=False, default=str)
        if len(line) > MAX_LINE:
            line = json.dumps({k: (v[-4096:] if isinstance(v, str) else v) for k, v in rec.items()}, default=str)
        try:
            os.write(self._fd, (line + "\n").encode("utf-8", errors="replace"))
        except OSError as exc:
            self.error = exc
            self.close()

    def mark(self, event: str, nodeid: str) -> None:
        """The per-test fast path (``start``/``finish``): one formatted line, one ``write``. The same line
        ``write`` makes (``json.dumps`` of a string is ``encode_basestring_ascii``, called here directly)."""
        if self._fd is None:
            return
        worker = f', "worker": "{self.worker}"' if self.worker else ""
        safe = nodeid if nodeid in self._clean else _redacted_id(nodeid)
        line = f'{{"e": "{event}", "t": {time.time():.3f}, "pid": {self.pid}{worker}, "nodeid": {_quoted(safe)}}}\n'
        try:
            os.write(self._fd, line.encode("utf-8", errors="replace"))
        except OSError as exc:
            self.error = exc
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None


_quoted = json.encoder.encode_basestring_ascii  # json.dumps(str) without its keyword checks and encoder lookup


def _redacted_id(nodeid: str) -> str:
    """Test ids as the journal keeps them: a parametrised id can carry a token (``test_x[ghp_...]``), and the
    journal sits in the output folder CI uploads. Every event is redacted alike, so they still match."""
    from ..redact import redact_text

    return redact_text(nodeid)


def ended_cleanly(path: Path) -> bool:
    """True when the journal's last line is a ``session_end``: the last session ended, so ``dead_tests`` can
    only find tests of workers that died before it (``session_ended``), which the controller diagnosed then.
    Reads the last few KiB instead of replaying the whole journal (a line per test) at every session start.
    A torn last line, a journal that is not a regular file or any other doubt answers False: replay it."""
    try:
        f = open_regular(path)
    except OSError:
        return False
    with f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - 4096))
        tail = f.read(4096)
    if not tail.endswith(b"\n"):
        return False
    last = tail[:-1].rsplit(b"\n", 1)[-1]
    try:
        rec = json.loads(last)
    except (ValueError, RecursionError):
        return False
    return isinstance(rec, dict) and rec.get("e") == "session_end"


def slugify(nodeid: str, when: str = "call") -> str:
    """A file-system-safe folder name, unique per node id (a short hash of it) and phase. Built from the
    redacted id: a token in a parametrised test's id (``test_x[ghp_...]``) must not become a folder name."""
    import hashlib

    from ..redact import redact_text

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", redact_text(nodeid)).strip("._") or "test"
    if len(safe) > 80:
        safe = safe[:40] + "_" + safe[-39:]
    digest = hashlib.sha1(nodeid.encode("utf-8", errors="replace")).hexdigest()[:8]
    suffix = "" if when in ("call", "") else f"-{re.sub(r'[^a-z]', '', when) or 'crash'}"
    return f"{safe}-{digest}{suffix}"


def stacks_file(out_dir: Path, pid: int) -> Path:
    """Where the hang watchdog of process ``pid`` dumps thread stacks (see pytest_hang)."""
    return out_dir / f".stacks-{pid}.txt"


def annotate_main_thread(stacks: str, ident: int | None) -> str:
    """Mark the main thread's block in a faulthandler dump (``Thread 0x… [MainThread]``): the dump itself
    does not say which thread the test ran on, and that is the thread the user waits for."""
    if not ident:
        return stacks
    for prefix in ("Thread", "Current thread"):
        head = f"{prefix} 0x{ident:016x} (most recent call first)"
        if head in stacks:
            return stacks.replace(head, f"{prefix} 0x{ident:016x} [MainThread] (most recent call first)", 1)
    return stacks
