"""The engine names a line's keywords itself (issue 14): where Hyperscan scanned a block, the scanner takes
each line's keyword hits from the engine's reports instead of running the keyword alternation on the
line. Both must give the same hits on every line: the whole knowledge base, team cards (anchored, folded
and anchor-less keywords), keywords inside keywords, mixed case, non-ASCII text and lines whose text is
not their bytes (ANSI colours, a carriage return, invalid UTF-8)."""

from __future__ import annotations

import random

import pytest

from pytest_faildiag import factory
from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse import mpscan, scan
from pytest_faildiag.parse.logread import _visible
from pytest_faildiag.rules import _builtin_packs, build_ruleset

pytest.importorskip("hyperscan")

CARDS = {
    "oom.md": ("oom", ["(?i)CUDA error: out of memory on (\\w+)", "OutOfMemoryErr"], "resource"),
    "xid.md": ("xid", ["(?i)xid 79 seen", "Xid 4242"], "hardware"),
    "nccl.md": ("nccl", ["NCCL WARN Net/IB : Got completion", "ncclInternalError: (\\w+)"], "communication"),
    "code.md": ("code", ["ERROR:4242", "E:9-9-9 quota", "(?i)BUS error at"], "hardware"),
}


def _factory(root):
    for name, (cid, sigs, cat) in CARDS.items():
        quoted = ", ".join('"' + s.replace("\\", "\\\\") + '"' for s in sigs)
        (root / name).write_text(
            f'+++\nid = "{cid}"\ntitle = "t {cid}"\nsignatures = [{quoted}]\ncategory = "{cat}"\n+++\nbody\n',
            encoding="utf-8",
        )
    return root


# keywords that start alike in both case modes, which the built-in packs happen not to have
PROBE_PACK = """
[[rule]]
id = "probe.exact"
keywords = ["QzxAlpha", "Widget", "WIDGET"]

[[rule]]
id = "probe.folded"
ignore_case = true
keywords = ["QzxAlpha beta", "widget jam", "Widgets"]
"""


def _rule_sets(tmp_path):
    base = build_ruleset([*_builtin_packs(), ("99-probe.toml", PROBE_PACK)])
    root = _factory(tmp_path / "factory")
    fac = factory.read_factory(root)
    assert not fac.problems
    return {"built-in": base, "with cards": factory.with_cards(base, fac.rules)}


def _stress_lines(rs, seed: int, count: int) -> list[bytes]:
    """Lines made of keywords: whole, cut short, overlapping, in other cases, between words and symbols."""
    rnd = random.Random(seed)
    words = sorted({k for r in rs.rules for k in r.keywords})
    cases = [str, str.lower, str.upper, str.title, str.swapcase]
    glue = ["", " ", ": ", "x", "-", "_", "é", "  ", "/", "(", "0"]
    lines = []
    for _ in range(count):
        parts = []
        for _ in range(rnd.randrange(1, 5)):
            w = rnd.choice(words)
            w = rnd.choice(cases)(w) if rnd.random() < 0.4 else w
            if rnd.random() < 0.15:
                w = w[: rnd.randrange(1, len(w) + 1)]
            if parts and rnd.random() < 0.2:  # overlap with the previous keyword
                prev = parts.pop()
                w = prev + w[min(len(w), rnd.randrange(0, 3)) :]
            parts.append(w)
        line = rnd.choice(glue).join(parts)
        if rnd.random() < 0.05:
            line = "\x1b[31m" + line + "\x1b[0m"
        if rnd.random() < 0.03:
            line = "old text\r" + line
        raw = line.encode("utf-8")
        if rnd.random() < 0.03:
            raw = raw[:3] + b"\xff" + raw[3:]
        lines.append(raw.replace(b"\n", b" "))
    return lines + _same_start_lines(rs)


def _same_start_lines(rs) -> list[bytes]:
    """Lines where an exact keyword and a longer case-folded one start at the same place (the alternation
    takes the exact one there) and where a card's keyword is longer than both."""
    exact = sorted({k for r in rs.rules if not r.ignore_case for k in r.keywords})
    folded = sorted({k.lower() for r in rs.rules if r.ignore_case for k in r.keywords})
    out = []
    for e in exact:
        for f in folded:
            if len(f) > len(e) and f.startswith(e.lower()):
                out.append(f"at {e}{f[len(e) :]} and {e.upper()}{f[len(e) :].upper()} end".encode())
    assert len(out) >= 4
    return out


@pytest.mark.parametrize("which", ["built-in", "with cards"])
def test_the_engines_hits_are_the_alternations_on_every_line(tmp_path, which):
    (tmp_path / "factory").mkdir()
    rs = _rule_sets(tmp_path)[which]
    c = scan.compiled(rs)
    finder = mpscan.build("hyperscan", c.patterns)
    assert finder is not None and finder.keywords
    lines = _stress_lines(rs, 14, 6000)
    block = b"\n".join(lines) + b"\n"
    _, occ = finder.scan(block)
    assert occ is not None
    start = 0
    compared = with_hits = 0
    for raw in lines:
        seen = scan._seen(raw + b"\n", start, occ, finder.table)
        start += len(raw) + 1
        text = _visible(raw.decode("utf-8", "replace"))
        data = text.encode("utf-8", "replace")
        expected = scan.line_hits(c.keyword_regex, data)
        assert scan.line_hits(c.keyword_regex, data, seen) == expected, raw
        compared += 1
        with_hits += bool(expected)
    assert compared >= 6000 and with_hits > 4000  # the lines do hold keywords


def test_a_big_log_diagnosed_with_the_engine_is_the_same_as_with_pythons_re(tmp_path, monkeypatch):
    """End to end: the same stress lines (plus a real failure) as a log, diagnosed through the engine's
    hits and through Python's re alone."""
    (tmp_path / "factory").mkdir()
    rs = _rule_sets(tmp_path)["with cards"]
    lines = _stress_lines(rs, 15, 4000)
    log = tmp_path / "train.log"
    log.write_bytes(
        b"\n".join(lines)
        + b'\nTraceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    reports = {}
    for engine in ("hyperscan", "python"):
        monkeypatch.setenv(mpscan.ENGINE_ENV, engine)
        monkeypatch.setattr(mpscan, "MIN_BYTES", 0)
        d = diagnose([str(log)], exit_code=1, factory_root=tmp_path / "factory")
        reports[engine] = (
            [(c.id, c.category, round(c.confidence, 6)) for c in d.root_causes],
            d.profile.first_failure,
            d.extra.get("factory"),
        )
    assert reports["hyperscan"] == reports["python"]
    assert reports["python"][0]
