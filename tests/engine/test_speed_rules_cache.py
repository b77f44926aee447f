"""The rule packs' on-disk cache (issue 14): a fresh process reads the packs' parse from the user's cache
folder instead of parsing TOML and compiling every regex; the diagnosis is the same, and a damaged, foreign
or stale cache is a miss, never an error or a different result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.rules import LazyRegex, _builtin_packs, build_ruleset, keep_cache

DATA = Path(__file__).resolve().parent.parent / "data"
LOG = next(iter(sorted((DATA / "corpus").rglob("*.log"))))

BAD_PACK = """
[[rule]]
id = "probe.bad"
keywords = ["QZXPROBE"]
patterns = ["(unclosed"]
"""


def _diagnose_cli(log: Path, cache: Path, out: Path) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(log), "--exit-code", "1", "--format", "json"]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    report = json.loads(p.stdout)
    report.pop("artifacts", None)
    return report


def _rule_caches(cache: Path) -> list[Path]:
    return sorted((cache / "faildiag").glob("rules-*.json"))


def test_a_fresh_cli_writes_the_cache_and_the_next_one_reads_it_with_the_same_diagnosis(tmp_path):
    cache = tmp_path / "cache"
    first = _diagnose_cli(LOG, cache, tmp_path / "out1")
    (written,) = _rule_caches(cache)
    assert written.stat().st_mode & 0o777 == 0o600
    assert (cache / "faildiag").stat().st_mode & 0o077 == 0
    stamp = written.stat().st_mtime_ns
    second = _diagnose_cli(LOG, cache, tmp_path / "out2")
    assert second == first
    assert _rule_caches(cache) == [written] and written.stat().st_mtime_ns == stamp  # read, not rewritten


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "wrong shape", "made for other packs", "changed in a folder others may write"],
)
def test_a_damaged_or_foreign_cache_is_a_miss_with_the_same_diagnosis(tmp_path, damage):
    cache = tmp_path / "cache"
    expected = _diagnose_cli(LOG, cache, tmp_path / "out1")
    (path,) = _rule_caches(cache)
    good = path.read_bytes()
    data = json.loads(good)
    if damage == "garbage":
        path.write_bytes(b"\x00\xff not json at all")
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "wrong shape":
        data["packs"] = [["a", 1, 2, 3]]
        path.write_text(json.dumps(data))
    elif damage == "made for other packs":
        data["key"] = "0" * 40
        path.write_text(json.dumps(data))
    else:  # others could have changed it (here: every confidence): never trusted, so never used
        path.write_text(json.dumps(data).replace('"confidence":', '"confidence":0.011,"x":'))
        os.chmod(path.parent, 0o777)
    assert _diagnose_cli(LOG, cache, tmp_path / "out2") == expected


def test_a_cached_rule_set_equals_a_parsed_one_and_compiles_its_regexes_on_first_use(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    packs = _builtin_packs()
    parsed = build_ruleset(packs, cache=True)
    keep_cache(parsed)
    cached = build_ruleset(packs, cache=True)
    assert cached.cache_write is None  # read from the cache: nothing to write
    lazy = [p for r in cached.rules for p in r.patterns]
    assert lazy and all(isinstance(p, LazyRegex) for p in lazy)
    assert all(p._re is None for p in lazy)  # nothing compiled yet
    assert cached.rules == parsed.rules and cached.keyword_index.keys() == parsed.keyword_index.keys()
    assert cached.keyword_regex.pattern == parsed.keyword_regex.pattern
    assert cached.reasoning.exceptions == parsed.reasoning.exceptions


def test_a_refused_pack_warns_the_same_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    packs = [*_builtin_packs(), ("99-bad.toml", BAD_PACK)]
    messages = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rs = build_ruleset(packs, cache=True)
            keep_cache(rs)
        messages.append([str(w.message) for w in caught])
        assert rs.by_id("probe.bad") is None
    assert messages[0] == messages[1] and any("99-bad.toml skipped" in m for m in messages[0])


def test_a_changed_pack_makes_a_new_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pack = BAD_PACK.replace("(unclosed", "QZXPROBE (?P<n>[0-9]+)")
    for text in (pack, pack.replace("QZXPROBE (", "QZXPROBE: (")):
        rs = build_ruleset([("probe.toml", text)], cache=True)
        keep_cache(rs)
        assert rs.by_id("probe.bad").patterns[0].pattern in text
    assert len(_rule_caches(tmp_path / "cache")) == 2
