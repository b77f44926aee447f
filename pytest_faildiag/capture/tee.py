"""Tee for a child's output: bytes pass through to our own stream as they come and into a bounded log.

Why bounded on disk rather than in memory: a training run can print gigabytes, and if ``faildiag`` is
killed the tail already on disk is still there to read. A log keeps its first ``head`` bytes in the file;
after that a rolling tail lives in two alternating segment files, joined at ``close`` as head +
"[faildiag: N bytes omitted here …]" + tail. Memory use is one read buffer per stream.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..fsio import open_output_file

HEAD_BYTES = 8 << 20


TAIL_BYTES = 8 << 20


READ_SIZE = 64 << 10


class BoundedLog:
    """A log file that keeps the first ``head`` bytes and a rolling last ``tail`` bytes.

    Why two segment files instead of a ring in memory: a training run can print gigabytes, and if
    ``faildiag`` itself is killed the tail on disk is still there to read. ``write`` is called from one
    pump thread; ``close`` may race with it, hence the lock. Every file is created new, never through a
    symlink (``fsio.open_output_file``); the caller checked the folder (``fsio.safe_mkdir``).
    """

    def __init__(self, path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self.path = path
        self.head_cap = head
        self.seg_cap = max(1, tail // 2)
        self.total = 0
        self._lock = threading.Lock()
        self._head = open_output_file(path, "wb", buffering=0)  # closed in close()
        self._head_len = 0
        self._segs = [path.with_name(path.name + ".tail0"), path.with_name(path.name + ".tail1")]
        self._seg_idx = -1
        self._seg: Any = None
        self._seg_len = 0
        self._rotations = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        with self._lock:
            if self.closed:
                return
            self.total += len(data)
            room = self.head_cap - self._head_len
            if room > 0:
                part = data[:room]
                self._head.write(part)
                self._head_len += len(part)
                data = data[room:]
            while data:
                if self._seg is None or self._seg_len >= self.seg_cap:
                    self._rotate()
                part = data[: self.seg_cap - self._seg_len]
                self._seg.write(part)
                self._seg_len += len(part)
                data = data[len(part) :]

    def _rotate(self) -> None:
        if self._seg is not None:
            self._seg.close()
            self._rotations += 1
        self._seg_idx = (self._seg_idx + 1) % 2
        self._seg = open_output_file(self._segs[self._seg_idx], "wb", buffering=0)
        self._seg_len = 0

    @property
    def omitted(self) -> int:
        """Bytes printed but not kept (between the head and the tail)."""
        kept = self._head_len
        if self._seg is not None:
            kept += self._seg_len + (self.seg_cap if self._rotations else 0)
        return max(0, self.total - kept)

    def close(self) -> None:
        """Join head + marker + older segment + newer segment into the final file."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            omitted = self.omitted
            if self._seg is not None:
                self._seg.close()
                if omitted:
                    self._head.write(
                        f"\n[faildiag: {omitted} bytes omitted here; the first {self.head_cap} and the "
                        f"last {self.seg_cap * 2} bytes or fewer are kept]\n".encode()
                    )
                order = [self._seg_idx] if not self._rotations else [(self._seg_idx + 1) % 2, self._seg_idx]
                for i in order:
                    with open(self._segs[i], "rb") as f:
                        shutil.copyfileobj(f, self._head, READ_SIZE)
                for seg in self._segs:
                    try:
                        seg.unlink()
                    except OSError:
                        pass
            self._head.close()
        redact_file(self.path)


def redact_file(path: Path, block: int = 1 << 20) -> None:
    """Mask secrets in a stored log in place, a block of whole lines at a time (memory stays flat): what a
    program prints can hold tokens, and the contract keeps them out of everything faildiag writes."""
    from ..redact import redact_text

    tmp = path.with_name(f".{path.name}.redacting")
    try:
        with open(path, "rb") as src, open_output_file(tmp, "wb") as dst:
            carry = b""
            while True:
                data = src.read(block)
                buf = carry + data
                if not data:
                    if buf:
                        dst.write(redact_text(buf.decode("utf-8", "replace")).encode("utf-8"))
                    break
                cut = buf.rfind(b"\n") + 1
                if cut == 0 and len(buf) < 4 * block:
                    carry = buf
                    continue
                cut = cut or len(buf)
                dst.write(redact_text(buf[:cut].decode("utf-8", "replace")).encode("utf-8"))
                carry = buf[cut:]
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


class Pump(threading.Thread):
    """Copy one pipe to our own stream and to a bounded log, counting bytes (the hang detector's clock)."""

    def __init__(self, src_fd: int, dest_fd: int | None, log: BoundedLog, on_data: Callable[[int], None]) -> None:
        super().__init__(name=f"faildiag-pump-{log.path.stem}", daemon=True)
        self.src_fd = src_fd
        self.dest_fd = dest_fd
        self.log = log
        self.on_data = on_data

    def run(self) -> None:
        while True:
            try:
                data = os.read(self.src_fd, READ_SIZE)
            except InterruptedError:
                continue
            except OSError:
                break
            if not data:
                break
            if self.dest_fd is not None:
                try:
                    _write_all(self.dest_fd, data)
                except OSError:  # our stdout went away (closed pipe): keep capturing, stop echoing
                    self.dest_fd = None
            self.log.write(data)
            self.on_data(len(data))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
