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


def test_a_changed_factory_compiles_only_the_literals_its_stable_database_lacks(tmp_path, monkeypatch):
    """After a card is edited or added, the cards' last full database (the stable one) is scanned with a
    delta database of the new literals only, and the literals no card holds any more are never reported:
    the joined reports are what one database of the current keywords says."""
    from .test_speed_keyword_hits import PROBE_PACK, _factory

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(mpscan, "TIER_FROM", 1)  # the real threshold is for thousands of literals
    (tmp_path / "factory").mkdir()
    root = _factory(tmp_path / "factory")
    base = build_ruleset([*_builtin_packs(), ("99-probe.toml", PROBE_PACK)])
    compiled: list[int] = []
    real = mpscan._compile

    def counting(hs, exprs, flags, literal):
        if literal:
            compiled.append(len(exprs))
        return real(hs, exprs, flags, literal)

    monkeypatch.setattr(mpscan, "_compile", counting)

    def finder():
        fac = factory.read_factory(root)
        assert not fac.problems
        c = scan.compiled(factory.with_cards(base, fac.rules, root=root))
        return c, mpscan.build("hyperscan", c.patterns)

    _, first = finder()
    count = len(first.parts[1].table)
    assert compiled == [count]  # a new factory: its cards' full database
    text = (root / "xid.md").read_text(encoding="utf-8").replace('"Xid 4242"', '"Xid 5151 fell off"')
    (root / "xid.md").write_text(text, encoding="utf-8")
    (root / "new.md").write_text(
        '+++\nid = "new"\ntitle = "t"\nsignatures = ["Lustre OST0007 lost"]\ncategory = "hardware"\n+++\n',
        encoding="utf-8",
    )
    c, tiered = finder()
    assert compiled == [count, 2]  # only "Xid 5151 fell off" and "Lustre OST0007 lost"
    card_part = tiered.parts[1]
    assert type(card_part).__name__ == "_JoinedLines" and len(card_part.parts) == 2
    single = mpscan.build("hyperscan", dataclasses.replace(c.patterns, parts=()))
    lines = _stress_lines(factory.with_cards(base, factory.read_factory(root).rules), 23, 3000)
    lines += [b"kernel: Xid 4242 on gpu 3", b"Xid 5151 fell off the bus", b"Lustre OST0007 lost", b"XID 79 SEEN"]
    starts, hits = _hits(tiered, c, lines)
    assert (starts, hits) == _hits(single, c, lines)
    assert not any("4242" in h for h in hits[-4])  # a keyword no card holds any more: never reported
    assert any(h.startswith("Xid 5151") for h in hits[-3]) and any(h.startswith("Lustre OST") for h in hits[-2])
    _, again = finder()  # the next process loads the delta database too: nothing compiled
    assert compiled == [count, 2] and type(again.parts[1]).__name__ == "_JoinedLines"
