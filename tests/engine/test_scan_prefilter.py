"""Hyperscan searches pytest's location marker (``path.py:12: in f``) by a rarer necessary condition and Python's
re checks the marker on those lines (``mpscan.Patterns.prefilters``); a block with too many such lines is scanned
again with the marker itself. Either way the findings are Python's: on logs whose format puts the condition in
every line (over the limit), in a few lines (verified one by one), on the benchmarks' training and noise logs,
and the condition holds on every corpus line the marker matches."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pytest_faildiag.parse import mpscan, scan
from pytest_faildiag.parse.scan import ScanResult, scan_file
from pytest_faildiag.rules import load_ruleset
from tests.engine.test_mpscan import OOM, ROOT, _summary

BENCH = ROOT / "bench"

# a logger whose time stamp ends in ``,123: `` puts the prefilter's ``\d: \w`` in every line
STAMPED = "2026-11-30 01:02:{s:02d},{ms:03d}: INFO trainer.py:412 step {n} | loss 2.31 | lr 3.0e-04\n"
LOCATIONS = [
    "tests/test_train.py:42: in test_step\n",
    "[rank1]:tests/unit/test_model.py:7: AssertionError\n",
    "> C:\\work\\tests\\test_io.py:120: in test_read\n",
    "E   assert 1 == 2\n",
    "/opt/conda/lib/python3.11/site-packages/torch/utils/checkpoint.py:1399: UserWarning: use_reentrant\n",
]
LOOKALIKES = ["eval step 50: error_rate=0.01\n", "Epoch 3: 100%|##########| 20/20\n", "trainer.py:412 step 9\n"]


@pytest.fixture(autouse=True)
def _hyperscan(monkeypatch):
    pytest.importorskip("hyperscan")
    monkeypatch.setattr(mpscan, "MIN_BYTES", 0)


def _scan(path: Path, engine: str, monkeypatch) -> ScanResult:
    monkeypatch.setenv(mpscan.ENGINE_ENV, engine)
    res = ScanResult()
    scan_file(str(path), path.name, load_ruleset(), res)
    return res


def _log(path: Path, lines: int, every: int) -> Path:
    """``lines`` stamped step lines, a pytest location or a look-alike every ``every`` lines, the OOM last."""
    out = []
    for n in range(lines):
        out.append(STAMPED.format(s=n % 60, ms=n % 1000, n=n))
        if n % every == 0:
            out.append(LOCATIONS[n // every % len(LOCATIONS)])
            out.append(LOOKALIKES[n // every % len(LOOKALIKES)])
    path.write_text("".join(out) + OOM)
    return path


@pytest.mark.parametrize("limit", [2, 10**9], ids=["rescanned", "verified"])
def test_a_log_with_the_condition_in_every_line_finds_what_python_finds(tmp_path, monkeypatch, limit):
    """Over the limit the block is scanned again with the marker (its database built on first use); under it
    every condition line is checked by Python's re: the same locations either way, at the same line numbers."""
    monkeypatch.setattr(mpscan, "PREFILTER_LIMIT", limit)
    rescans: list[int] = []
    exact = mpscan._HyperscanLines._exact
    monkeypatch.setattr(mpscan._HyperscanLines, "_exact", lambda self: rescans.append(1) or exact(self))
    log = _log(tmp_path / "stamped.log", 6000, 97)
    fast = _summary(_scan(log, "hyperscan", monkeypatch))
    assert fast == _summary(_scan(log, "python", monkeypatch))
    sites = fast["pytest"][1]
    assert {(s[2], s[4]) for s in sites} >= {
        ("tests/test_train.py", ""),
        ("tests/unit/test_model.py", "AssertionError"),
    }
    assert len(sites) > 30 and len(fast["pytest"][0]) > 10
    assert bool(rescans) == (limit == 2)  # the marker's own database only where a block overflowed


def test_a_few_condition_lines_in_a_quiet_log(tmp_path, monkeypatch):
    lines = [f"[rank0]:step {n} | loss 2.31\n" for n in range(3000)]
    for at, extra in zip(range(5, 3000, 400), LOCATIONS + LOOKALIKES, strict=False):
        lines.insert(at, extra)
    log = tmp_path / "quiet.log"
    log.write_text("".join(lines) + OOM)
    fast = _summary(_scan(log, "hyperscan", monkeypatch))
    assert fast == _summary(_scan(log, "python", monkeypatch))
    assert len(fast["pytest"][1]) == 3 and len(fast["pytest"][0]) == 1


@pytest.mark.parametrize("writer", ["bench_big_log_grep", "make_noise_log"])
def test_the_benchmarks_logs_give_pythons_findings(tmp_path, monkeypatch, writer):
    """The training log of ``bench_big_log_grep.py`` and the noise log of ``make_noise_log.py``, 1 MB each."""
    monkeypatch.syspath_prepend(str(BENCH))
    module = __import__(writer)
    log = tmp_path / "train.log"
    if writer == "bench_big_log_grep":
        module.write_log(log, 1)
    else:
        module.write(log, 1)
    fast = _summary(_scan(log, "hyperscan", monkeypatch))
    assert fast == _summary(_scan(log, "python", monkeypatch))
    assert any("OutOfMemoryError" in str(t[1]) for t in fast["tracebacks"])
    sys.modules.pop(writer, None)


def test_every_corpus_line_the_marker_matches_holds_the_condition():
    marker, condition = (re.compile(p) for p in dict(scan._PREFILTERS).popitem())
    assert dict(scan._PREFILTERS).keys() <= set(scan._STRUCTURAL)
    matched = 0
    for path in sorted((ROOT / "tests" / "data").rglob("*")):
        if not path.is_file():
            continue
        for line in path.read_bytes().split(b"\n"):
            if marker.search(line):
                matched += 1
                assert condition.search(line), line
    assert matched > 50
