"""Where fix mode may read and write: regular files inside the project folder, and its own private folder
in the snapshot. Nothing else.

Why: the files fix mode edits are named by the snapshot (traceback frames, the command line), and a
snapshot can come from anywhere. A frame naming ``/home/me/.bashrc``, ``../../outside.py`` or
``~/.profile``, a symbolic link inside the project pointing outside it, or a FIFO named ``model.py`` must
not become an edit (or a read that blocks forever). So every candidate is resolved (symbolic links
followed, ``..`` collapsed) and kept only when the result is a regular file under the resolved project
folder, outside hidden, cache and environment folders. The check runs when the proposal is made and again
just before the file is written. Fix mode's own files (backups, ``fix.env``, the rerun log, its lock) go
to ``SNAPSHOT/fix/``, which must be a real folder owned by the user, never a symbolic link.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 4 * 1024 * 1024
NOT_PROJECT_DIRS = {"__pycache__", "node_modules", "site-packages", "dist-packages", "faildiag-out"}
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class PathRefused(ValueError):
    """A path fix mode will not read or write; the message is one line for the user."""


def _home() -> Path | None:
    try:
        return Path(os.path.realpath(Path.home()))
    except (RuntimeError, KeyError):
        return None


def check_root(root: Path, *, allow_home: bool = False) -> Path:
    """The resolved project folder. Raises PathRefused for the file system root, and for the home folder
    itself unless ``allow_home`` (the user chose that folder, or this machine's faildiag recorded it): a
    snapshot from elsewhere never makes the whole home (``.bashrc``, ``bin/``) the project."""
    resolved = Path(os.path.realpath(root))
    if resolved == Path(resolved.anchor) or (resolved == _home() and not allow_home):
        raise PathRefused(
            f"the run's folder {resolved} is not a project folder: fix mode edits nothing there "
            "(pass --cwd with the project's folder)"
        )
    return resolved


def project_file(root: Path, name: str | os.PathLike[str], *, allow_home: bool = False) -> Path:
    """The resolved path of ``name`` (relative names are taken from ``root``) when it is a regular file
    inside the resolved ``root``, outside hidden, cache and environment folders. Raises PathRefused
    with the reason otherwise."""
    text = str(name)
    base = check_root(root, allow_home=allow_home)
    if text.startswith("~"):
        raise PathRefused(f"{text}: a home-folder path; fix mode edits only files inside the project {base}")
    candidate = Path(text) if os.path.isabs(text) else base / text
    resolved = Path(os.path.realpath(candidate))
    if not resolved.is_relative_to(base) or resolved == base:
        raise PathRefused(f"{text}: resolves to {resolved}, outside the project {base}")
    parts = resolved.relative_to(base).parts
    hidden = next((p for p in parts if p.startswith(".") or p in NOT_PROJECT_DIRS), None)
    if hidden is None:  # a virtual environment under any name (venv/, env/, py311/) holds pyvenv.cfg
        hidden = next(
            (p for i, p in enumerate(parts[:-1]) if (base.joinpath(*parts[: i + 1]) / "pyvenv.cfg").exists()), None
        )
    if hidden is not None:
        raise PathRefused(
            f"{text}: inside {hidden}/ (a hidden, cache or environment folder); fix mode edits only "
            "the project's own files"
        )
    try:
        st = os.stat(resolved, follow_symlinks=False)
    except OSError as exc:
        raise PathRefused(f"{text}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"{text}: not a regular file")
    return resolved


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``limit`` bytes, else None. Opened
    non-blocking and checked on the open descriptor, so a FIFO or device swapped in never blocks a read."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_tail(path: Path, limit: int) -> bytes | None:
    """The last ``limit`` bytes of ``path`` when it is a regular file (a log), else None; never blocks."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > limit:
            os.lseek(fd, st.st_size - limit, os.SEEK_SET)
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def private_dir(path: Path) -> Path:
    """``path`` as a real folder owned by this user (created 0700 when missing). Raises PathRefused for a
    symbolic link, a non-folder or someone else's folder: fix mode never writes through one."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise PathRefused(f"{path}: cannot create ({exc.strerror or exc})") from None
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PathRefused(f"{path}: not a plain folder (a symbolic link?); fix mode does not write through it")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise PathRefused(f"{path}: owned by another user; fix mode does not write into it")
    return path


def not_a_link(path: Path) -> Path:
    """``path`` unless it is a symbolic link (a lock or log file planted to redirect a write)."""
    if os.path.islink(path):
        raise PathRefused(f"{path}: a symbolic link; fix mode does not write through it")
    return path
