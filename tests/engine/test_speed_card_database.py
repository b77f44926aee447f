"""A team's cards get an engine database of their own (issue 17): with cards, Hyperscan scans a block with
the built-in rules' database (the one every diagnosis without cards compiled and cached) and a second one
holding only the cards' literals, so a new or edited factory compiles only its cards. The joined reports
must say exactly what one database of both says: the same candidate lines, the same keyword hits."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_faildiag import factory
from pytest_faildiag.parse import mpscan, scan
from pytest_faildiag.rules import _builtin_packs, build_ruleset

from .test_speed_keyword_hits import _rule_sets, _stress_lines

pytest.importorskip("hyperscan")


def _hits(finder, c, lines: list[bytes]) -> tuple[list[int], list[set[str] | None]]:
    block = b"\n".join(lines) + b"\n"
    starts, occ = finder.scan(block)
    out, start = [], 0
    for raw in lines:
        seen = scan._seen(raw + b"\n", start, occ, finder.table)
        start += len(raw) + 1
        out.append(scan.line_hits(c.keyword_regex, raw, seen))
    return starts, out


def test_two_databases_say_what_one_database_says(tmp_path):
    (tmp_path / "factory").mkdir()
    rs = _rule_sets(tmp_path)["with cards"]
    c = scan.compiled(rs)
    assert len(c.patterns.parts) == 2  # built-in rules, cards
    joined = mpscan.build("hyperscan", c.patterns)
    single = mpscan.build("hyperscan", dataclasses.replace(c.patterns, parts=()))
    assert type(joined).__name__ == "_JoinedLines" and type(single).__name__ == "_HyperscanLines"
    lines = _stress_lines(rs, 17, 5000)
    starts, hits = _hits(joined, c, lines)
    assert (starts, hits) == _hits(single, c, lines)
    assert len(starts) > 4000 and sum(bool(h) for h in hits) > 4000


def test_the_built_in_database_is_the_one_cached_without_cards(tmp_path, monkeypatch):
    """The first diagnosis with a new factory finds the built-in database on disk: only the cards' is new."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "factory").mkdir()
    sets = _rule_sets(tmp_path)
    assert mpscan.build("hyperscan", scan.compiled(sets["built-in"]).patterns) is not None
    before = {p.name for p in (tmp_path / "cache" / "faildiag").glob("hs-*.db")}
    assert len(before) == 1
    assert mpscan.build("hyperscan", scan.compiled(sets["with cards"]).patterns) is not None
    after = {p.name for p in (tmp_path / "cache" / "faildiag").glob("hs-*.db")}
    assert before < after and len(after) == 2  # the built-in one reused, the cards' one added


def test_no_split_without_cards_or_when_the_rule_set_is_not_built_in_plus_cards(tmp_path):
    (tmp_path / "factory").mkdir()
    sets = _rule_sets(tmp_path)
    assert scan.compiled(sets["built-in"]).patterns.parts == ()
    base = sets["built-in"]
    fac = factory.read_factory(tmp_path / "factory")
    odd = dataclasses.replace(factory.with_cards(base, fac.rules), rules=list(fac.rules))  # cards only
    parts = scan.compiled(odd).patterns.parts
    assert parts == () or sum(len(p.keywords) for p in parts) == len(scan.compiled(odd).patterns.keywords)


def test_compiling_the_scanner_leaves_the_keyword_alternation_uncompiled():
    """Splitting off the cards' part must not ask the built-in keyword regex for attributes it lacks: a
    ``LazyRegex`` compiles itself then (~0.1 s of every fresh diagnosis of a big log, for nothing)."""
    rs = build_ruleset(list(_builtin_packs()))
    assert rs.keyword_regex._re is None
    assert scan.compiled(rs).patterns.parts == ()
    assert rs.keyword_regex._re is None
