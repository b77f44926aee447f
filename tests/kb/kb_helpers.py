"""Shared helpers of the knowledge-base tests."""

from __future__ import annotations

import warnings

from pytest_faildiag.rules import Rule, _builtin_packs, build_ruleset


def pack_rules(pack: str) -> list[Rule]:
    """The rules of one built-in pack, loaded with the others as the engine loads them; a warning that
    names the pack fails the caller (a malformed pack is skipped with a warning, never silently)."""
    packs = _builtin_packs()
    assert pack in {name for name, _ in packs}, f"{pack} is not a built-in pack"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = build_ruleset(packs)
    assert not [w for w in caught if pack in str(w.message)], [str(w.message) for w in caught]
    return [r for r in rs.rules if r.pack == pack]


def top3(diag) -> list[str]:
    """The first three distinct categories, as the accuracy bench counts them."""
    out: list[str] = []
    for rc in diag.root_causes:
        if rc.category not in out:
            out.append(rc.category)
    return out[:3]
