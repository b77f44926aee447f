"""Reading a session journal back (``journal.jsonl``, written by ``pytest_journal.Journal``): its events,
the tests a killed process left running, and their evidence. Used by the next session, by a pytest-xdist
controller whose worker crashed and by ``faildiag recover``; a session whose previous one ended cleanly
never imports it (its dataclasses cost a passing ``pytest --faildiag`` session more than its journal).
No pytest import here: ``faildiag recover`` reads journals without pytest.

A journal is input like any other and may be crafted: it is read streamed and bounded (its last
``MAX_JOURNAL_BYTES``, lines up to ``MAX_LINE``, at most ``MAX_DEAD`` dead tests), and the files it names are
read only when they resolve inside the output folder, the project or pytest's own temporary folders.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.oomkill import dmesg_oom_lines
from ..fsio import check_regular, open_regular, project_root, read_allowed, read_roots, read_tail
from .pytest_journal import MAX_LINE, annotate_main_thread, stacks_file

__all__ = ["DeadTest", "read_events", "dead_tests", "dead_test_texts", "evidence_roots", "last_session"]

MAX_JOURNAL_BYTES = 256 * 1024 * 1024  # ~2 million tests; only the end of a longer journal is read
MAX_DEAD = 64  # a killed session leaves one dead test per process: xdist workers, not thousands
MAX_ARTIFACTS = 32  # journaled output files read per dead test
MAX_PROCESSES = 4096
MAX_RESOLVED = 65536
_READ_LINE = 4 * MAX_LINE + 1  # the writer caps characters; UTF-8 takes up to 4 bytes each, plus the newline


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
    out_dir: Path,
    dead: DeadTest,
    tail: int = 256 * 1024,
    *,
    extra_roots: Iterable[str | os.PathLike[str] | None] = (),
    kernel_oom: Mapping[int, str] | None = None,
) -> dict[str, str]:
    """Evidence for a dead test: a statement of what the journal shows, the output files its commands
    wrote, and the stack dump its process left (when the hang watchdog or pytest-timeout armed one).

    The journal names those files, and a journal can be crafted: a file is read only when it resolves
    (symlinks followed) inside ``evidence_roots`` and is a regular file; any other is skipped with a note
    in ``journal.txt``, so ``/proc/self/environ`` or ``~/.aws/credentials`` never become evidence."""
    roots = evidence_roots(out_dir, extra_roots)
    how = "the session ended, so a pytest-xdist worker died" if dead.session_ended else "the whole pytest session died"
    # What ended the process is not known here (a signal from a timeout or a CI cancel, the OOM killer, os._exit,
    # a native crash), so the statement names none of them: a list of possible killers read as evidence made
    # every killed session an out-of-memory diagnosis. The kernel's own record names the OOM killer's victims.
    texts = {
        "journal.txt": (
            f"faildiag: process {dead.pid}{' (' + dead.worker + ')' if dead.worker else ''} died while running "
            f"{dead.nodeid}: the test started and never reported ({how}); what ended it left no record\n"
        )
    }
    # ``kernel_oom``: the kernel log's OOM-killer lines by pid, read once by a caller with several dead tests
    oom_line = (dmesg_oom_lines({dead.pid}) if kernel_oom is None else kernel_oom).get(dead.pid)
    if oom_line:
        texts["journal.txt"] += f"faildiag: the kernel log names this process: {oom_line}\n"
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
