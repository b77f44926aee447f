"""Streaming log reading: bounded memory whatever the log's size or shape.

Logs arrive as gigabytes of interleaved ranks, progress bars redrawn with ``\\r``, ANSI colours, invalid
UTF-8 and, sometimes, one enormous line. Every reader here yields normalised lines one at a time and
never holds more than ``MAX_LINE`` bytes of one line, so memory stays flat however large the input is.

They also arrive in the encoding of the shell that wrote them: Windows PowerShell 5.1's ``>`` and ``Out-File``
write UTF-16 with a byte order mark, its ``-Encoding utf8`` UTF-8 with one. A log that starts with a byte order
mark is read in the encoding the mark names, as UTF-8 without the mark.

They also arrive compressed: logrotate gzips yesterday's log, a CI service hands its artifacts back as
``.gz``, a cluster archives a job's output as ``.xz``. A log compressed with what Python's standard library
reads (gzip, bzip2, xz/lzma: recognised by their magic bytes, not their names) is decompressed as it is
scanned, in the same bounded chunks, and its text read as above when it starts with a byte order mark; zstd
and lz4 need a library this project does not depend on, so they get a one-line error that says how to pipe
them in. A decompression bomb is read only so far, piped in as well as from a file.
"""

from __future__ import annotations

import codecs
import io
import os
import re
from collections.abc import Callable
from typing import IO, Any, BinaryIO, cast

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


def _gzip(f: IO[bytes]) -> io.BufferedIOBase:
    import gzip  # the readers are imported for a compressed log only: a diagnosis's start-up does not pay them

    return gzip.GzipFile(fileobj=f)


def _bzip2(f: IO[bytes]) -> io.BufferedIOBase:
    import bz2

    return bz2.BZ2File(f)


def _xz(f: IO[bytes]) -> io.BufferedIOBase:
    import lzma

    return lzma.LZMAFile(f)


# magic bytes -> the standard library's reader (gzip, bzip2, xz) over a binary file object
COMPRESSED: dict[bytes, Callable[[IO[bytes]], io.BufferedIOBase]] = {
    b"\x1f\x8b": _gzip,
    b"BZh": _bzip2,
    b"\xfd7zXZ\x00": _xz,
}
# formats the standard library (3.11) cannot read: magic bytes -> (format, the command that decompresses to stdout)
UNREADABLE = {b"\x28\xb5\x2f\xfd": ("zstd", "zstd -dc"), b"\x04\x22\x4d\x18": ("lz4", "lz4 -dc")}
COMPRESSED_SUFFIXES = {".gz", ".bz2", ".xz", ".zst", ".lz4"}
# A decompression bomb (a few MB of zeros that inflate to terabytes) would hold the scan for hours: a real log
# compresses 5-50x (gzip's ceiling is about 1,000x), so reading stops at this many times the compressed size.
MAX_RATIO = 400
PIECE = 64 * 1024


class Decompressed(io.RawIOBase):
    """A compressed log read as its text: not seekable (a diagnosis past its time budget reads on rather than
    decompress twice to find the end), and a truncated or corrupt stream ends where it stops decoding (the
    log of a job killed while it was written is read up to its last whole block), as does a bomb."""

    def __init__(self, inner: io.BufferedIOBase, raw: IO[bytes] | None, size: int, tally: Prefixed | None = None):
        """``raw``: the compressed file, closed with this (None: a stream the caller owns); ``size``: its size,
        which bounds the text read. A pipe has none: ``tally`` is the pipe, read through a ``Prefixed`` that counts
        the compressed bytes read so far, which bound the text instead (at least ``PIECE`` of them are allowed
        for: the decoders read ahead)."""
        import lzma
        import zlib

        super().__init__()
        self._inner, self._raw, self._size, self._tally = inner, raw, size, tally
        self._broken = (EOFError, OSError, zlib.error, lzma.LZMAError)  # what the readers raise on a bad stream
        self._given = 0  # bytes of text handed out
        self._head = b""  # text read ahead by ``peek_head``, handed out first
        self.stopped = ""  # why reading stopped before the stream's end, if it did

    def readable(self) -> bool:
        return True

    def _left(self) -> int:
        """How much more text the compressed bytes read so far allow (``MAX_RATIO`` times them)."""
        if self._tally is not None:
            return max(self._tally.count, PIECE) * MAX_RATIO - self._given
        return max(self._size, 1) * MAX_RATIO - self._given

    def peek_head(self, n: int) -> bytes:
        """The text's first ``n`` bytes (fewer if it is shorter), still to be read: a compressed log can start
        with a byte order mark too."""
        while len(self._head) < n:
            piece = bytearray(n - len(self._head))
            got = self._decompress(piece)
            if not got:
                break
            self._head += piece[:got]
        return self._head[:n]

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            memoryview(b).cast("B")[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._decompress(b)

    def _decompress(self, b: Any) -> int:
        """Fill ``b`` in pieces of ``PIECE`` bytes: a stream that breaks loses at most the piece it broke in
        (the readers drop what they decoded in a call that raises)."""
        view, got, want = memoryview(b).cast("B"), 0, len(b)
        while got < want and not self.stopped:
            left = self._left()
            if left <= 0:
                self.stopped = f"stopped at {MAX_RATIO}x its compressed size"
                break
            try:
                data = self._inner.read(min(PIECE, want - got, left))
            except self._broken as exc:
                self.stopped = f"truncated or corrupt ({exc})"
                break
            if not data:
                break
            view[got : got + len(data)] = data
            got += len(data)
            self._given += len(data)
        return got

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            if self._raw is not None:
                self._raw.close()
            super().close()


# a byte order mark -> the codec that reads the text after it (UTF-32's marks first: UTF-16 LE's starts UTF-32 LE's)
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
    (codecs.BOM_UTF8, "utf-8-sig"),
)


def marked_encoding(head: bytes) -> str | None:
    """The codec a text starting with ``head`` is in, when it starts with a byte order mark."""
    return next((codec for bom, codec in BOMS if head.startswith(bom)), None)


class Transcoded(io.RawIOBase):
    """A log in the encoding its byte order mark names, read as UTF-8 without the mark, piece by piece (a
    character cut between two pieces is kept for the next: the decoder is incremental)."""

    def __init__(self, raw: IO[bytes], codec: str, owned: bool):
        """``owned``: ``raw`` is closed with this (False for a stream the caller owns)."""
        super().__init__()
        self._raw, self._owned = raw, owned
        self._decoder = codecs.getincrementaldecoder(codec)("replace")
        self._pending = bytearray()
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        want = len(b)
        while len(self._pending) < want and not self._ended:
            data = self._raw.read(PIECE)
            self._ended = not data
            self._pending += self._decoder.decode(data, final=self._ended).encode("utf-8", "replace")
        n = min(want, len(self._pending))
        memoryview(b).cast("B")[:n] = self._pending[:n]
        del self._pending[:n]
        return n

    def close(self) -> None:
        try:
            if self._owned:
                self._raw.close()
        finally:
            super().close()


class Prefixed(io.RawIOBase):
    """A stream the caller owns, read through (never closed): the ``head`` of it read already, to see what it
    holds, comes first; ``count`` is how many of its bytes were handed on (a piped compressed log has no size,
    so what was read of it so far bounds its text instead)."""

    def __init__(self, head: bytes, stream: IO[bytes]):
        super().__init__()
        self._head, self._stream, self.count = head, stream, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
        else:
            data = self._stream.read(len(view))
            n = len(data)
            view[:n] = data
        self.count += n
        return n


def _compressed_reader(head: bytes, what: str) -> Callable[[IO[bytes]], io.BufferedIOBase] | None:
    """The reader for the format ``head`` starts with (None: not compressed); InputError for one read elsewhere."""
    for magic, reader in COMPRESSED.items():
        if head.startswith(magic):
            return reader
    for magic, (name, command) in UNREADABLE.items():
        if head.startswith(magic):
            source = "FILE" if what == "stdin" else what
            raise InputError(f"{what}: {name}-compressed; pipe it in: {command} {source} | faildiag diagnose -")
    return None


def _as_text(raw: IO[bytes], head: bytes, what: str, size: int | None) -> BinaryIO | None:
    """``raw`` read as its text when ``head`` (its first bytes) says it is compressed or starts with a byte order
    mark (a compressed log's text can start with one too); None when it is plain. ``size``: the file's, which
    bounds a decompressed read and makes ``raw`` the reader's to close (None: a stream the caller owns, whose
    compressed bytes read so far bound it)."""
    reader = _compressed_reader(head, what)
    if reader is not None:
        if size is None:
            tally = raw if isinstance(raw, Prefixed) else Prefixed(b"", raw)
            text = Decompressed(reader(cast(IO[bytes], tally)), None, 0, tally)
        else:
            text = Decompressed(reader(raw), raw, size)
        codec = marked_encoding(text.peek_head(4))
        return cast(BinaryIO, Transcoded(cast(IO[bytes], text), codec, owned=True) if codec else text)
    codec = marked_encoding(head)
    return cast(BinaryIO, Transcoded(raw, codec, owned=size is not None)) if codec else None


def open_stream(stream: BinaryIO) -> BinaryIO:
    """A piped log (``faildiag diagnose -``) as its text: ``cat job.log.gz | faildiag diagnose -`` works as the
    file would. Its first 8 bytes are read whole before anything is decided (a peek shows only what the writer
    has written so far: a first short write would hide a magic number), then handed on first; a file given as
    stdin (``< job.log``) is read from where it was, and stays seekable (a scan past its time budget skips to
    its tail)."""
    if stream.seekable():
        start = stream.tell()
        head = stream.read(8) or b""
        stream.seek(start)
        return _as_text(stream, head, "stdin", None) or stream
    head = stream.read(8) or b""
    raw = Prefixed(head, stream)
    return _as_text(cast(IO[bytes], raw), head, "stdin", None) or cast(BinaryIO, raw)


def open_log(path: str) -> BinaryIO:
    """A log file for binary reading: the file itself (unbuffered, read in place by the scanner), or its text
    when it is compressed (``COMPRESSED``) or marked with a byte order mark (``BOMS``). Raises InputError for a format that cannot be
    read here (``UNREADABLE``), with the command that pipes it in."""
    f = open(path, "rb", buffering=0)  # noqa: SIM115 (handed to the caller, who closes it)
    try:
        head = f.read(8)
        f.seek(0)
        text = _as_text(f, head, path, os.fstat(f.fileno()).st_size)
        if text is not None:
            return text
    except BaseException:
        f.close()
        raise
    return f


def sniff_binary(path: str) -> bool:
    """True for files that are not text logs: NUL bytes or other control bytes in the first 8 KiB (of the text,
    for a compressed log) beyond a text's stray ones (``_binary_head``), or more than ``MAX_HOLES`` of holes (a
    sparse file reads back gigabytes of NULs from no disk at all; a log is written, not seeked). InputError for
    a log compressed in a format not read here."""
    with open_regular(path) as f:
        head = f.read(8192)
        if marked_encoding(head[:8]) is not None:
            return False  # a wide encoding's NULs are its characters' bytes
        if _compressed_reader(head[:8], path) is None:
            return _binary_head(head) or hole_bytes(f, MAX_HOLES) > MAX_HOLES
    with open_log(path) as text:
        return _binary_head(text.read(8192))


STRAY_NULS = 4  # NUL bytes a text log may hold in its first 8 KiB
_TEXT_CONTROLS = frozenset(b"\t\n\r\x0b\x0c\x1b\x08\x07")  # whitespace, ANSI escapes, backspace, bell


def _binary_head(head: bytes) -> bool:
    """Whether the first bytes of a file are not text. A text log may hold a few stray NULs: Open MPI 5's
    launcher (PRRTE) ends each help message it prints with the C string's terminating NUL, and a terminal
    capture or a writer that died mid-write leaves one or two. Binary formats (a checkpoint's zip or pickle, an
    image, an executable) hold NULs and other control bytes throughout: more than ``STRAY_NULS`` NULs, or one
    control byte that is neither whitespace nor a terminal's in a hundred, is binary."""
    if b"\x00" not in head:
        return False
    if head.count(0) > STRAY_NULS:
        return True
    controls = sum(1 for b in head if b < 32 and b and b not in _TEXT_CONTROLS)
    return controls * 100 > len(head)


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
