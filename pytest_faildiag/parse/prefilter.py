"""Optional fast keyword prefilter: GNU/BSD ``grep`` as a subprocess.

Python's ``re`` tries every alternative of a large alternation at every position, which makes a
several-hundred-keyword pattern crawl at about 1 MB/s; grep compiles the same literals into a DFA and
runs at hundreds of MB/s. The prefilter only narrows the lines Python looks at: when grep is missing,
or fails, the caller scans the file itself and gets the same findings, slower.

grep holds a whole line in memory to match it, and a log can be one line of gigabytes (a sparse file, a
progress bar that never printed a newline): grep runs under a virtual-memory limit, so such a file makes
it fail ("memory exhausted") and the caller's bounded Python scan takes over.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from functools import lru_cache

from .logread import MAX_LINE

MAX_ARG_PATTERN = 100_000  # Linux refuses one argument over 128 KiB (MAX_ARG_STRLEN)
_ERE_SPECIAL = re.compile(r"([\\.\[\]()*+?{}|^$])")


GREP_MEMORY_KIB = 192 * 1024  # grep's own needs are ~10 MB; a line larger than this is scanned in Python
_LIMITED = 'ulimit -v {kib} 2>/dev/null; exec "$0" "$@"'


@lru_cache(maxsize=1)
def _grep() -> str | None:
    return shutil.which("grep")


@lru_cache(maxsize=1)
def _sh() -> str | None:
    return shutil.which("sh")


def available() -> bool:
    return _grep() is not None and os.environ.get("FAILDIAG_NO_GREP") != "1"


def ere_escape(literal: str) -> str:
    """Escape only ERE metacharacters (GNU grep warns about stray backslashes before other characters)."""
    return _ERE_SPECIAL.sub(r"\\\1", literal)


class GrepHits:
    """Iterator of (line number, byte offset, line bytes) for lines holding any keyword."""

    def __init__(self, proc: subprocess.Popen[bytes]):
        self.proc = proc
        self.failed = False
        self.last_line = 0

    def __iter__(self) -> Iterator[tuple[int, int, bytes]]:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                raw = out.readline(MAX_LINE)
                if not raw:
                    break
                if not raw.endswith(b"\n") and len(raw) >= MAX_LINE:
                    while True:  # drain an over-long line without keeping it
                        more = out.readline(1 << 20)
                        if not more or more.endswith(b"\n"):
                            break
                parts = raw.split(b":", 2)
                if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
                    continue
                self.last_line = int(parts[0])
                yield self.last_line, int(parts[1]), parts[2].rstrip(b"\n")
        finally:
            out.close()
            rc = self.proc.wait()
            self.failed = rc not in (0, 1)


def grep_lines(path: str | None, keywords: list[str], data: bytes | None = None) -> GrepHits | None:
    """Start grep over ``path`` (or ``data`` fed on stdin) for ``keywords`` (literals).
    None when grep cannot be started."""
    exe = _grep()
    if exe is None or not keywords:
        return None
    escaped = _escaped(tuple(keywords))
    pattern = "|".join(escaped)
    env = dict(os.environ, LC_ALL="C")
    argv = [exe, "-a", "-n", "-b", "-E", "-e", pattern, "--", path if path is not None else "-"]
    fds: tuple[int, ...] = ()
    if len(pattern) > MAX_ARG_PATTERN and os.path.isdir("/dev/fd"):  # beyond one argument's size limit
        read_end, write_end = os.pipe()  # (thousands of team cards): one pattern a line, through a pipe
        fds = (read_end,)
        argv[5:7] = ["-f", f"/dev/fd/{read_end}"]
    sh = _sh()
    if sh is not None:  # the limit through the shell: preexec_fn is unsafe in a process with threads
        argv = [sh, "-c", _LIMITED.format(kib=GREP_MEMORY_KIB), *argv]
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=fds,
                                stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL, env=env)
    except OSError:
        for fd in fds:
            os.close(fd)
            os.close(write_end)
        return None
    if fds:
        os.close(fds[0])
        lines = "\n".join(escaped).encode() + b"\n"
        threading.Thread(target=_write_patterns, args=(write_end, lines), daemon=True).start()
    if data is not None:
        threading.Thread(target=_feed, args=(proc, data), daemon=True).start()
    return GrepHits(proc)


@lru_cache(maxsize=8)
def _escaped(keywords: tuple[str, ...]) -> tuple[str, ...]:
    """The keywords ERE-escaped, once per keyword set (not per file scanned)."""
    return tuple(ere_escape(k) for k in keywords if k)


def _write_patterns(fd: int, lines: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(lines)
    except OSError:
        pass


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.close()
    except (OSError, ValueError):
        pass
