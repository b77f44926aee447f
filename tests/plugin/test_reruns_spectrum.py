"""``--faildiag-cov``: the session's per-test coverage (real ``coverage``) ranks lines by Ochiai over the passing
and failing tests; real pytest sessions through ``pytester``, real git for the "changed" mark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import entry_for, git, session_index

pytestmark = pytest.mark.usefixtures("isolated")

CART = """def total(items):
    out = 0
    for price, qty in items:
        if qty > 2:
            out += price * qty
        else:
            out += price * qty
    return out


def count(items):
    return len(items)
"""
TESTS = """
from shop.cart import count, total

def test_small():
    assert total([(2, 1), (1, 2)]) == 4

def test_bulk():
    assert total([(2, 3)]) == 6

def test_bulk_many():
    assert total([(1, 5), (1, 1)]) == 6

def test_count():
    assert count([1, 2]) == 2
"""


def _project(pytester: pytest.Pytester) -> Path:
    pytester.mkpydir("shop")
    cart = pytester.path / "shop" / "cart.py"
    cart.write_text(CART)
    pytester.makepyfile(test_cart=TESTS)
    (pytester.path / ".gitignore").write_text("faildiag-out/\n__pycache__/\n")
    return cart


def _report(root: Path, entry: dict) -> dict:
    return json.loads((root / "faildiag-out" / entry["slug"] / "report.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("xdist", [False, True])
def test_the_line_only_failing_tests_ran_ranks_first(
    pytester: pytest.Pytester, xdist: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAILDIAG_RERUN", raising=False)  # the plugin's default: the green run is recorded
    cart = _project(pytester)
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-qm", "green")
    pytester.runpytest("--faildiag", "-p", "no:cacheprovider").assert_outcomes(passed=4)  # records the green run
    cart.write_text(
        CART.replace(
            "            out += price * qty\n        else", "            out += price * (qty - 1)\n        else"
        )
    )
    args = ["--faildiag", "--faildiag-cov", "--faildiag-rerun", "0", "-p", "no:cacheprovider"]
    result = pytester.runpytest_subprocess(*args, *(["-n", "2"] if xdist else []))
    result.assert_outcomes(failed=2, passed=2)  # the outcome is pytest's
    result.stdout.fnmatch_lines(
        [
            "faildiag suspicious lines (Ochiai over 2 failing and 2 passing tests):",
            "  shop/cart.py:5 Ochiai 1.00 (run by 2 of 2 failing and 0 of 2 passing tests, changed since the last "
            "green run)",
            "  shop/cart.py:2 Ochiai 0.82 (run by 2 of 2 failing and 1 of 2 passing tests)",
        ]
    )
    assert "test_cart.py:" not in result.stdout.str().split("faildiag suspicious lines")[-1].split("=====")[0]
    entry = entry_for(session_index(pytester.path), "test_bulk")
    assert entry["spectrum"][0] == {
        "file": "shop/cart.py",
        "line": 5,
        "score": 1.0,
        "failed": 2,
        "passed": 0,
        "changed": True,
    }
    assert {s["line"] for s in entry["spectrum"]} <= {2, 3, 4, 5, 8}  # count() ran only in a passing test
    evidence = _report(pytester.path, entry)["root_causes"][0]["evidence"][-1]
    assert evidence["kind"] == "hypothesis" and evidence["excerpt"].startswith("shop/cart.py:5 Ochiai 1.00")
    assert _report(pytester.path, entry)["spectrum"] == entry["spectrum"]


def test_without_the_option_nothing_is_measured(pytester: pytest.Pytester) -> None:
    _project(pytester)
    (pytester.path / "shop" / "cart.py").write_text(CART.replace("price * qty\n        else", "0\n        else"))
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "0", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2, passed=2)
    assert "suspicious lines" not in result.stdout.str()
    assert not (pytester.path / "faildiag-out" / ".faildiag-cov").exists()
    assert "spectrum" not in entry_for(session_index(pytester.path), "test_bulk")
