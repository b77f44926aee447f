"""Atomic file writes, shared by every writer of the project (snapshots, locks, session index, run
records, retort captures, fix backups).

Why one place: "a reader never sees half a file" is a promise of the contract; it holds only if every
writer does temp file + fsync + rename in the same folder, and a single helper keeps it that way.
Standard library only, so the pytest plugin can import it without pulling in the engine.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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

import errno  # noqa: E402 - kept with the helpers that use it (this section is self-contained)
import shutil  # noqa: E402
import stat  # noqa: E402
from pathlib import PurePath  # noqa: E402
from typing import IO, Any  # noqa: E402

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


def open_nofollow_for_write(path: str | os.PathLike[str], append: bool = False, *, mode: int = PRIVATE_FILE_MODE,
                            readable: bool = False) -> int:
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


def safe_atomic_write(root: str | os.PathLike[str], rel: str | os.PathLike[str], data: str | bytes, *,
                      mode: int | None = None) -> Path:
    """``atomic_write`` of ``root / rel`` with every folder from the root down checked (``safe_mkdir``).

    The temp file is created by ``mkstemp`` (``O_EXCL | O_NOFOLLOW``) in the checked folder and renamed
    over the target: a symlink at the target's name is replaced, never followed. Raises ValueError when
    ``rel`` leaves the root, OSError (``OutputFolderRefused`` included) when it cannot be written."""
    parts = _rel_parts(rel)
    if not parts:
        raise ValueError(f"{rel}: names no file")
    folder = safe_mkdir(root, PurePath(*parts[:-1])) if len(parts) > 1 else ensure_output_root(root)
    return atomic_write(folder / parts[-1], data, mode=mode)
