"""Atomic file writes, shared by every writer of the project (snapshots, locks, session index, run
records, retort captures, fix backups).

Why one place: "a reader never sees half a file" is a promise of the contract; it holds only if every
writer does temp file + fsync + rename in the same folder, and a single helper keeps it that way.
Standard library only, so the pytest plugin can import it without pulling in the engine.

Reads live here too, for the same reason: every input faildiag reads was left behind by a failed run and may
be crafted (a symlink to ``/dev/zero`` or ``~/.aws/credentials``, a FIFO nobody writes, JSON nested 900 deep),
so "regular files only, inside the allowed folders, size-capped, depth-capped" holds only if every reader
goes through the same few helpers.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePath
from typing import IO, Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no FIFOs to guard against either
    fcntl = None  # type: ignore[assignment]

# ====================================================================== reads: bounded, regular files only
# Writers are further down. Every reader below refuses anything that is not a regular file once symlinks are
# resolved (a device, a FIFO, a socket, a folder), and never holds more than its cap in memory.

MAX_JSON_BYTES = 16 * 1024 * 1024  # report.json, session.json, locks, error.json: far below this in practice
MAX_JSON_NODES = 1_000_000  # ~100 bytes each once parsed: the real bound on the memory a JSON file costs
MAX_JSON_DEPTH = 64  # what faildiag writes or reads nests under 10 levels; recursion breaks near 1000
MAX_TEXT_BYTES = 16 * 1024 * 1024  # a whole small text file (a source file, a markdown note)
MAX_HOLES = 1024 * 1024  # of a file read whole: written files have none; more is a crafted sparse file

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


class ReadRefused(OSError):
    """A file faildiag will not read (special file, too large, outside the allowed folders, too deep).

    An OSError, so every reader that already skips unreadable files skips these too; ``str()`` is the one
    line a person reads in a note: ``<path>: <reason>``."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(errno.EPERM, reason)
        self.filename = os.fspath(path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _kind(mode: int) -> str | None:
    return next((name for test, name in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "not a regular file")


def check_regular(path: str | os.PathLike[str]) -> os.stat_result:
    """``os.stat`` (symlinks followed) that raises ReadRefused unless the target is a regular file.

    Why stat before open: opening a device can act (a tape rewinds, a serial line hangs up) and opening a
    FIFO blocks until someone writes; a path that fails here is never opened."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ReadRefused(path, "symbolic link loop; skipped") from None
        raise
    kind = _kind(st.st_mode)
    if kind:
        raise ReadRefused(path, f"{kind}, not a regular file; skipped")
    return st


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open a regular file for binary reading, refusing special files (ReadRefused).

    Opened with O_NONBLOCK and checked again on the descriptor, so a file swapped for a FIFO between the
    check and the open cannot block; the flag is cleared before the file is handed out."""
    before = check_regular(path)
    nonblock = getattr(os, "O_NONBLOCK", 0)
    flags = os.O_RDONLY | nonblock | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if _kind(st.st_mode) or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise ReadRefused(path, "changed while it was being opened; skipped")
        if nonblock and fcntl is not None:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~nonblock)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _size(n: int) -> str:
    return f"{n // (1 << 20)} MiB" if n >= 1 << 20 else f"{n // 1024} KiB"


def read_capped(path: str | os.PathLike[str], limit: int = MAX_TEXT_BYTES) -> bytes:
    """The whole file, or ReadRefused when it is larger than ``limit`` bytes (nothing is half-read)."""
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size > limit:
            raise ReadRefused(path, f"larger than {_size(limit)}; skipped")
        if hole_bytes(f, MAX_HOLES) > MAX_HOLES:
            raise ReadRefused(path, "a sparse file (mostly holes), not data; skipped")
        data = f.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise ReadRefused(path, f"larger than {_size(limit)}; skipped")
    return data


def read_head(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most the first ``limit`` bytes."""
    with open_regular(path) as f:
        return f.read(limit)


def read_tail(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most the last ``limit`` bytes: logs are allowed to be huge, their end is what explains a failure."""
    with open_regular(path) as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - limit))
        return f.read(limit)


def hole_bytes(f: IO[bytes], stop: int) -> int:
    """Bytes of holes in an open file (never written, read back as NULs: ``truncate -s 1T``), counted until
    they pass ``stop``; 0 where the file system cannot tell. A sparse "log" costs no disk and would cost a
    reader its whole apparent size in time."""
    seek_hole, seek_data = getattr(os, "SEEK_HOLE", None), getattr(os, "SEEK_DATA", None)
    if seek_hole is None or seek_data is None:
        return 0
    fd, holes, pos = f.fileno(), 0, 0
    size = os.fstat(fd).st_size
    try:
        for _ in range(4096):  # bounded: a file of a million tiny holes is counted in part
            hole = os.lseek(fd, pos, seek_hole)
            if hole >= size:
                break
            try:
                pos = os.lseek(fd, hole, seek_data)
            except OSError:  # ENXIO: the hole runs to the end
                pos = size
            holes += pos - hole
            if holes > stop or pos >= size:
                break
    except OSError:
        pass
    finally:
        f.seek(0)
    return holes


def iter_lines(path: str | os.PathLike[str], *, max_line: int, max_bytes: int | None = None) -> Iterator[bytes]:
    """The lines of a file, streamed; a line longer than ``max_line`` is skipped without being buffered,
    and reading stops after ``max_bytes`` (memory stays flat whatever the file holds)."""
    read = 0
    with open_regular(path) as f:
        while max_bytes is None or read < max_bytes:
            raw = f.readline(max_line + 1)
            if not raw:
                return
            read += len(raw)
            if len(raw) > max_line and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # drain the rest of the over-long line
                    raw = f.readline(1 << 20)
                    read += len(raw)
                continue
            yield raw


def loads_json(data: str | bytes, *, max_nodes: int = MAX_JSON_NODES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with bounds: ValueError (one line) for more than ``max_nodes`` values or nesting
    deeper than ``max_depth``, instead of gigabytes of objects or a RecursionError later on.

    The node count is an upper bound taken before parsing (commas and brackets, in C): parsing is what
    costs the memory, so it must be refused before, not after."""
    if not isinstance(data, str | bytes | bytearray):
        raise ValueError(f"not JSON text ({type(data).__name__})")
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    if text.count(",") + text.count("[") + text.count("{") > max_nodes:
        raise ValueError(f"JSON with more than {max_nodes} values; not read")
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels; not read") from None
    if json_depth(value, max_depth) > max_depth:
        raise ValueError(f"JSON nested deeper than {max_depth} levels; not read")
    return value


def json_depth(value: Any, stop: int) -> int:
    """Nesting depth of parsed JSON, walked without recursion; stops counting past ``stop``."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if not isinstance(node, dict | list):
            continue
        deepest = max(deepest, depth)
        if deepest > stop:
            return deepest
        todo.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def load_json(path: str | os.PathLike[str], *, limit: int = MAX_JSON_BYTES) -> Any:
    """Read and parse a JSON file under every bound above. Raises ReadRefused/OSError for the file,
    ValueError for its content (malformed, too many values, too deep)."""
    return loads_json(read_capped(path, limit))


def project_root(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The project a command runs in: the nearest folder at or above ``start`` (default: the current folder)
    holding a project marker, else ``start``. None when that is ``/`` or the home folder itself, which would
    make every dotfile "inside the project"."""
    here = Path(start or os.getcwd()).resolve()
    root = next((d for d in (here, *here.parents) if any((d / m).exists() for m in _PROJECT_MARKERS)), here)
    if root == Path(root.anchor) or root == Path.home().resolve():
        return None
    return root


_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "pytest.ini", ".git")


def read_roots(folders: Iterable[str | os.PathLike[str] | None]) -> list[Path]:
    """Folders reads may reach into, resolved (symlinks followed) and de-duplicated; missing ones dropped."""
    out: list[Path] = []
    for f in folders:
        if f is None:
            continue
        try:
            p = Path(f).resolve()
        except (OSError, RuntimeError):
            continue
        if p.is_dir() and p not in out:
            out.append(p)
    return out


def within(path: str | os.PathLike[str], roots: Iterable[Path]) -> Path | None:
    """``path`` with every symlink resolved when that lies inside one of ``roots`` (already resolved),
    else None. Resolve first, then compare: a link inside a root that points out of it is outside."""
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop on older Pythons
        return None
    return real if any(real == r or real.is_relative_to(r) for r in roots) else None


def read_allowed(path: str | os.PathLike[str], roots: Iterable[Path]) -> Path:
    """``within`` that raises ReadRefused with the note a person reads when the file lies outside."""
    real = within(path, roots)
    if real is None:
        raise ReadRefused(
            path,
            "outside the folders faildiag may read (the named folders, the output folder and the project); skipped",
        )
    return real


# ====================================================================== writes


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> Path:
    """Replace ``path`` with ``data`` atomically (parents created; ``mode`` applied before the rename).
    Raises OSError when the folder is not writable; the temp file never stays behind."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


# --------------------------------------------------------------------------------------------------
# writes that never go through a symlink
# --------------------------------------------------------------------------------------------------
#
# Why: faildiag writes into folders that outlive a run and that others can prepare in advance (a
# checked-out repository holding a ``faildiag-out`` symlink, a shared scratch folder, a previous run's
# output). ``open(path, "w")`` follows a planted ``logs/stdout.log -> ~/.bashrc`` and truncates the target;
# a planted ``artifacts -> /elsewhere`` folder link sends every file below it elsewhere. So every writer of
# the output tree goes through the helpers below:
#
# * the output root is checked first (``check_output_root``): a real folder, not a symlink, owned by us,
#   not writable by other users; otherwise ``OutputFolderRefused``;
# * every folder below it is checked component by component (``safe_mkdir``): a missing one is created
#   private (0o700), a symlink in its place is removed and replaced by a fresh folder, one owned by someone
#   else or writable by others is refused;
# * files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (``open_nofollow_for_write``): an existing entry
#   (old file, symlink, hard link, FIFO) is unlinked and a new inode created, never opened.
#
# Paths are still used after the check (the child, faulthandler and tempfile need paths): that is sound
# because no other user can write into a checked folder, so nobody else can swap a component between the
# check and the use. Folders above the root are the user's choice and are not checked.

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
_REPLACE_TRIES = 5


class OutputFolderRefused(PermissionError):
    """faildiag will not write into this folder; ``str(exc)`` is one line that says why.

    A PermissionError (so an OSError): callers that already turn a write failure into a warning or a
    one-line error handle it without a new ``except`` clause."""


def _private_group(gid: int) -> bool:
    """Is ``gid`` the user's own private group (Debian/Ubuntu "user private groups": the group is named
    like the user and has no other member)? Under such a scheme the default umask is 002 and every folder
    the user makes is group-writable; refusing those would refuse every folder such users have."""
    if gid != os.getegid():
        return False
    try:
        import grp
        import pwd

        user = pwd.getpwuid(os.geteuid()).pw_name
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return group.gr_name == user and set(group.gr_mem) <= {user}


def _refusal(st: os.stat_result) -> str | None:
    """Why a folder with this ``lstat`` must not be written into, or None when it may."""
    if st.st_uid != os.geteuid():
        return f"is owned by another user (uid {st.st_uid})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & stat.S_ISVTX:  # sticky (/tmp): others may add names but not remove or rename ours
        return None
    if mode & stat.S_IWOTH or (mode & stat.S_IWGRP and not _private_group(st.st_gid)):
        return f"is writable by other users (mode {mode:04o})"
    return None


def check_output_root(path: str | os.PathLike[str]) -> None:
    """Refuse an output folder that others control: a symlink (to anywhere), a folder owned by another
    user, or one writable by other users (group or world, unless sticky). Raises ``OutputFolderRefused``
    with a one-line reason. A missing folder passes (``ensure_output_root`` creates it private), and so
    does a path that is no folder at all: that is not a question of trust, and creating or writing into
    it fails with the usual OSError."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(p)
        raise OutputFolderRefused(f"output folder {p} is a symbolic link (to {target}): name the real folder instead")
    if not stat.S_ISDIR(st.st_mode):
        return
    reason = _refusal(st)
    if reason:
        raise OutputFolderRefused(f"output folder {p} {reason}: faildiag writes only into folders no one else controls")


def ensure_output_root(path: str | os.PathLike[str]) -> Path:
    """Check the output root (see ``check_output_root``) and create it private (0o700) when missing; its
    missing parents are created as ``mkdir -p`` would. Returns the path as given; raises OSError
    (``NotADirectoryError`` when something else is there)."""
    p = Path(path)
    check_output_root(p)
    if os.path.lexists(p) and not p.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(p))
    if not os.path.lexists(p):
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(p, PRIVATE_DIR_MODE)
        except FileExistsError:
            pass
        check_output_root(p)  # whatever won a race to create it must pass too
    return p


def _rel_parts(rel: str | os.PathLike[str]) -> tuple[str, ...]:
    """The components of a path relative to the output root. Raises ValueError for an absolute path or
    a ``..``: such a name would leave the output folder."""
    pure = PurePath(rel)
    if pure.is_absolute() or ".." in pure.parts:
        raise ValueError(f"{rel}: not a path inside the output folder")
    return tuple(part for part in pure.parts if part not in ("", "."))


def safe_mkdir(root: str | os.PathLike[str], rel: str | os.PathLike[str] = "", *, fresh: bool = False) -> Path:
    """``root / rel`` as a folder that is safe to write into, checked from the root down.

    Each component: missing → created 0o700; a symlink in its place is removed and a fresh folder made;
    another kind of file there → ``NotADirectoryError``; an existing folder must be ours and not writable
    by others (``OutputFolderRefused``). With ``fresh`` the last folder is emptied first (removed with
    ``shutil.rmtree``, which never follows links, and re-created): for folders a child process writes into
    by name (stack dumps, error files), so nothing planted or left from an earlier run is there. Returns
    the folder's path."""
    current = ensure_output_root(root)
    parts = _rel_parts(rel)
    for i, part in enumerate(parts):
        current = current / part
        last = i == len(parts) - 1
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            os.unlink(current)  # a planted link: never follow it, put a real folder in its place
            st = None
        elif st is not None and not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(current))
        elif st is not None:
            reason = _refusal(st)
            if reason:
                raise OutputFolderRefused(f"{current} {reason}")
            if fresh and last:
                shutil.rmtree(current)
                st = None
        if st is None:
            os.mkdir(current, PRIVATE_DIR_MODE)  # FileExistsError: someone raced us; better fail than trust it
    return current


def open_nofollow_for_write(
    path: str | os.PathLike[str], append: bool = False, *, mode: int = PRIVATE_FILE_MODE, readable: bool = False
) -> int:
    """Open ``path`` for writing without ever following a symlink; returns an OS file descriptor.

    Not ``append``: whatever is at ``path`` (old file, symlink, hard link, FIFO) is unlinked and a new file
    created with ``O_CREAT | O_EXCL | O_NOFOLLOW``; the old inode is never opened, so a planted link cannot
    redirect or truncate anything. ``append``: an existing regular file of ours with one link is reopened
    with ``O_APPEND | O_NOFOLLOW``; anything else there is replaced as above. The folder must already have
    been checked (``safe_mkdir``): ``O_NOFOLLOW`` only guards the last component. ``readable`` opens it
    read-write. Raises OSError."""
    p = os.fspath(path)
    flags = (os.O_RDWR if readable else os.O_WRONLY) | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(_REPLACE_TRIES):
        if append:
            fd = _reopen_for_append(p, flags)
            if fd is not None:
                return fd
        try:
            return os.open(p, flags | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            _remove_file_entry(p)
    raise FileExistsError(errno.EEXIST, "kept being re-created while faildiag replaced it", p)


def _remove_file_entry(path: str) -> None:
    st = os.lstat(path) if os.path.lexists(path) else None
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "a folder is where faildiag writes a file", path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _reopen_for_append(path: str, flags: int) -> int | None:
    """An fd appending to ``path`` when it is a plain file of ours with a single link; else None (after
    removing what is there, so the caller creates a fresh file)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):  # a symlink, FIFO or device: never opened
        _remove_file_entry(path)
        return None
    try:
        fd = os.open(path, flags | os.O_APPEND | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno != errno.ELOOP:  # swapped for a link since the lstat
            raise
        _remove_file_entry(path)
        return None
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_nlink == 1:
        os.set_blocking(fd, True)
        return fd
    os.close(fd)
    _remove_file_entry(path)
    return None


def open_output_file(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> IO[Any]:
    """``open()`` for a file in a checked output folder, through ``open_nofollow_for_write``: ``mode`` is
    one of ``w``/``a``/``w+`` with optional ``b``; other keywords go to ``os.fdopen`` (encoding, buffering)."""
    if mode.replace("b", "").replace("+", "") not in ("w", "a"):
        raise ValueError(f"open_output_file: {mode!r} is not a write mode")
    fd = open_nofollow_for_write(path, append="a" in mode, readable="+" in mode)
    try:
        return os.fdopen(fd, mode, **kwargs)  # type: ignore[call-overload]
    except BaseException:
        os.close(fd)
        raise


def safe_atomic_write(
    root: str | os.PathLike[str], rel: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None
) -> Path:
    """``atomic_write`` of ``root / rel`` with every folder from the root down checked (``safe_mkdir``).

    The temp file is created by ``mkstemp`` (``O_EXCL | O_NOFOLLOW``) in the checked folder and renamed
    over the target: a symlink at the target's name is replaced, never followed. Raises ValueError when
    ``rel`` leaves the root, OSError (``OutputFolderRefused`` included) when it cannot be written."""
    parts = _rel_parts(rel)
    if not parts:
        raise ValueError(f"{rel}: names no file")
    folder = safe_mkdir(root, PurePath(*parts[:-1])) if len(parts) > 1 else ensure_output_root(root)
    return atomic_write(folder / parts[-1], data, mode=mode)
