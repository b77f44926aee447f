"""Logs in the encoding of the shell that wrote them (``parse/logread.py``): Windows PowerShell 5.1's ``>`` and
``Out-File`` write UTF-16 with a byte order mark and CRLF line ends, its ``-Encoding utf8`` UTF-8 with a mark. Such a
log is read as its text, not refused as binary: real program output, encoded as those writers do."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.parse.logread import marked_encoding
from tests.parse.conftest import file_verdict

PROGRAM = """
    import sys
    for step in range(800):
        print(f"step {step} | loss {2.5 - step / 100:.4f} | débit 1.2e+04 jetons/s 🚀 ███▌", flush=True)
    raise PermissionError(13, "Permission denied", "/données/cache/shard-00017.arrow")
"""

# codec -> what writes it: Python's "utf-16" writes a byte order mark and the machine's (little-endian) order,
# as Windows PowerShell 5.1 does; the big-endian and UTF-32 forms carry their own marks
ENCODINGS = {
    "utf-16": lambda t: t.encode("utf-16"),
    "utf-16-be": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
    "utf-8-sig": lambda t: t.encode("utf-8-sig"),
    "utf-32": lambda t: t.encode("utf-32"),
}


def _run(tmp_path: Path) -> str:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    p = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=tmp_path,
        env={"PYTHONIOENCODING": "utf-8", "PATH": ""},
    )
    return (p.stdout + p.stderr).replace("\n", "\r\n")  # PowerShell writes CRLF


@pytest.mark.parametrize("codec", list(ENCODINGS))
def test_a_log_in_the_encoding_its_mark_names_is_diagnosed_as_its_text(tmp_path, codec):
    text = _run(tmp_path)
    assert "PermissionError: [Errno 13]" in text and len(text.encode("utf-16")) > 64 * 1024  # more than one piece
    plain = tmp_path / "train.log"
    plain.write_bytes(text.encode("utf-8"))
    wide = tmp_path / f"train-{codec}.log"
    wide.write_bytes(ENCODINGS[codec](text))
    assert marked_encoding(wide.read_bytes()[:8]) is not None
    got = file_verdict(wide)
    assert got == file_verdict(plain)  # the same cause, evidence and line numbers
    assert "/données/cache" in got[4][0][0]  # the characters themselves, not their bytes


def test_the_cli_reads_a_utf16_log_as_a_file_and_piped_in(tmp_path):
    text = _run(tmp_path)
    (tmp_path / "job.log").write_bytes(text.encode("utf-16"))
    cli = [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", "--format", "json"]
    as_file = subprocess.run([*cli, "job.log"], capture_output=True, cwd=tmp_path)
    piped = subprocess.run([*cli, "-"], input=text.encode("utf-16"), capture_output=True, cwd=tmp_path)
    want = subprocess.run([*cli, "-"], input=text.encode("utf-8"), capture_output=True, cwd=tmp_path)
    assert as_file.returncode == piped.returncode == want.returncode == 0, as_file.stderr + piped.stderr
    cause = json.loads(want.stdout)["root_causes"][0]
    assert "PermissionError" in json.dumps(cause)
    assert json.loads(piped.stdout)["root_causes"][0] == cause


def test_a_file_of_nuls_without_a_mark_is_still_binary(tmp_path):
    blob = tmp_path / "weights.log"
    blob.write_bytes(b"\x00\x01\x02" * 4096)
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(blob)], capture_output=True, text=True
    )
    assert p.returncode == 2 and "binary file" in p.stderr


def test_a_log_with_a_few_stray_nuls_is_text_and_a_binary_with_few_nuls_is_not(tmp_path):
    """A real program's error followed by one NUL (Open MPI 5's launcher ends each help message with the C
    string's NUL; a writer that died mid-write leaves one or two) is a log; bytes that are mostly control
    characters stay binary even with few NULs (an image or a compressed blob under a .log name)."""
    err = subprocess.run([sys.executable, "-c", "import torch_npu_absent"], capture_output=True).stderr
    log = tmp_path / "job.log"
    log.write_bytes(err + b"\x00")
    cli = [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", "--format", "json"]
    p = subprocess.run([*cli, str(log)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "ModuleNotFoundError" in p.stdout
    blob = tmp_path / "image.log"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(1, 32)) * 200)
    p = subprocess.run([*cli, str(blob)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "binary file" in p.stderr


@pytest.mark.parametrize("codec", list(ENCODINGS))
def test_a_marked_log_whose_first_line_is_the_error_reads_that_line(tmp_path, codec):
    # PowerShell's Set-Content / Out-File of a one-line error: the mark comes right before the exception's name
    err = subprocess.run([sys.executable, "-c", "import torch_npu_absent"], capture_output=True, text=True).stderr
    line = err.strip().splitlines()[-1] + "\r\n"
    assert line.startswith("ModuleNotFoundError")
    (tmp_path / "plain.log").write_bytes(line.encode())
    (tmp_path / "marked.log").write_bytes(ENCODINGS[codec](line))
    assert file_verdict(tmp_path / "marked.log") == file_verdict(tmp_path / "plain.log")


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress], ids=["gz", "bz2", "xz"])
def test_a_compressed_utf16_log_is_read_as_its_text_from_a_file_and_piped_in(tmp_path, compress):
    # PowerShell's `>` log, then archived: the mark is inside the compressed stream, so it is looked for after
    # decompressing (before, the UTF-16 text's NULs made the archive "binary file, not a log")
    text = _run(tmp_path)
    packed = compress(text.encode("utf-16"))
    (tmp_path / "job.log.gz").write_bytes(packed)
    cli = [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", "--format", "json"]
    as_file = subprocess.run([*cli, "job.log.gz"], capture_output=True, cwd=tmp_path)
    piped = subprocess.run([*cli, "-"], input=packed, capture_output=True, cwd=tmp_path)
    want = subprocess.run([*cli, "-"], input=text.encode("utf-8"), capture_output=True, cwd=tmp_path)
    assert as_file.returncode == piped.returncode == want.returncode == 0, as_file.stderr + piped.stderr
    cause = json.loads(want.stdout)["root_causes"][0]
    assert "PermissionError" in json.dumps(cause)
    assert json.loads(piped.stdout)["root_causes"][0] == cause
    read = json.loads(as_file.stdout)["root_causes"][0]
    assert [(e["excerpt"], e["line"]) for e in read["evidence"]] == [
        (e["excerpt"], e["line"]) for e in cause["evidence"]
    ]
    assert {**read, "evidence": None} == {**cause, "evidence": None}  # only the source's name differs
