"""The multi-pattern engines (Hyperscan, RE2) find exactly the lines Python's re finds, so a diagnosis does not
depend on which one is installed: over every keyword of the knowledge base, every log of the corpus and the
knowledge-base fixtures, and the bad input a log can be (binary, one 50 MB line, invalid UTF-8, empty,
growing while it is read). Also: the compiled database is cached privately and a bad cache costs nothing."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_faildiag.parse import mpscan
from pytest_faildiag.parse.scan import ScanResult, compiled, scan_file
from pytest_faildiag.rules import load_ruleset

ROOT = Path(__file__).resolve().parents[2]
DATA = [ROOT / "tests" / "data" / "corpus", ROOT / "tests" / "data" / "kb"]
ENGINES = ["hyperscan", "re2"]
OOM = (
    'Traceback (most recent call last):\n  File "/w/train.py", line 9, in <module>\n    loss.backward()\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.02 GiB is free.\n"
)


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch) -> str:
    """An installed engine, used for every log however small (the threshold only saves start-up time)."""
    pytest.importorskip(request.param)
    monkeypatch.setattr(mpscan, "MIN_BYTES", 0)
    return request.param


def _scan(path: Path, engine: str, monkeypatch) -> ScanResult:
    monkeypatch.setenv(mpscan.ENGINE_ENV, engine)
    res = ScanResult()
    scan_file(str(path), path.name, load_ruleset(), res)
    return res


def _summary(res: ScanResult) -> dict:
    """Everything the engine choice could change: what Python saw and what it made of it."""
    return {
        "findings": [(f.rule.id, f.line, f.text, sorted(f.groups.items()), f.rank, f.ts) for f in res.findings],
        "tracebacks": [(t.line, t.exc_type, t.exc_line, t.message, len(t.frames), t.rank) for t in res.tracebacks],
        "dumps": [(d.line, d.thread, len(d.frames)) for d in res.dumps],
        "error_lines": res.error_lines,
        "pytest": (res.pytest_errors, [(s, n, f.file, f.line, k) for s, n, f, k in res.pytest_locations]),
        "mem": res.mem_series,
        "sources": [(s.lines, s.bytes, s.tail, s.truncated_lines) for s in res.sources.values()],
        "hits": res.hits_per_rule,
        "ranks": res.rank_first_error,
        "progress": res.progress,
    }


def _data_files() -> list[Path]:
    return sorted(p for d in DATA for p in d.rglob("*") if p.is_file() and not p.is_symlink())


def test_every_log_of_the_corpus_and_knowledge_base_gives_the_same_findings(engine, monkeypatch):
    files = _data_files()
    assert len(files) > 500
    differ = []
    found = 0
    for path in files:
        fast = _summary(_scan(path, engine, monkeypatch))
        slow = _summary(_scan(path, "python", monkeypatch))
        found += len(fast["findings"])
        if fast != slow:
            differ.append(str(path.relative_to(ROOT)))
    assert not differ, f"{engine} and Python's re disagree on {len(differ)} logs: {differ[:10]}"
    assert found > 500  # the logs do hold findings: the comparison compared something


def test_every_keyword_of_the_knowledge_base_finds_its_line(engine):
    """One line per keyword, as written and (caseless rules) in swapped case, between noise lines: the
    engine's hit lines are exactly the lines Python's candidate pattern hits."""
    rs = load_ruleset()
    lines = []
    for r in rs.rules:
        for k in r.keywords:
            lines.append(f"step 12 | {k} | loss 2.31")
            lines.append("step 13 | lr 3.0e-04 | grad_norm 0.81 | tokens/s 51234")
            if r.ignore_case:
                lines.append(f"[rank1]: {k.swapcase()}!")
    buf = ("\n".join(lines) + "\n").encode()
    c = compiled(rs)
    finder = mpscan.build(engine, c.patterns)
    assert finder is not None
    expected = []
    pos = 0
    while (m := c.candidates.search(buf, pos)) is not None:
        start = buf.rfind(b"\n", 0, m.start()) + 1
        expected.append(start)
        pos = buf.find(b"\n", m.start()) + 1
    assert finder(buf) == expected
    assert len(expected) > len(rs.keyword_index)  # every keyword line, and more (structural words)


# ---------------------------------------------------------------------------------------------- bad input
def _same(path: Path, engine: str, monkeypatch) -> dict:
    fast = _summary(_scan(path, engine, monkeypatch))
    assert fast == _summary(_scan(path, "python", monkeypatch))
    return fast


def test_a_binary_file(tmp_path, engine, monkeypatch):
    f = tmp_path / "core.bin"
    blob = bytes(range(256)) * 4096 + b"\0" * 100_000
    f.write_bytes(blob + OOM.encode() + os.urandom(300_000) + b"\nNCCL WARN Cuda failure 'out of memory'\n")
    out = _same(f, engine, monkeypatch)
    assert any(t[1] == "torch.OutOfMemoryError" for t in out["tracebacks"])


def test_a_single_50_mb_line(tmp_path, engine, monkeypatch):
    f = tmp_path / "huge.log"
    with open(f, "wb") as fh:
        fh.write(b"Epoch 1: " + b"error " * (50 * 1024 * 1024 // 6))  # keywords all along the line
        fh.write(b"\n" + OOM.encode())
    out = _same(f, engine, monkeypatch)
    assert out["sources"][0][3] >= 1  # the line was cut, and counted
    assert any(t[1] == "torch.OutOfMemoryError" for t in out["tracebacks"])


def test_invalid_utf8(tmp_path, engine, monkeypatch):
    f = tmp_path / "train.log"
    f.write_bytes(
        b"step 1 \xff\xfe\xfa garbage\n\xc3(CUDA error: an illegal memory access was encountered\xed\xa0\x80\n"
        + b"\x80" * 1000
        + b"\n"
        + OOM.encode("utf-8")
    )
    out = _same(f, engine, monkeypatch)
    assert out["findings"], "the keywords next to invalid bytes are still found"


def test_an_empty_file(tmp_path, engine, monkeypatch):
    f = tmp_path / "empty.log"
    f.write_bytes(b"")
    out = _same(f, engine, monkeypatch)
    assert out["findings"] == [] and out["sources"][0][:2] == (0, 0)


WRITER = """
import sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
n = 0
with open(path, "a", buffering=1) as f:
    while time.monotonic() < end:
        for _ in range(2000):
            n += 1
            f.write(f"[rank{n % 8}]:step {n} | loss 2.31 | lr 3.0e-04 | grad_norm 0.8 | tokens/s 51234\\n")
        f.write(f"[rank0]:eval step {n}: error_rate=0.01\\n")
        time.sleep(0.02)
    f.write("[rank3]:RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error\\n")
"""


def test_a_file_that_grows_while_it_is_read(tmp_path, engine, monkeypatch):
    """A live training log: a real process appends to it while the scan reads; the scan ends, keeps what was
    there when it started, and a scan of the finished file agrees with Python's."""
    f = tmp_path / "live.log"
    f.write_text(OOM + "step 0 | loss 9.9\n" * 50_000)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(f), "2"])
    try:
        time.sleep(0.3)
        res = _scan(f, engine, monkeypatch)
    finally:
        writer.wait(timeout=60)
    assert any(t.exc_type == "torch.OutOfMemoryError" for t in res.tracebacks)
    assert res.sources["live.log"].lines >= 50_004
    out = _same(f, engine, monkeypatch)
    assert any("unhandled system error" in x[2] for x in out["findings"])  # written last, after the first scan


# ----------------------------------------------------------------------------------------- database cache
def test_the_database_is_cached_privately_and_loaded_by_the_next_process(tmp_path, monkeypatch):
    hs = pytest.importorskip("hyperscan")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    c = compiled(load_ruleset())
    finder = mpscan.build("hyperscan", c.patterns)
    assert finder is not None
    folder = tmp_path / "cache" / "faildiag"
    dbs = list(folder.glob("hs-*.db"))
    assert len(dbs) == 1
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(dbs[0].stat().st_mode) == 0o600
    probe = "[rank2]:torch.OutOfMemoryError: CUDA out of memory\n"
    code = (
        "import os, time; from pytest_faildiag.parse import mpscan; from pytest_faildiag.parse.scan import compiled;"
        "from pytest_faildiag.rules import load_ruleset; c = compiled(load_ruleset());"
        "exprs, flags = mpscan._expressions(c.patterns, __import__('hyperscan'));"
        "key = mpscan._cache_key(exprs, flags, __import__('hyperscan'));"
        "print(mpscan._load_cached(key, __import__('hyperscan')) is not None);"
        f"print(mpscan.build('hyperscan', c.patterns)(b'step 1\\n' + {probe.encode()!r}))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "[7]"]
    assert hs.loadb(dbs[0].read_bytes(), hs.HS_MODE_BLOCK) is not None


@pytest.mark.parametrize("damage", ["garbage", "foreign-folder", "folder-is-a-file", "symlinked-folder"])
def test_a_bad_or_unwritable_cache_only_costs_the_compile(tmp_path, monkeypatch, damage):
    pytest.importorskip("hyperscan")
    cache = tmp_path / "cache"
    folder = cache / "faildiag"
    cache.mkdir()
    if damage == "garbage":
        folder.mkdir(mode=0o700)
        c = compiled(load_ruleset())
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        mpscan.build("hyperscan", c.patterns)
        for db in folder.glob("hs-*.db"):
            db.write_bytes(b"\0not a database" * 100)
    elif damage == "foreign-folder":
        folder.mkdir()
        folder.chmod(0o777)  # anyone could have planted a database here: never loaded, never written
    elif damage == "folder-is-a-file":
        folder.write_text("not a folder")
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        folder.symlink_to(elsewhere)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    finder = mpscan.build("hyperscan", compiled(load_ruleset()).patterns)
    assert finder is not None
    assert finder(b"ok\nRuntimeError: CUDA error: out of memory\n") == [3]
    if damage == "foreign-folder":
        assert not list(folder.iterdir())
    if damage == "symlinked-folder":
        assert not list((tmp_path / "elsewhere").iterdir())


def test_no_engine_installed_is_the_standard_library_path(tmp_path, monkeypatch):
    """A missing engine is the same as choosing Python: no error, same result (the CLI, a real process)."""
    f = tmp_path / "train.log"
    f.write_text("step 1 | loss 2.0\n" * 20_000 + OOM)
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{mpscan.ENGINE_ENV: "python"})
    code = (
        "import sys; sys.modules['hyperscan'] = None; sys.modules['re2'] = None\n"
        "from pytest_faildiag.parse import mpscan\n"
        "import os; os.environ.pop(mpscan.ENGINE_ENV)\n"
        "assert mpscan.engine_name() == 'python' and mpscan.build('hyperscan', None) is None\n"
        "from pytest_faildiag.cli import main; sys.exit(main())\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, "diagnose", str(f), "--format", "json", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "OutOfMemoryError" in p.stdout
