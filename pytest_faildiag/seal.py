"""Which commands faildiag itself recorded on this machine: a keyed seal next to each snapshot's command.

Why: fix mode reruns a snapshot's ``profile.command`` through the shell to verify a fix. A snapshot is
just files; one copied from CI, unpacked from an archive or edited by hand can carry any command
(``python train.py; touch PWNED``). Nothing inside the snapshot can prove where it came from, so the proof
is a secret outside it: a random per-user key (``$XDG_STATE_HOME/faildiag/command-seal.key``, else
``~/.local/state/faildiag/``; folder 0700, file 0600, created once). When faildiag writes a snapshot it
stores ``HMAC-SHA256(key, [command, run folder, snapshot folder])`` in ``SNAPSHOT/.command-seal``. Fix mode
recomputes it: equal means "this user's faildiag wrote exactly this command for this folder and snapshot";
anything else (no key, no seal, another machine, the command or folder edited, the snapshot moved) means
the command is foreign and needs its own confirmation.

Failure behaviour: sealing never raises (a snapshot without a seal only costs a confirmation later);
a key folder or file owned by someone else, a symbolic link or readable by others is not used.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import tempfile
from pathlib import Path

from .fsio import atomic_write

SEAL_FILE = ".command-seal"
KEY_FILE = "command-seal.key"
_KEY_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def key_dir() -> Path | None:
    """The folder of the per-user key (XDG state folder), or None when there is no home to put it in."""
    base = os.environ.get("XDG_STATE_HOME")
    if base and os.path.isabs(base):
        return Path(base) / "faildiag"
    try:
        return Path.home() / ".local" / "state" / "faildiag"
    except (RuntimeError, KeyError):
        return None


def _owned_private(st: os.stat_result, mask: int) -> bool:
    uid = getattr(os, "getuid", lambda: st.st_uid)()
    return st.st_uid == uid and not (st.st_mode & mask)


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _owned_private(st, 0o077):
            return None
        data = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == _KEY_BYTES else None


def _key(create: bool) -> bytes | None:
    """The key; with ``create``, made on first use (temp file + link: a concurrent reader never sees half
    of it, and two writers racing keep the first)."""
    folder = key_dir()
    if folder is None:
        return None
    try:
        if create:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or not _owned_private(st, 0o022):
        return None
    path = folder / KEY_FILE
    key = _read_key(path)
    if key is not None or not create or os.path.lexists(path):
        return key
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".key-")
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError:
        return None
    return _read_key(path)


def _digest(key: bytes, command: str, cwd: str, snapshot: str | os.PathLike[str]) -> str:
    msg = json.dumps(["faildiag.command-seal/1", command, os.path.realpath(cwd), os.path.realpath(snapshot)])
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).hexdigest()


def write_seal(snapshot: str | os.PathLike[str], command: str | None, cwd: str | None) -> None:
    """Seal ``command`` (as written in the snapshot's report) for the folder it reruns in (``cwd``, else
    the writer's current folder). A snapshot without a command gets no seal. Never raises."""
    path = Path(snapshot) / SEAL_FILE
    try:
        if not isinstance(command, str) or not command.strip():
            if os.path.lexists(path):
                os.unlink(path)
            return
        key = _key(create=True)
        if key is None:
            return
        body = json.dumps(
            {"schema": "faildiag.command-seal/1", "hmac": _digest(key, command, cwd or os.getcwd(), snapshot)}
        )
        atomic_write(path, body + "\n", mode=0o600)
    except (OSError, ValueError):
        return


def check_seal(snapshot: str | os.PathLike[str], command: str, cwd: str | os.PathLike[str]) -> bool:
    """True when this user's faildiag sealed exactly ``command`` for ``cwd`` in ``snapshot``."""
    key = _key(create=False)
    if key is None:
        return False
    try:
        fd = os.open(Path(snapshot) / SEAL_FILE, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        data = json.loads(os.read(fd, 4096).decode("utf-8"))
    except (OSError, ValueError):
        return False
    finally:
        os.close(fd)
    mac = data.get("hmac") if isinstance(data, dict) else None
    return isinstance(mac, str) and hmac.compare_digest(mac, _digest(key, command, str(cwd), snapshot))
