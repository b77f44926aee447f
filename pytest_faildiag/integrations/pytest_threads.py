"""Exceptions pytest already sees but only prints as warnings: in other threads and "unraisable" ones.

Why: a consumer that hangs because its producer thread died is diagnosed as "waiting on a queue" unless the
producer's ``ConnectionError`` is part of the evidence; pytest reports it as
``PytestUnhandledThreadExceptionWarning`` after the test, too late for the diagnosis. So, where tests run,
we wrap ``threading.excepthook`` and ``sys.unraisablehook`` (after pytest installed its own, which still
runs: its warnings are unchanged) and keep what was raised while the current test ran, bounded.
"""

from __future__ import annotations

import sys
import threading
import traceback
from typing import Any

MAX_RECORDS = 20
MAX_CHARS = 16 * 1024
THREADS_FILE = "thread-exceptions.txt"


class ThreadEvidence:
    """One per process where tests run; ``install`` at session start, ``uninstall`` at the end."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.records: list[tuple[str | None, str]] = []
        self._prev_thread: Any = None
        self._prev_unraisable: Any = None
        self._lock = threading.Lock()

    def install(self) -> None:
        self._prev_thread, self._prev_unraisable = threading.excepthook, sys.unraisablehook
        threading.excepthook = self._on_thread
        sys.unraisablehook = self._on_unraisable

    def uninstall(self) -> None:
        if threading.excepthook == self._on_thread:
            threading.excepthook = self._prev_thread
        if sys.unraisablehook == self._on_unraisable:
            sys.unraisablehook = self._prev_unraisable

    def start(self, nodeid: str) -> None:
        """A new test runs: what later threads raise is its evidence. Called for every test, so a session
        whose threads raise nothing pays one assignment here (a single assignment is atomic; the lock
        is taken only to prune what other threads recorded)."""
        self.current = nodeid
        if self.records:
            with self._lock:
                self.records = [r for r in self.records if r[0] is None][-MAX_RECORDS:]

    def _add(self, text: str) -> None:
        with self._lock:
            if len(self.records) < MAX_RECORDS:
                self.records.append((self.current, text[:MAX_CHARS]))

    def _on_thread(self, args: threading.ExceptHookArgs) -> None:
        try:
            name = args.thread.name if args.thread is not None else "<unknown>"
            tb = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
            self._add(f"Exception in thread {name}:\n{tb}")
        except Exception:
            pass
        (self._prev_thread or threading.__excepthook__)(args)

    def _on_unraisable(self, unraisable: Any) -> None:
        try:
            exc = unraisable.exc_value
            where = unraisable.err_msg or "Exception ignored in"
            tb = "".join(traceback.format_exception(type(exc), exc, unraisable.exc_traceback)) if exc else ""
            self._add(f"{where}: {unraisable.object!r}\n{tb}")
        except Exception:
            pass
        (self._prev_unraisable or sys.__unraisablehook__)(unraisable)

    def texts_for(self, nodeid: str) -> dict[str, str]:
        """Evidence for a failed test: what other threads raised (and unraisable exceptions) while it ran."""
        with self._lock:
            mine = [text for who, text in self.records if who == nodeid]
        return {THREADS_FILE: "\n".join(mine)} if mine else {}

    def first_exception(self, nodeid: str) -> str | None:
        """The last line of the first exception another thread raised during the test (``Type: message``)."""
        with self._lock:
            mine = [text for who, text in self.records if who == nodeid]
        for text in mine:
            lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(" ")]
            if lines:
                return lines[-1].strip()
        return None


def name_dead_thread(diag: Any, texts: dict[str, str]) -> None:
    """A hang while another thread had died: that thread's exception is the first failure (the wait is its
    consequence) and direct evidence of the top cause; otherwise it is added as evidence only."""
    from ..model import Evidence, FailurePoint

    text = texts.get(THREADS_FILE)
    if not text:
        return
    lines = text.splitlines()
    head = next((i for i, ln in enumerate(lines) if ln.startswith("Exception in thread")), None)
    if head is None:
        return
    thread = lines[head][len("Exception in thread ") :].rstrip(":")
    end = next((i for i in range(head + 1, len(lines)) if lines[i].startswith("Exception in thread")), len(lines))
    exc_i = next((i for i in range(end - 1, head, -1) if lines[i].strip() and not lines[i].startswith(" ")), None)
    if exc_i is None:
        return
    exc = lines[exc_i].strip()
    ev = Evidence("direct", THREADS_FILE, f"thread {thread} died: {exc}", exc_i + 1)
    top = diag.top
    if top is not None:
        top.evidence.insert(0, ev)
    if diag.profile.type == "hang":
        diag.profile.first_failure = FailurePoint(THREADS_FILE, exc_i + 1, exc)
        what = f"the thread {thread} died with {exc}; the test waited for it"
        if top is not None:
            top.summary = f"{what} ({top.summary})"
        diag.summary = f"hang: {what}"
