"""What the scanner compiles for a rule set belongs to that rule set: a new rule set never scans with an
old one's regex (issue #15: a cache keyed by ``id(ruleset)`` handed a new rule set the regex of a freed one
whose id was reused, and it missed its own keyword)."""

from __future__ import annotations

import dataclasses
import gc

from pytest_faildiag.parse.scan import ScanResult, compiled, scan_text
from pytest_faildiag.rules import build_ruleset

PACK = """
[[rule]]
id = "probe.{n}"
keywords = ["QZXWIDGET{n}JAM"]

[[rule.causes]]
id = "probe.cause.{n}"
category = "hardware"
confidence = 0.5
summary = "probe {n}"
"""


def test_two_hundred_rule_sets_built_in_turn_each_find_their_own_keyword() -> None:
    for n in range(200):
        rs = build_ruleset([("probe.toml", PACK.replace("{n}", str(n)))])
        result = ScanResult()
        # no structural word (error, memory, Traceback...) on the line: only the rule's keyword can select it
        scan_text(f"step {n}: QZXWIDGET{n}JAM on the line\n", "log", rs, result)
        assert [f.rule.id for f in result.findings] == [f"probe.{n}"], n
        del rs, result
        gc.collect()  # frees the rule set, so its id can be reused by the next one


def test_the_compiled_scanner_is_built_once_and_kept_on_the_rule_set() -> None:
    rs = build_ruleset([("probe.toml", PACK.replace("{n}", "1"))])
    assert rs.scanner is None
    first = compiled(rs)
    assert rs.scanner is first and compiled(rs) is first
    other = build_ruleset([("probe.toml", PACK.replace("{n}", "1"))])
    assert other == rs and compiled(other) is not first  # equal rule sets, each with its own scanner


def test_a_rule_set_made_with_replace_compiles_its_own_scanner() -> None:
    """Team cards extend a rule set with ``dataclasses.replace``: the base's scanner must not come along."""
    base = build_ruleset([("probe.toml", PACK.replace("{n}", "1"))])
    scan_text("QZXWIDGET1JAM\n", "log", base, ScanResult())  # compiles the base's scanner
    more = build_ruleset([("probe.toml", PACK.replace("{n}", "2"))])
    extended = dataclasses.replace(
        base,
        rules=[*base.rules, *more.rules],
        keyword_index={**base.keyword_index, **more.keyword_index},
        keyword_regex=more.keyword_regex,
    )
    result = ScanResult()
    scan_text("step: QZXWIDGET2JAM on the line\n", "log", extended, result)
    assert [f.rule.id for f in result.findings] == ["probe.2"]
