"""Line numbers of a big log come from ``scan.newlines``, which counts a long range by ``bytes.replace``
(memchr) where lines are long and by ``bytes.count`` where they are short (issue 14): whatever the mix of
line lengths (blank lines, binary bytes, one huge line, log lines), it must give exactly the count, and a
scan of a real file must number the failure lines it finds right across every such range."""

from __future__ import annotations

import random

import pytest

from pytest_faildiag.parse import scan
from pytest_faildiag.rules import load_ruleset

FAILURE = "RuntimeError: CUDA error: an illegal memory access was encountered"


def _pieces(rnd: random.Random, size: int) -> bytearray:
    out = bytearray()
    while len(out) < size:
        kind = rnd.randrange(5)
        if kind == 0:
            out += b"\n" * rnd.randrange(1, 5000)  # blank lines: the dense case
        elif kind == 1:
            out += rnd.randbytes(rnd.randrange(1, 20000))  # binary data, a newline now and then
        elif kind == 2:
            out += b"y" * rnd.randrange(1, 300000) + b"\n"  # a long line
        else:
            step = rnd.randrange(100000)
            out += b"".join(b"[rank%d]: step %d loss 2.%d lr 3e-4 grad_norm 0.9\n" % (r, step, r) for r in range(300))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_newlines_counts_every_range_exactly(seed: int) -> None:
    rnd = random.Random(seed)
    buf = _pieces(rnd, 3 * scan.COUNT_PIECE)
    edges = [0, 1, scan.COUNT_PROBE, scan.COUNT_BY_REPLACE - 1, scan.COUNT_BY_REPLACE, scan.COUNT_PIECE, len(buf)]
    ranges = [(a, b) for a in edges for b in edges if a <= b <= len(buf)]
    for _ in range(300):
        a = rnd.randrange(len(buf) + 1)
        ranges.append((a, rnd.randrange(a, len(buf) + 1)))
    for a, b in ranges:
        assert scan.newlines(buf, a, b) == buf.count(b"\n", a, b), (a, b)


def test_line_numbers_of_a_mixed_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of 16 KiB chunks (hundreds of them, each cut mid-line) holding dense, binary and log ranges,
    with the failure at random lines: each found where it is, and the whole file's line count exact."""
    monkeypatch.setattr(scan, "CHUNK", 16 * 1024)
    rnd = random.Random(14)
    data = bytearray()
    where = []
    for _ in range(40):
        data += _pieces(rnd, rnd.randrange(1, 60000)).replace(b"\r", b" ")
        data += b"\n" + FAILURE.encode() + b"\n"  # its own line (binary data may end without a newline)
        where.append(data.count(b"\n"))
    log = tmp_path / "mixed.log"
    log.write_bytes(bytes(data))
    result = scan.ScanResult()
    scan.scan_file(str(log), "mixed", load_ruleset(), result)
    found = {line for _, line, text in result.error_lines if "illegal memory access" in text}
    assert set(where) <= found
    assert result.sources["mixed"].lines == data.count(b"\n")
