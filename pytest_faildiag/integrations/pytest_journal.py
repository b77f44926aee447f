"""The session journal: one JSON line per event, appended and flushed as it happens.

A pytest process killed outright (OOM killer, SIGKILL, ``os._exit``, a CI cancel) runs no session-end
hook, so ``<out>/journal.jsonl`` is what survives: ``start`` before each test (the next ``start`` of the
same process, or its ``worker_end``/``session_end``, means it finished: one line per passing test), ``artifact`` when a test's command writes output files, ``result`` for each diagnosed failure. Lines are
written with one ``write`` on an ``O_APPEND`` descriptor, so pytest-xdist workers sharing the file never
interleave inside a line. No pytest import here: ``faildiag recover`` reads journals without pytest.

A journal is input like any other and may be crafted: it is read streamed and bounded (its last
``MAX_JOURNAL_BYTES``, lines up to ``MAX_LINE``, at most ``MAX_DEAD`` dead tests), and the files it names are
read only when they resolve inside the output folder, the project or pytest's own temporary folders.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fsio import check_regular, open_regular, project_root, read_allowed, read_roots, read_tail
from ..store import JOURNAL, open_journal
from ..store import PREVIOUS_JOURNAL as PREVIOUS

__all__ = [
    "JOURNAL",
    "PREVIOUS",
    "Journal",
    "read_events",
    "dead_tests",
    "dead_test_texts",
    "ended_cleanly",
    "slugify",
]

MAX_LINE = 64 * 1024
MAX_JOURNAL_BYTES = 256 * 1024 * 1024  # ~2 million tests; only the end of a longer journal is read
MAX_DEAD = 64  # a killed session leaves one dead test per process: xdist workers, not thousands
MAX_ARTIFACTS = 32  # journaled output files read per dead test
MAX_PROCESSES = 4096
MAX_RESOLVED = 65536
_READ_LINE = 4 * MAX_LINE + 1  # the writer caps characters; UTF-8 takes up to 4 bytes each, plus the newline


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


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """Every well-formed line of a journal, streamed; a torn last line (the process died mid-write), a line
    longer than any the writer makes and anything before the last ``MAX_JOURNAL_BYTES`` are skipped.
    Nothing at all when the journal is not a regular file (a FIFO would block, a device never ends)."""
    try:
        f = open_regular(path)
    except OSError:
        return
    with f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - MAX_JOURNAL_BYTES))
        if size > MAX_JOURNAL_BYTES:
            f.readline(_READ_LINE)  # start at a line boundary
        while True:
            raw = f.readline(_READ_LINE + 1)
            if not raw:
                return
            if len(raw) > _READ_LINE:
                while raw and not raw.endswith(b"\n"):
                    raw = f.readline(1 << 20)
                continue
            try:  # every field used is type-checked where it is used, so only parsing itself needs a guard
                rec = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(rec, dict) and "e" in rec:
                yield rec


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
    return events[starts[-1] :] if starts else events


def dead_tests(events: Iterable[dict[str, Any]], limit: int = MAX_DEAD) -> list[DeadTest]:
    """Tests of the last session that started and were the last thing their process started before it
    vanished without a ``worker_end``/``session_end``, unless a result was journaled for them (by the worker,
    or by the controller for a crashed pytest-xdist worker). Session-scoped fixtures tear down inside the
    last test's teardown, so a death there is rightly blamed on that test. Streams ``events`` (a new
    ``session_start`` starts over) and keeps bounded state, so a crafted journal costs no more than a real one."""
    replay = _Replay()
    for e in events:
        if e.get("e") == "session_start":
            replay = _Replay()
        replay.feed(e)
    return replay.dead(limit)


@dataclass
class _Replay:
    """What one session's events say so far: who runs what, which results were journaled."""

    running: dict[int, DeadTest] = field(default_factory=dict)
    main_threads: dict[int, int] = field(default_factory=dict)
    deadlines: dict[tuple[int, str], float] = field(default_factory=dict)  # pytest-timeout's set_timer, before "start"
    resolved: set[str] = field(default_factory=set)
    ended: bool = False

    def feed(self, e: dict[str, Any]) -> None:
        kind, pid = e.get("e"), e.get("pid")
        if kind == "session_end":
            self.ended = True
        if not isinstance(pid, int):
            return
        nodeid = e.get("nodeid")
        if kind == "process" and isinstance(e.get("main_thread"), int) and len(self.main_threads) < MAX_PROCESSES:
            self.main_threads[pid] = e["main_thread"]
        elif kind == "start" and isinstance(nodeid, str):
            if pid in self.running or len(self.running) < MAX_PROCESSES:
                t = e.get("t")
                self.running[pid] = DeadTest(
                    nodeid=nodeid,
                    pid=pid,
                    worker=e.get("worker") if isinstance(e.get("worker"), str) else None,
                    started=float(t) if isinstance(t, int | float) else 0.0,
                    main_thread=self.main_threads.get(pid),
                    deadline=self.deadlines.pop((pid, nodeid), None),
                )
        elif kind == "deadline" and isinstance(e.get("seconds"), int | float) and isinstance(nodeid, str):
            if pid in self.running and self.running[pid].nodeid == nodeid:
                self.running[pid].deadline = float(e["seconds"])
            elif len(self.deadlines) < MAX_PROCESSES:
                self.deadlines[(pid, nodeid)] = float(e["seconds"])
        elif kind == "artifact" and pid in self.running and isinstance(e.get("path"), str):
            if len(self.running[pid].artifacts) < MAX_ARTIFACTS:
                self.running[pid].artifacts.append(e["path"])
        elif kind in ("finish", "worker_end", "session_end"):
            self.running.pop(pid, None)
        elif kind == "result" and isinstance(nodeid, str) and len(self.resolved) < MAX_RESOLVED:
            self.resolved.add(nodeid)

    def dead(self, limit: int) -> list[DeadTest]:
        dead = [t for t in self.running.values() if t.nodeid not in self.resolved][:limit]
        for t in dead:
            t.session_ended = self.ended
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


def pytest_temp_root() -> Path:
    """Where pytest's ``tmp_path`` folders live unless ``--basetemp`` moves them (pytest's own rule):
    the ``faildiag_run`` fixture writes the output files the journal names there."""
    import getpass

    try:
        user = re.sub(r"[\W]", "_", getpass.getuser())
    except (ImportError, KeyError, OSError):
        user = "unknown"
    return Path(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()) / f"pytest-of-{user}"


def evidence_roots(out_dir: Path, extra: Iterable[str | os.PathLike[str] | None] = ()) -> list[Path]:
    """The folders journaled files may be read from: the output folder, the project it belongs to and the
    current folder's, pytest's temporary folders and ``extra`` (folders a person named: ``--root``,
    ``--basetemp``). A "project" that would be the home folder or ``/`` is left out (see ``project_root``)."""
    out_dir = Path(out_dir)
    return read_roots([out_dir, project_root(out_dir.absolute().parent), project_root(), pytest_temp_root(), *extra])


def dead_test_texts(
    out_dir: Path, dead: DeadTest, tail: int = 256 * 1024, *, extra_roots: Iterable[str | os.PathLike[str] | None] = ()
) -> dict[str, str]:
    """Evidence for a dead test: a statement of what the journal shows, the output files its commands
    wrote, and the stack dump its process left (when the hang watchdog or pytest-timeout armed one).

    The journal names those files, and a journal can be crafted: a file is read only when it resolves
    (symlinks followed) inside ``evidence_roots`` and is a regular file; any other is skipped with a note
    in ``journal.txt``, so ``/proc/self/environ`` or ``~/.aws/credentials`` never become evidence."""
    roots = evidence_roots(out_dir, extra_roots)
    how = "the session ended, so a pytest-xdist worker died" if dead.session_ended else "the whole pytest session died"
    texts = {
        "journal.txt": (
            f"faildiag: process {dead.pid}{' (' + dead.worker + ')' if dead.worker else ''} died while running "
            f"{dead.nodeid}: the test started and never reported ({how}); killed by a signal (SIGKILL, the OOM "
            "killer, a CI cancel), os._exit, or a native crash\n"
        )
    }
    for p in dead.artifacts[:MAX_ARTIFACTS]:
        try:
            text = _read_evidence(Path(p), roots, tail)
        except OSError as exc:
            texts["journal.txt"] += f"faildiag: journaled file not read: {exc}\n"
            continue
        if text:
            texts[Path(p).name] = text
    sf = stacks_file(out_dir, dead.pid)
    try:
        if sf.stat().st_mtime >= dead.started - 1 and sf.stat().st_size:
            texts["hang-stacks.txt"] = annotate_main_thread(_read_evidence(sf, roots, tail), dead.main_thread)
            if dead.deadline is not None:
                texts["journal.txt"] += (
                    f"faildiag: hang detected: {dead.nodeid} ran into its pytest-timeout deadline of {dead.deadline:g}s; "
                    "the stacks were dumped just before it and the process died right after (pytest-timeout's "
                    "thread method ends the process)\n"
                )
    except OSError:
        pass
    return texts


def _read_evidence(path: Path, roots: list[Path], tail: int) -> str:
    """The last ``tail`` bytes of a journaled file; ReadRefused outside ``roots`` or for a special file."""
    check_regular(path)  # the more telling note first: "a FIFO" rather than "outside"
    return read_tail(read_allowed(path, roots), tail).decode("utf-8", errors="replace")


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
