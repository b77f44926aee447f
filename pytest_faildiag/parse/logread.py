"""Streaming log reading: bounded memory whatever the log's size or shape.

Logs arrive as gigabytes of interleaved ranks, progress bars redrawn with ``\\r``, ANSI colours, invalid
UTF-8 and, sometimes, one enormous line. Every reader here yields normalised lines one at a time and
never holds more than ``MAX_LINE`` bytes of one line, so memory stays flat however large the input is.
"""

from __future__ import annotations

import os
import re

from ..fsio import ReadRefused, check_regular, hole_bytes, open_regular

MAX_LINE = 16 * 1024  # bytes of one physical line kept for matching; the rest is skipped, not buffered
CHUNK = 1 << 20
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class InputError(Exception):
    """Unreadable input; the message is one line a person can act on."""


def clean(text: str) -> str:
    """Strip ANSI escapes and control characters; keep the text a person would have seen."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if text.isprintable():  # no control character at all (the usual line): no regex call
        return text
    return _CTRL.sub("", text)


def _visible(segment: str) -> str:
    # A progress bar redraws with \r: what the terminal showed last is the final segment that has text.
    if "\r" in segment:
        parts = [p for p in segment.split("\r") if p.strip()]
        segment = parts[-1] if parts else ""
    return clean(segment.rstrip("\n"))


MAX_HOLES = 64 * 1024 * 1024


def sniff_binary(path: str) -> bool:
    """True for files that are not text logs: a NUL byte in the first 8 KiB, or more than ``MAX_HOLES`` of
    holes (a sparse file reads back gigabytes of NULs from no disk at all; a log is written, not seeked)."""
    with open_regular(path) as f:
        return b"\x00" in f.read(8192) or hole_bytes(f, MAX_HOLES) > MAX_HOLES


def check_readable(path: str) -> None:
    """Raise InputError with a one-line reason when ``path`` cannot be used as a log.

    Only regular files are logs: a FIFO would block the reader forever and ``/dev/zero`` never ends, so
    devices, FIFOs and sockets are refused here, before anything opens them (pipe a stream to ``-``)."""
    try:
        st = check_regular(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory") from None
    except ReadRefused as exc:
        hint = "; pipe it to `faildiag diagnose -` instead" if "FIFO" in str(exc.strerror) else ""
        raise InputError(f"{exc}{hint}") from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    if st.st_size == 0 and os.path.isfile(path):
        raise InputError(f"{path}: empty file")
