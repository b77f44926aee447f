"""The scanner reads a log into one buffer in place and finds lines by offsets (issue 14): line numbers,
line counts, the tail and the findings must come out right when lines straddle chunk boundaries, when one
line is longer than a chunk, when the last line has no newline, and whether the bytes come from a file
(read into the buffer) or from any other stream (read, then copied in)."""

from __future__ import annotations

import io
import random

import pytest

from pytest_faildiag.parse import mpscan, scan
from pytest_faildiag.rules import load_ruleset

FAILURE = "RuntimeError: CUDA error: an illegal memory access was encountered"


def _log(seed: int, *, long_line: int = 0, newline_at_end: bool = True) -> tuple[bytes, list[int]]:
    """Noise with the failure line at random places; returns the bytes and the failure lines' numbers."""
    rnd = random.Random(seed)
    lines, where = [], []
    for i in range(3000):
        if rnd.random() < 0.01:
            lines.append(FAILURE)
            where.append(i + 1)
        elif long_line and i == 1500:
            lines.append("x" * long_line)
        else:
            lines.append(
                f"step {i} loss {rnd.random():.4f} memory: allocated {rnd.randrange(90)}.5 GiB" * rnd.randrange(1, 4)
            )
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    return text.encode(), where


def _scan(data: bytes, stream_kind: str, tmp_path) -> scan.ScanResult:
    rs = load_ruleset()
    result = scan.ScanResult()
    if stream_kind == "file":
        path = tmp_path / "train.log"
        path.write_bytes(data)
        scan.scan_file(str(path), "log", rs, result)
    else:  # a reader that is neither a file nor BytesIO: read() and copied into the buffer
        scan.scan_stream(io.BufferedReader(io.BytesIO(data)), "log", rs, result)  # type: ignore[arg-type]
    return result


def _summary(result: scan.ScanResult) -> tuple:
    info = result.sources["log"]
    return (
        sorted((f.rule.id, f.line) for f in result.findings),
        info.lines,
        info.bytes,
        info.truncated_lines,
        info.tail,
        [(t.line, t.exc_type) for t in result.tracebacks],
        len(result.mem_series),
    )


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
@pytest.mark.parametrize("case", ["plain", "no newline at the end", "a line longer than a chunk"])
def test_line_numbers_counts_and_tail_are_right_across_small_chunks(tmp_path, monkeypatch, engine, case):
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    monkeypatch.setenv(mpscan.ENGINE_ENV, engine)
    monkeypatch.setattr(mpscan, "MIN_BYTES", 0)
    monkeypatch.setattr(scan, "CHUNK", 4096)  # hundreds of chunks, lines cut at every boundary
    monkeypatch.setattr(scan, "MAX_LINE", 1024)
    data, where = _log(
        7, long_line=3 * 4096 + 100 if "longer" in case else 0, newline_at_end=case != "no newline at the end"
    )
    results = {kind: _scan(data, kind, tmp_path) for kind in ("file", "stream")}
    assert _summary(results["file"]) == _summary(results["stream"])
    result = results["file"]
    info = result.sources["log"]
    assert info.lines == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    assert info.bytes == len(data)
    seen_lines = sorted({f.line for f in result.findings if FAILURE[:12] in f.text})
    assert seen_lines and set(seen_lines) <= set(where)  # the failure lines, numbered where they are
    assert info.tail[-1] == data.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode()
    if "longer" in case:
        assert info.truncated_lines >= 1


def test_an_empty_stream_and_invalid_utf8_are_read(tmp_path):
    assert _scan(b"", "file", tmp_path).sources["log"].lines == 0
    result = _scan(b"\xff\xfe bad bytes\n" + FAILURE.encode() + b"\n", "stream", tmp_path)
    assert result.sources["log"].lines == 2
    assert any(FAILURE[:12] in f.text for f in result.findings)


def test_a_buffer_sized_too_small_grows_with_the_same_result(tmp_path, monkeypatch):
    """A small input gets a small buffer; an input that turns out larger than its size said (a log
    written while it is read) grows it, and reads the same chunks as a full-size buffer would."""
    monkeypatch.setattr(scan, "CHUNK", 4096)
    monkeypatch.setattr(scan, "MAX_LINE", 1024)
    data, _ = _log(8, long_line=3 * 4096 + 100)
    expected = _summary(_scan(data, "file", tmp_path))
    monkeypatch.setattr(scan, "_capacity", lambda stream: 7)
    assert _summary(_scan(data, "file", tmp_path)) == expected
