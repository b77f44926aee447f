"""The session journal: one JSON line per event, appended and flushed as it happens.

A pytest process killed outright (OOM killer, SIGKILL, ``os._exit``, a CI cancel) runs no session-end
hook, so ``<out>/journal.jsonl`` is what survives: ``start`` before each test (the next ``start`` of the
same process, or its ``worker_end``/``session_end``, means it finished: one line per passing test), ``artifact`` when a test's command writes output files, ``result`` for each diagnosed failure. Lines are
written with one ``write`` on an ``O_APPEND`` descriptor, so pytest-xdist workers sharing the file never
interleave inside a line. No pytest import here: ``faildiag recover`` reads journals without pytest.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store import JOURNAL, open_journal
from ..store import PREVIOUS_JOURNAL as PREVIOUS

__all__ = ["JOURNAL", "PREVIOUS", "Journal", "read_events", "dead_tests", "dead_test_texts", "slugify"]

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
        """The per-test fast path (``start``/``finish``): one formatted line, one ``write``."""
        if self._fd is None:
            return
        worker = f', "worker": "{self.worker}"' if self.worker else ""
        line = (f'{{"e": "{event}", "t": {time.time():.3f}, "pid": {self.pid}{worker}, '
                f'"nodeid": {json.dumps(_redacted_id(nodeid))}}}\n')
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


def _redacted_id(nodeid: str) -> str:
    """Test ids as the journal keeps them: a parametrised id can carry a token (``test_x[ghp_...]``), and the
    journal sits in the output folder CI uploads. Every event is redacted alike, so they still match."""
    from ..redact import redact_text

    return redact_text(nodeid)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every well-formed line of a journal; a torn last line (the process died mid-write) is skipped."""
    events: list[dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for raw in f:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(rec, dict) and "e" in rec:
                    events.append(rec)
    except OSError:
        return []
    return events


@dataclass
class DeadTest:
    """A test that started and never reported: the process running it died."""

    nodeid: str
    pid: int
    worker: str | None
    started: float
    artifacts: list[str] = field(default_factory=list)
    session_ended: bool = False
    main_thread: int | None = None
    deadline: float | None = None


def last_session(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the most recent session (from its last ``session_start``)."""
    starts = [i for i, e in enumerate(events) if e.get("e") == "session_start"]
    return events[starts[-1]:] if starts else events


def dead_tests(events: list[dict[str, Any]]) -> list[DeadTest]:
    """Tests of the last session that started and were the last thing their process started before it
    vanished without a ``worker_end``/``session_end``, unless a result was journaled for them (by the worker,
    or by the controller for a crashed pytest-xdist worker). Session-scoped fixtures tear down inside the
    last test's teardown, so a death there is rightly blamed on that test."""
    session = last_session(events)
    ended = any(e.get("e") == "session_end" for e in session)
    running: dict[int, DeadTest] = {}
    main_threads: dict[int, int] = {}
    deadlines: dict[tuple[int, str], float] = {}  # journaled by pytest-timeout's set_timer, before "start"
    resolved: set[str] = set()
    dead: list[DeadTest] = []
    for e in session:
        kind, pid = e.get("e"), e.get("pid")
        if not isinstance(pid, int):
            continue
        if kind == "process" and isinstance(e.get("main_thread"), int):
            main_threads[pid] = e["main_thread"]
        elif kind == "start" and isinstance(e.get("nodeid"), str):
            running[pid] = DeadTest(nodeid=e["nodeid"], pid=pid, worker=e.get("worker"), started=float(e.get("t", 0)),
                                    main_thread=main_threads.get(pid), deadline=deadlines.pop((pid, e["nodeid"]), None))
        elif kind == "deadline" and isinstance(e.get("seconds"), int | float) and isinstance(e.get("nodeid"), str):
            if pid in running and running[pid].nodeid == e["nodeid"]:
                running[pid].deadline = float(e["seconds"])
            else:
                deadlines[(pid, e["nodeid"])] = float(e["seconds"])
        elif kind == "artifact" and pid in running and isinstance(e.get("path"), str):
            running[pid].artifacts.append(e["path"])
        elif kind in ("finish", "worker_end", "session_end"):
            running.pop(pid, None)
        elif kind == "result" and isinstance(e.get("nodeid"), str):
            resolved.add(e["nodeid"])
    for t in running.values():
        if t.nodeid not in resolved:
            dead.append(t)
    for t in dead:
        t.session_ended = ended
    return dead


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


def dead_test_texts(out_dir: Path, dead: DeadTest, tail: int = 256 * 1024) -> dict[str, str]:
    """Evidence for a dead test: a statement of what the journal shows, the output files its commands
    wrote, and the stack dump its process left (when the hang watchdog or pytest-timeout armed one)."""
    from ..capture.subproc import read_tail

    how = "the session ended, so a pytest-xdist worker died" if dead.session_ended else "the whole pytest session died"
    texts = {"journal.txt": (
        f"faildiag: process {dead.pid}{' (' + dead.worker + ')' if dead.worker else ''} died while running "
        f"{dead.nodeid}: the test started and never reported ({how}); killed by a signal (SIGKILL, the OOM "
        "killer, a CI cancel), os._exit, or a native crash\n")}
    for p in dead.artifacts:
        text = read_tail(Path(p), tail)
        if text:
            texts[Path(p).name] = text
    sf = stacks_file(out_dir, dead.pid)
    try:
        if sf.stat().st_mtime >= dead.started - 1 and sf.stat().st_size:
            texts["hang-stacks.txt"] = annotate_main_thread(read_tail(sf, tail), dead.main_thread)
            if dead.deadline is not None:
                texts["journal.txt"] += (
                    f"faildiag: hang detected: {dead.nodeid} ran into its pytest-timeout deadline of {dead.deadline:g}s; "
                    "the stacks were dumped just before it and the process died right after (pytest-timeout's "
                    "thread method ends the process)\n")
    except OSError:
        pass
    return texts


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
