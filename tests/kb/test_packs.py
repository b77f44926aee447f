"""The rule packs themselves: they load cleanly, every cause is actionable and names checks that exist,
and the knowledge-base packs keep their keywords specific enough that training-log noise stays on the
fast path."""

from __future__ import annotations

import importlib.util
import re
import sys
import warnings
from pathlib import Path

from pytest_faildiag.engine import api  # noqa: F401  (registers every built-in check)
from pytest_faildiag.engine.api import BUILTIN_CHECKS as CHECKS
from pytest_faildiag.model import CATEGORIES, TYPES
from pytest_faildiag.rules import _builtin_packs, build_ruleset, parse_pack

KB_PACKS = {"45-ecosystem.toml", "50-ascend.toml", "60-mindspore.toml", "70-jax.toml"}


def _bench_log(mb: float) -> str:
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_diagnose_10mb.py"
    spec = importlib.util.spec_from_file_location("bench_diagnose_10mb", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)
    spec.loader.exec_module(mod)
    return mod.make_log(mb)


def test_it_loads_every_builtin_pack_without_a_warning():
    packs = _builtin_packs()
    assert KB_PACKS <= {name for name, _ in packs}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rs = build_ruleset(packs)
    assert len({r.pack for r in rs.rules}) == len([name for name, text in packs if "[[rule]]" in text])
    assert rs.reasoning.symptoms and rs.reasoning.exceptions and rs.reasoning.contexts  # 05-reasoning.toml


def test_no_pack_replaces_a_rule_of_another_by_accident():
    """A later pack may replace a rule by id (that is how third parties override); the built-in ones never do."""
    seen: dict[str, str] = {}
    for name, text in _builtin_packs():
        for r in parse_pack(text, name)[0]:
            assert r.id not in seen, f"{r.id} in {name} replaces the rule of {seen[r.id]}"
            seen[r.id] = name


def test_it_gives_every_cause_a_fix_hint_a_known_category_and_existing_checks():
    rs = build_ruleset(_builtin_packs())
    for r in rs.rules:
        assert r.type is None or r.type in TYPES, r.id
        for c in r.causes:
            assert c.category in CATEGORIES, (r.id, c.id)
            assert c.fix_hints, (r.id, c.id)
            assert 0 < c.confidence <= 1, (r.id, c.id)
            missing = [name for name in c.checks if name not in CHECKS]
            assert not missing, (r.id, c.id, missing)
            if c.kind == "hypothesis":
                assert c.reason, (r.id, c.id)


def test_it_keeps_knowledge_base_keywords_off_ordinary_training_log_lines():
    rs = build_ruleset(_builtin_packs())
    kb_keywords = sorted({k for r in rs.rules if r.pack in KB_PACKS for k in r.keywords})
    regex = re.compile("|".join(re.escape(k) for k in kb_keywords))
    lines = _bench_log(1.0).splitlines()[:-30]  # the noise, without the real failure at the end
    hits = [ln for ln in lines if regex.search(ln)]
    assert len(hits) <= 0.001 * len(lines), hits[:5]


def test_it_finds_no_known_signature_in_a_healthy_training_log():
    from pytest_faildiag.engine.api import diagnose

    noise = "\n".join(_bench_log(0.5).splitlines()[:-30])
    diag = diagnose(texts={"train.log": noise}, exit_code=0)
    assert all(c.rule == "fallback" for c in diag.root_causes), [(c.id, c.rule) for c in diag.root_causes]


def test_a_malformed_reasoning_table_is_skipped_with_a_warning_and_the_rest_stays():
    bad = ("99-bad.toml", '[[frame_stage]]\nstage = "data"\n')  # neither func nor file: it would match nothing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = build_ruleset(_builtin_packs() + [bad])
    assert any("99-bad.toml" in str(w.message) and "func or file" in str(w.message) for w in caught)
    assert rs.reasoning.frame_stages and rs.reasoning.symptoms  # the built-in tables are all there
