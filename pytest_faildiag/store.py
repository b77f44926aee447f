"""The output folder: the one module that knows its files, how they are read back and how failures group.

Why one place: the snapshot (``report.json``), the session index (``session.json``), the journal and the
last-green records are written by the plugin, the run wrapper and the engine, and read back by the terminal
summary, the CI reporters, ``faildiag report``, ``recover`` and fix mode. When each reader parsed them its
own way they drifted apart (the terminal counted one cause where the HTML report counted two). Here:

* the file names, defined once;
* reads: through ``fsio``'s bounded readers (regular files only, size, value-count and depth caps); JSON
  that is malformed, too big or too deep reads as missing (``None``); snapshot folders named by a session
  stay inside it (``snapshot_dir``);
* writes: through ``fsio``'s no-follow helpers (``safe_atomic_write``, ``open_nofollow_for_write``), so a
  planted symlink is replaced, never followed;
* ``Diagnosis.from_dict`` (``load_diagnosis``) as the way back from a ``report.json``;
* ``cause_key`` / ``group_by_cause``: the one grouping of failures by cause, used by every view.

Standard library, ``fsio``, ``model`` and ``redact`` only: the pytest plugin imports it when everything
passed, without the engine.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .fsio import MAX_JSON_BYTES, ensure_output_root, load_json, open_nofollow_for_write, safe_atomic_write

if TYPE_CHECKING:  # imported where used: a passing pytest session writes its index, never a diagnosis
    from .model import Diagnosis

REPORT = "report.json"
REPORT_MD = "report.md"
SESSION = "session.json"
SESSION_SCHEMA = "faildiag.session/1"
TEST_FILE = "test.json"  # the plugin's note in each snapshot: which test (nodeid, when, file, line, worker)
RUN_FILE = "run.json"  # what ``faildiag run`` saw of the process
WATCHDOG_FILE = "watchdog.txt"  # a hung run: what the watchdog saw and that faildiag itself stopped the run
FAILURE_LOCK = "artifacts/failure.lock.json"
JOURNAL = "journal.jsonl"
PREVIOUS_JOURNAL = "journal.prev.jsonl"
LAST_GREEN_LOCK = "last-green.lock.json"  # the environment lock of the last passing run
LAST_GREEN_GIT = "last-green.git.json"  # the git revision of the last passing session

MAX_SESSION_ENTRIES = 5000

T = TypeVar("T")


# ============================================================================================ reads


def read_json(path: str | os.PathLike[str], *, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file of the output folder, parsed within ``fsio``'s bounds. Raises OSError (``fsio.ReadRefused``)
    when it is missing, not a regular file (a FIFO would block, a device never ends) or larger than
    ``limit``; ValueError when it is not JSON, holds too many values or nests too deep."""
    return load_json(path, limit=limit)


def read_json_or_none(path: str | os.PathLike[str]) -> Any:
    """``read_json``, with every problem read as "not there" (None): a reader degrades, never crashes."""
    try:
        return read_json(path)
    except (OSError, ValueError):
        return None


def read_report(snapshot: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A snapshot's ``report.json`` as written (a JSON object), or None."""
    data = read_json_or_none(Path(snapshot) / REPORT)
    return data if isinstance(data, dict) else None


def load_diagnosis(snapshot: str | os.PathLike[str]) -> Diagnosis | None:
    """A snapshot's diagnosis, rebuilt through ``Diagnosis.from_dict``; None when there is no report."""
    from .model import Diagnosis

    data = read_report(snapshot)
    return Diagnosis.from_dict(data) if data is not None else None


def read_session(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``session.json`` when it is a JSON object, else None (missing, malformed, too big)."""
    data = read_json_or_none(Path(root) / SESSION)
    return data if isinstance(data, dict) else None


def session_entries(session: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The failed tests of a session index, then those a killed previous session was running
    (``recovered``); only objects, at most ``MAX_SESSION_ENTRIES``."""
    if not isinstance(session, Mapping):
        return []
    out: list[dict[str, Any]] = []
    for key in ("tests", "recovered"):
        items = session.get(key)
        if isinstance(items, list):
            out += [t for t in items if isinstance(t, dict)]
    return out[:MAX_SESSION_ENTRIES]


def snapshot_dir(root: str | os.PathLike[str], name: Any) -> Path | None:
    """The snapshot folder a session entry names, when it is one inside ``root``: a name that is not a
    plain relative path (absolute, ``..``) or a folder that resolves outside the session (a symlink to
    elsewhere) is not followed."""
    if not isinstance(name, str) or not name or os.path.isabs(name) or ".." in Path(name).parts:
        return None
    candidate = Path(root) / name
    try:
        if not candidate.is_dir() or not candidate.resolve().is_relative_to(Path(root).resolve()):
            return None
    except (OSError, RuntimeError, ValueError):
        return None
    return candidate


def entry_snapshot(root: str | os.PathLike[str], entry: Mapping[str, Any]) -> Path | None:
    """The snapshot folder of one session entry (``snapshot``, else ``slug``), see ``snapshot_dir``."""
    return snapshot_dir(root, entry.get("snapshot") or entry.get("slug"))


def read_last_green(out: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The environment lock of the last passing run kept in ``out``, or None when there is none or it is not
    a lock (a missing baseline is no evidence, not an error)."""
    data = read_json_or_none(Path(out) / LAST_GREEN_LOCK)
    if not isinstance(data, dict):
        return None
    schema = data.get("schema")
    if schema is not None and not str(schema).startswith("faildiag.lock/"):
        return None
    return data if schema is not None or "packages" in data else None


# ============================================================================================ writes

LOCK_POLL_S = 0.05  # filelock's default poll interval: a writer waiting for another is not slower than before
_NO_FLOCK = {errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOLCK, errno.EINVAL}  # file systems without flock (some NFS)


@contextmanager
def folder_lock(path: str | os.PathLike[str], timeout: float) -> Iterator[bool]:
    """Hold the exclusive lock on ``path`` (a lock file inside the output folder) for the block; yields True,
    or False when it was not had within ``timeout`` seconds (the caller writes anyway: atomic renames keep
    every file whole). The lock file is opened without following a symlink.

    Why not ``filelock`` everywhere: importing it (4.x: logging, secrets, inspect, socket...) cost a fresh
    ``faildiag diagnose`` of a small log about a tenth of its instructions, and where ``fcntl`` is present
    it takes the very same ``flock`` as here, so writers of either kind exclude each other. ``filelock`` is
    still what locks where there is no ``flock`` (Windows, a file system that refuses it)."""
    try:
        import fcntl
    except ImportError:  # Windows
        fcntl = None  # type: ignore[assignment]
    fd = -1
    if fcntl is not None:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o644)
    try:
        held = _flock(fcntl, fd, timeout) if fd >= 0 else None
        if held is None:  # no flock here: the portable lock
            with _portable_lock(path, timeout) as portable:
                yield portable
            return
        yield held
    finally:
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases its flock


def _flock(fcntl: Any, fd: int, timeout: float) -> bool | None:
    """Take ``flock(LOCK_EX)`` on ``fd``, polling until ``timeout``: True when held, False when another
    process held it all along, None when this file system has no flock."""
    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(LOCK_POLL_S)
        except OSError as exc:
            if exc.errno in _NO_FLOCK:
                return None
            raise


@contextmanager
def _portable_lock(path: str | os.PathLike[str], timeout: float) -> Iterator[bool]:
    from filelock import FileLock, Timeout  # only where flock is missing: see folder_lock

    lock = FileLock(os.fspath(path), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


def dump_json(obj: Any) -> str:
    """How every JSON file of the output folder is laid out."""
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def write_json(out: str | os.PathLike[str], rel: str, obj: Any) -> Path:
    """``out/rel`` replaced atomically, never through a symlink (``fsio.safe_atomic_write``)."""
    return safe_atomic_write(out, rel, dump_json(obj))


def write_report(snapshot: str | os.PathLike[str], report: dict[str, Any]) -> Path:
    """A snapshot's ``report.json`` (already redacted by the caller): written last, its presence means the
    snapshot is whole."""
    return write_json(snapshot, REPORT, report)


def write_session(
    out: str | os.PathLike[str],
    entries: list[dict[str, Any]],
    recovered: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> Path:
    """``session.json``: the failed tests, their grouping by cause, and the tests a killed previous session
    was running. Redacted here: test ids and file names can hold tokens."""
    from .redact import redact_obj

    index: dict[str, Any] = {
        "tests": [_public(e) for e in entries],
        "groups": group_entries(entries),
        **fields,
    }
    if recovered:
        index["recovered"] = [_public(e) for e in recovered]
    # the schema name is ours, not the run's: left out of redaction, a passing session's empty index costs
    # no redaction pattern at all (its name holds the trigger word "session")
    return write_json(out, SESSION, {"schema": SESSION_SCHEMA, **redact_obj(index)})


def write_last_green(out: str | os.PathLike[str], lock_json: str) -> Path:
    """Keep the (redacted, serialised) lock of a passing run as the baseline of the next failure."""
    return safe_atomic_write(out, LAST_GREEN_LOCK, lock_json)


def open_journal(out: str | os.PathLike[str]) -> int:
    """An ``O_APPEND`` descriptor on ``out/journal.jsonl`` (the output folder checked, created private when
    missing): an existing journal of ours is appended to, anything else there (a symlink, a FIFO, a hard
    link) is replaced, never opened. Raises OSError."""
    path = ensure_output_root(out) / JOURNAL
    # pytest-xdist workers open the same journal at once: O_CREAT without O_EXCL lets them share it (the
    # replace-on-exists path below would have one unlink another's fresh file); O_NOFOLLOW refuses a link,
    # O_NONBLOCK a FIFO, and the fstat anything that is not a plain single-link file of ours
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o600)
    except OSError:
        return open_nofollow_for_write(path, append=True)
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_nlink == 1:
        os.set_blocking(fd, True)
        return fd
    os.close(fd)
    return open_nofollow_for_write(path, append=True)


def _public(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if not str(k).startswith("_")}


# ============================================================================================ grouping

_DIGITS = re.compile(r"\d+")


def cause_key(
    cause_id: str | None, error: str | None = None, type_: str | None = None, summary: str | None = None
) -> str:
    """Failures with the same key share a cause.

    A cause a rule recognised is its id. A cause no rule recognised (the engine's ``unknown.*`` fallback, a
    differential hypothesis) records the error it explains: its id plus that error with numbers blanked, so
    that ``ValueError: label 3``/``label 11`` group while two unrelated errors are two causes. No cause at
    all: the failure's type and summary."""
    if cause_id and error:
        return f"{cause_id}|{_DIGITS.sub('#', ' '.join(error.split()))}"
    return cause_id or f"{type_ or 'unknown'}:{summary or ''}"


def entry_key(entry: Mapping[str, Any]) -> str:
    """``cause_key`` of one session entry."""

    def text(k: str) -> str | None:
        v = entry.get(k)
        return v if isinstance(v, str) and v else None

    return cause_key(text("cause_id"), text("error"), text("type"), text("summary"))


def group_by_cause(
    items: Iterable[T], key: Callable[[T], str], confidence: Callable[[T], float] = lambda _: 0.0
) -> list[list[T]]:
    """Items grouped by ``key``, ranked: most items first, then higher confidence, then first seen.

    Why this order: the cause that broke most tests is usually the one to fix first (a broken fixture, an
    OOM in a shared model), and GitHub shows only the first ten error annotations of a step."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    order = {k: i for i, k in enumerate(groups)}
    best = {k: max((confidence(x) for x in g), default=0.0) for k, g in groups.items()}
    return [groups[k] for k in sorted(groups, key=lambda k: (-len(groups[k]), -best[k], order[k]))]


def _entry_confidence(entry: Mapping[str, Any]) -> float:
    v = entry.get("confidence")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def group_entries(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Session entries grouped by cause (``group_by_cause``), as ``session.json`` keeps them."""
    out = []
    for g in group_by_cause(list(entries), entry_key, _entry_confidence):
        head = g[0]
        out.append(
            {
                "key": entry_key(head),
                "cause_id": head.get("cause_id"),
                "category": head.get("category"),
                "type": head.get("type"),
                "summary": head.get("summary"),
                "count": len(g),
                "tests": [e.get("nodeid") for e in g],
            }
        )
    return out
