"""Compressed logs (``parse/logread.py``): logrotate's ``.gz``, a CI artifact, a cluster's ``.xz`` archive are read
as their text, by their magic bytes; a truncated one as far as it decodes; a bomb only so far; zstd and lz4,
which the standard library cannot read, get one line that says how to pipe them in. Real program output,
compressed by the standard library's writers of each format."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine import diagnose
from pytest_faildiag.parse import logread
from pytest_faildiag.parse.logread import InputError, open_log
from pytest_faildiag.parse.scan import ScanResult, scan_file
from pytest_faildiag.rules import load_ruleset
from tests.parse.conftest import file_verdict

WRITERS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}

PROGRAM = """
    import sys
    for step in range(200):
        print(f"step {step} | loss {2.5 - step / 100:.4f} | lr 3.0e-04", flush=True)
    raise PermissionError(13, "Permission denied", "/data/cache/shard-00017.arrow")
"""


def _run(tmp_path: Path) -> str:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PROGRAM))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    return p.stdout + p.stderr


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_a_compressed_log_is_diagnosed_as_its_text(tmp_path, fmt):
    text = _run(tmp_path)
    assert "PermissionError: [Errno 13]" in text
    plain = tmp_path / "train.log"
    plain.write_text(text)
    packed = tmp_path / f"train.log.{fmt}"
    packed.write_bytes(WRITERS[fmt](text.encode()))
    assert file_verdict(packed) == file_verdict(plain)  # the same cause, evidence and line numbers


def test_a_folder_walk_reads_a_rotated_log(tmp_path):
    text = _run(tmp_path)
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log.gz").write_bytes(gzip.compress(text.encode()))
    (job / "model.bin.gz").write_bytes(gzip.compress(b"\x00" * 64))  # not a log's name: not read
    d = diagnose([str(job)])
    assert d.sources == ["rank0.log.gz"]
    assert d.profile.first_failure is not None and d.profile.first_failure.source == "rank0.log.gz"
    assert "PermissionError" in d.profile.first_failure.excerpt


def test_a_truncated_gzip_is_read_up_to_where_it_breaks(tmp_path):
    # a job killed while its log was being compressed: the traceback is in the part that decodes
    text = _run(tmp_path)
    noise = "".join(f"step {i} | loss 2.0 | tokens/s {i * 7919 % 100003}\n" for i in range(60000))
    packed = gzip.compress((text + noise).encode())
    cut = tmp_path / "killed.log.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    res = ScanResult()
    scan_file(str(cut), "killed.log.gz", load_ruleset(), res)
    assert [tb.exc_type for tb in res.tracebacks] == ["PermissionError"]
    assert 1000 < res.sources["killed.log.gz"].lines < 60000
    with open_log(str(cut)) as f:
        while f.read(1 << 20):
            pass
        assert f.stopped.startswith("truncated or corrupt")


def test_a_decompression_bomb_is_read_only_so_far(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.log.gz"
    bomb.write_bytes(gzip.compress(b"ok\n" * 2_000_000))  # 6 MB of text in about 10 KB
    monkeypatch.setattr(logread, "MAX_RATIO", 50)
    size = bomb.stat().st_size
    with open_log(str(bomb)) as f:
        read = 0
        while chunk := f.read(1 << 16):
            read += len(chunk)
    assert read == size * 50 < 6_000_000
    assert f.stopped == "stopped at 50x its compressed size"


def test_zstd_gets_one_line_that_says_how_to_pipe_it_in(tmp_path):
    log = tmp_path / "train.log.zst"
    log.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 32)  # a zstd frame's magic number
    with pytest.raises(InputError, match="zstd-compressed; pipe it in: zstd -dc"):
        open_log(str(log))
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(log), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and "zstd -dc" in p.stderr


def test_the_cli_diagnoses_a_gzipped_log(tmp_path):
    text = _run(tmp_path)
    (tmp_path / "train.log.gz").write_bytes(gzip.compress(text.encode()))
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", "train.log.gz", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert "PermissionError" in json.dumps(report["root_causes"][0])


def test_a_gzipped_log_piped_in_is_read_as_the_file_is(tmp_path):
    text = _run(tmp_path)
    packed = gzip.compress(text.encode())
    cli = [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", "-", "--format", "json"]
    got = subprocess.run(cli, input=packed, capture_output=True, cwd=tmp_path)
    want = subprocess.run(cli, input=text.encode(), capture_output=True, cwd=tmp_path)
    assert got.returncode == want.returncode == 0, got.stderr
    assert json.loads(got.stdout)["root_causes"][0] == json.loads(want.stdout)["root_causes"][0]
    zst = subprocess.run(cli, input=b"\x28\xb5\x2f\xfd" + b"\x00" * 16, capture_output=True, cwd=tmp_path)
    assert zst.returncode == 2 and zst.stderr.decode().strip().endswith("zstd -dc FILE | faildiag diagnose -")


def test_a_gzipped_log_piped_by_a_writer_that_pauses_inside_its_magic_number(tmp_path):
    # a pipe holds only what its writer wrote so far: a peek at its first bytes saw 1 of gzip's 2-byte magic
    # number and read the archive as text (before: a cause from the binary's bytes, not the run's)
    text = _run(tmp_path)
    (tmp_path / "job.log.gz").write_bytes(gzip.compress(text.encode()))
    writer = (
        "import sys, time; d = open('job.log.gz', 'rb').read(); o = sys.stdout.buffer; "
        "o.write(d[:1]); o.flush(); time.sleep(1); o.write(d[1:])"
    )
    cli = [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", "-", "--format", "json"]
    with subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, cwd=tmp_path) as w:
        got = subprocess.run(cli, stdin=w.stdout, capture_output=True, cwd=tmp_path)
    want = subprocess.run(cli, input=text.encode(), capture_output=True, cwd=tmp_path)
    assert got.returncode == want.returncode == 0, got.stderr
    assert json.loads(got.stdout)["root_causes"][0] == json.loads(want.stdout)["root_causes"][0]
    assert "PermissionError" in json.dumps(json.loads(want.stdout)["root_causes"][0])


def test_a_log_given_as_stdin_from_a_file_stays_seekable(tmp_path):
    # `faildiag diagnose - < job.log`: read from where the stream was, and still a file a scan can skip in
    log = tmp_path / "job.log"
    log.write_bytes(b"banner\n" + _run(tmp_path).encode())
    with open(log, "rb") as f:
        f.read(7)  # the caller had read the banner
        text = logread.open_stream(f)
        assert text is f and text.seekable() and f.tell() == 7
        assert text.read().startswith(b"step 0 |")


def test_a_compressed_stream_handed_to_the_engine_stays_the_callers(tmp_path):
    text = _run(tmp_path)
    stream = io.BufferedReader(io.BytesIO(gzip.compress(text.encode())))
    d = diagnose(stream=stream, stream_name="job.log")
    assert d.profile.first_failure is not None and "PermissionError" in d.profile.first_failure.excerpt
    assert not stream.closed  # the engine read it; closing it is the caller's


def test_a_piped_decompression_bomb_is_read_only_so_far(monkeypatch):
    # a pipe has no size: the compressed bytes read from it so far bound its text instead (before, a piped bomb
    # was read to its end however far it inflated)
    packed = gzip.compress(b"ok\n" * 2_000_000)  # 6 MB of text in about 10 KB
    monkeypatch.setattr(logread, "MAX_RATIO", 50)
    r, w = os.pipe()
    os.write(w, packed)  # under a pipe's buffer: written whole before anything reads it
    os.close(w)
    with open(r, "rb") as stream:
        assert not stream.seekable()  # a real pipe
        with logread.open_stream(stream) as f:
            read = 0
            while chunk := f.read(1 << 16):
                read += len(chunk)
        assert read == logread.PIECE * 50 < 6_000_000  # the archive is under one piece: a piece's worth allowed
        assert f.stopped == "stopped at 50x its compressed size"
        assert not stream.closed  # the caller's stream


def test_a_piped_log_is_read_whole():
    # a real log compresses 5-50x: bounded by what was read of the pipe, it is never cut, however far the
    # decoders read ahead or lag behind
    text = "".join(f"step {i} | loss {1 / (i + 1):.6f} | NCCL INFO Channel 00/02 ring\n" for i in range(200_000))
    text += "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    for compress in (gzip.compress, bz2.compress, lzma.compress):
        packed = compress(text.encode())
        assert len(packed) > logread.PIECE  # bounded by the tally, not by the floor
        with logread.open_stream(io.BufferedReader(io.BytesIO(packed))) as f:
            assert f.read() == text.encode() and not f.stopped
