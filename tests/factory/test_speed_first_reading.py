"""A factory's first reading (issue 17) is made cheaper by reading cards through a one-regex fast path,
deriving the Hyperscan keywords from the rules and making the Python keyword lookup only when Python
searches a line. None of that may change a finding: a factory of many cards of varied signatures (exact,
case-folded, alternatives, keywords without a whole word) gives the same diagnosis through Hyperscan and
through Python's re, on its first reading and from its index."""

from __future__ import annotations

import threading

import pytest

from pytest_faildiag import factory as F
from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse import mpscan, scan
from pytest_faildiag.rules import load_ruleset

from .conftest import write_factory

pytest.importorskip("hyperscan")

TEMPLATES = [
    # (signature, a line it matches)
    (
        "ERR{i:04d}: storage lease expired for job \\\\d+ on partition \\\\S+",
        "ERR{i:04d}: storage lease expired for job 77 on partition p3",
    ),
    ("(?i)quota{i:04d} EXCEEDED for account \\\\w+", "QUOTA{i:04d} exceeded FOR ACCOUNT ml_team"),
    ("Xid {i}: GPU fell off the bus|Xid {i}: GPU lost", "[kernel] Xid {i}: GPU lost on node 4"),
    ("(?i)zq{i:04d}", "ZQ{i:04d}"),  # a case-folded keyword without a whole word: folded too
    ("NFS server n{i}:/export not responding", "kernel: NFS server n{i}:/export not responding, still trying"),
]
CATS = ["environment", "harness", "dataset", "hardware", "resource"]


def _factory(root, count: int = 250) -> list[str]:
    """``count`` cards; returns the log lines that some of them match."""
    cards, lines = {}, []
    for i in range(count):
        sig, line = TEMPLATES[i % len(TEMPLATES)]
        sig, line = sig.format(i=i), line.format(i=i)
        cards[f"{CATS[i % len(CATS)]}/c{i:04d}.md"] = (
            f'+++\nid = "team-{i:04d}"\ntitle = "known issue {i}"\nsignatures = ["{sig}", "never seen {i} \\\\d+"]\n'
            f'category = "{CATS[i % len(CATS)]}"\nfix_hints = ["see runbook {i}"]\n+++\nwrite-up\n'
        )
        if i % 37 == 0:
            lines.append(line)
    write_factory(root, cards)
    return lines


def _log(tmp_path, lines: list[str]):
    noise = [f"step {i} | loss 2.{i % 97:02d} | lr 3.0e-04 | storage ok | quota fine | Xid none" for i in range(3000)]
    body = noise[:1000] + lines[: len(lines) // 2] + noise[1000:] + lines[len(lines) // 2 :]
    failure = [
        "Traceback (most recent call last):",
        '  File "/work/train.py", line 10, in <module>',
        "RuntimeError: NCCL communicator was aborted on rank 3",
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(body + failure) + "\n", encoding="utf-8")
    return log


def _report(log, root):
    d = diagnose([str(log)], exit_code=1, factory_root=root)
    causes = [(c.id, c.category, round(c.confidence, 6)) for c in d.root_causes]
    return causes, d.extra.get("factory")


def test_first_reading_index_and_both_engines_give_the_same_findings(tmp_path, monkeypatch):
    root = tmp_path / "factory"
    lines = _factory(root)
    log = _log(tmp_path, lines)
    monkeypatch.setattr(mpscan, "MIN_BYTES", 0)
    reports = {}
    for engine in ("hyperscan", "python"):
        monkeypatch.setenv(mpscan.ENGINE_ENV, engine)
        for reading in ("first", "index"):
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"cache-{engine}"))
            F._MEMO.entries.clear()  # a fresh process: the factory read again (first) or from its index
            reports[engine, reading] = _report(log, root)
    first = reports["hyperscan", "first"]
    assert all(r == first for r in reports.values()), reports
    cited = {e["id"] for e in first[1] or []}
    assert len(cited) == len(lines) and len(cited) >= 6  # every card a line matches is cited, each kind of keyword
    assert {"team-0000", "team-0074", "team-0148", "team-0111", "team-0222"} <= cited


def test_the_engine_searches_for_exactly_the_keywords_of_the_python_lookup(tmp_path):
    """``hit_keywords`` is made from the rules alone (no lookup tables on a first reading): it names the
    very keywords, in the very case modes, that the lookup tables search for. A case-folded keyword
    without a whole word is folded in both (it was looked for in lower case only, so ``(?i)zq0148``
    never met ``ZQ0148``)."""
    root = tmp_path / "factory"
    _factory(root)
    fac = F.read_factory(root)
    matcher = F.CardKeywords(None, fac.rules)
    hits = matcher.hit_keywords()
    assert matcher._tables is None  # not made for that
    t = matcher.tables
    expected = {(kw, False) for v in t.anchors.values() for kw in v}
    expected |= {(kw, True) for v in t.folded.values() for kw in v}
    expected |= {(kw, False) for kw in t.partial} | {(kw, True) for kw in t.folded_partial}
    assert {(kw, fold) for kw, fold, _ in hits} == expected
    assert len(hits) == len(expected) and t.folded and t.folded_partial


def test_an_edited_factory_gives_the_findings_of_a_fresh_reading(tmp_path, monkeypatch):
    """After cards changed, the next diagnosis takes the unchanged cards from the index and scans with the
    cards' last full database plus a delta of the new keywords: the same findings as a fresh reading of
    the changed factory, and as Python's re."""
    root = tmp_path / "factory"
    lines = _factory(root)
    log = _log(tmp_path, [*lines, "kernel: Zeta9999 fell over expired for job 5 on partition p1"])
    monkeypatch.setattr(mpscan, "MIN_BYTES", 0)
    monkeypatch.setattr(mpscan, "TIER_FROM", 1)  # tiered from the first literal, not from thousands
    monkeypatch.setenv(mpscan.ENGINE_ENV, "hyperscan")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    F._MEMO.entries.clear()
    before = _report(log, root)
    card = root / "environment" / "c0000.md"
    card.write_text(card.read_text(encoding="utf-8").replace("ERR0000: storage lease", "Zeta9999 fell over"))
    (root / "dataset" / "c0037.md").unlink()
    compiled: list[int] = []
    real = mpscan._compile
    monkeypatch.setattr(mpscan, "_compile", lambda hs, e, f, lit: compiled.append(len(e)) or real(hs, e, f, lit))
    F._MEMO.entries.clear()
    edited = _report(log, root)
    assert compiled == [1]  # "Zeta9999 fell ov": the only keyword the stable database lacks
    reports = {"edited": edited}
    for engine in ("hyperscan", "python"):
        monkeypatch.setenv(mpscan.ENGINE_ENV, engine)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"cache-fresh-{engine}"))
        F._MEMO.entries.clear()
        reports[engine] = _report(log, root)
    assert reports["edited"] == reports["hyperscan"] == reports["python"], reports
    cited = {e["id"] for e in edited[1] or []}
    assert {"team-0000", "team-0074"} <= cited and "team-0037" not in cited
    assert cited != {e["id"] for e in before[1] or []}


def test_a_new_factorys_card_database_compiles_on_another_thread_with_the_same_findings(tmp_path, monkeypatch):
    """A first reading starts the cards' database compiling on a thread (Hyperscan compiles without the
    GIL) before the index is written; the scan waits for it at its first block. The findings are those of
    Python's re; a factory read from its index starts no thread; a card database that fails to build
    leaves Python's re to search the whole alternation, with the same findings again."""
    root = tmp_path / "factory"
    log = _log(tmp_path, _factory(root))
    monkeypatch.setattr(mpscan, "MIN_BYTES", 0)
    monkeypatch.setenv(mpscan.ENGINE_ENV, "python")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-python"))
    F._MEMO.entries.clear()
    expected = _report(log, root)
    monkeypatch.setenv(mpscan.ENGINE_ENV, "hyperscan")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    diagnose([str(log)], exit_code=1, factory_root=False)  # what any earlier diagnosis leaves: the built-in database
    threads: list[str] = []  # where the cards' literals compiled
    real = mpscan._compile

    def compile_(hs, exprs, flags, literal):
        if literal:  # (the built-in database may compile here too: once per process, cached on disk or not)
            threads.append(threading.current_thread().name)
        return real(hs, exprs, flags, literal)

    monkeypatch.setattr(mpscan, "_compile", compile_)
    F._MEMO.entries.clear()
    base = load_ruleset()
    rs, _, _ = F.attach(base, root)
    assert type(scan.compiled(rs).engines["hyperscan"]).__name__ == "_Soon"
    assert _report(log, root) == expected
    assert threads == ["faildiag-card-database"]
    F._MEMO.entries.clear()  # a fresh process: from the index, the database from the cache
    rs, _, _ = F.attach(base, root)
    assert "hyperscan" not in scan.compiled(rs).engines
    assert _report(log, root) == expected and len(threads) == 1

    def refuse(hs, exprs, flags, literal):
        if literal:
            raise RuntimeError("the engine refuses the cards' literals")
        return real(hs, exprs, flags, literal)

    monkeypatch.setattr(mpscan, "_compile", refuse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-refused"))
    F._MEMO.entries.clear()
    rs, _, _ = F.attach(base, root)
    assert type(scan.compiled(rs).engines["hyperscan"].get()).__name__ == "_Re2Lines"
    assert _report(log, root) == expected


def test_two_threads_scanning_while_the_card_database_compiles_each_get_their_own_blocks_lines(tmp_path, monkeypatch):
    """The first scan builds the built-in part and scans its own block with it while the cards' part
    compiles; another thread scanning another block meanwhile gets that block's lines, never the first's."""
    root = tmp_path / "factory"
    lines = _factory(root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    rs = F.with_cards(load_ruleset(), F.read_factory(root).rules, root=root)
    patterns = scan.compiled(rs).patterns
    blocks = [
        ("\n".join([*lines[::2], "step 1 | loss 2.0", "RuntimeError: CUDA out of memory"]) + "\n").encode(),
        ("\n".join(["noise line", *lines[1::2], "NCCL WARN timeout"]) + "\n").encode(),
    ]
    expected = [mpscan.build("hyperscan", patterns).scan(b) for b in blocks]
    for _ in range(3):
        soon = mpscan.build_soon("hyperscan", patterns)
        assert type(soon).__name__ == "_Soon"
        got: list[object] = [None, None]
        start = threading.Barrier(2)

        def scan_block(i: int, soon=soon, got=got, start=start) -> None:
            start.wait()
            got[i] = soon.scan(blocks[i])

        workers = [threading.Thread(target=scan_block, args=(i,)) for i in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert got == expected
        assert expected[0][0] and expected[1][0] and expected[0][1] and expected[1][1]
