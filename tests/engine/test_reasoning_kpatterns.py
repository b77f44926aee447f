"""The texts ``engine/reason.py`` reads by name (kpatterns): a library's or a tool's words are data, the ``[patterns]``
table of ``rules/05-reasoning.toml``, read through ``_text(reasoning, name)`` from the run's rule set.

Each named text is checked against the message the real tool prints here (CPython, torch on the CPU, pytest through
pytester), so a text that drifts from what the tool says fails; every name the code reads must be in the built-in
table; a team's pack extends an entry through the loader (``'<<name>>|…'``)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from pytest_faildiag.engine import reason
from pytest_faildiag.engine.reason import _text
from pytest_faildiag.rules import Reasoning, _builtin_packs, build_ruleset, load_ruleset

READS = re.compile(r'_text\(\s*(?:rs\.)?reasoning,\s*"(\w+)"\s*\)')


def _words(name: str) -> re.Pattern[str]:
    return _text(load_ruleset().reasoning, name)


def _message(call) -> str:  # type: ignore[no-untyped-def]
    try:
        call()
    except Exception as exc:  # noqa: BLE001 (the real message is the point)
        return str(exc)
    raise AssertionError("the call did not raise")


def test_every_name_the_code_reads_is_in_the_builtin_table() -> None:
    names = set(READS.findall(Path(reason.__file__).read_text(encoding="utf-8")))
    assert len(names) >= 30, names
    table = load_ruleset().reasoning.patterns
    assert not names - set(table), names - set(table)


def test_a_rule_set_without_the_entry_never_matches_and_a_team_pack_extends_it() -> None:
    assert _text(Reasoning(), "str_decode").search("'str' object has no attribute 'decode'") is None
    team = ("99-team.toml", "[patterns]\nstr_decode = '<<str_decode>>|our loader cannot read attribute'\n")
    rs = build_ruleset([*_builtin_packs(), team])
    assert _text(rs.reasoning, "str_decode").search("our loader cannot read attribute 'x'")
    assert _text(rs.reasoning, "str_decode").search("'str' object has no attribute 'decode'")


def test_cpython_messages() -> None:
    def import_missing() -> None:
        __import__("faildiag_no_such_module_kpatterns")

    m = _words("missing_module").search(_message(import_missing))
    assert m and m["a"] == "faildiag_no_such_module_kpatterns"

    def import_name() -> None:
        exec("from json import faildiag_no_such_name", {})

    m = _words("module_lacks_name").search(_message(import_name))
    assert m and m["b"] == "json"
    m = _words("object_has_no_attribute").search(_message(lambda: (1).faildiag_attr))  # type: ignore[attr-defined]
    assert m and m["cls"] == "int"
    assert _words("str_decode").search(_message(lambda: "x".decode("utf8")))  # type: ignore[attr-defined]
    assert not _words("str_decode").search(_message(lambda: (1).decode("utf8")))  # type: ignore[attr-defined]

    class Model:
        def __init__(self) -> None:
            pass

    assert _words("constructor_signature").search(_message(lambda: Model(1)))  # type: ignore[call-arg]
    assert _words("constructor_signature").search(_message(lambda: Model(depth=1)))  # type: ignore[call-arg]

    def step(batch: int) -> int:
        return batch

    assert _words("signature_missing").search(_message(lambda: step()))  # type: ignore[call-arg]
    assert _words("pickle_refused").search(_message(lambda: pickle.dumps(lambda: 0)))


def test_torch_messages_on_the_cpu() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate

    conv = torch.nn.Conv2d(3, 8, 3)
    m = _words("conv_channels").search(_message(lambda: conv(torch.zeros(1, 4, 8, 8))))
    assert m and (m["want"], m["got"]) == ("3", "4")
    assert _words("stack_unequal").search(_message(lambda: torch.stack([torch.zeros(2), torch.zeros(3)])))
    assert _words("collate_unequal").search(_message(lambda: default_collate([[1, 2], [1]])))
    report = _message(lambda: torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])))
    a, r = _words("torch_close_abs").search(report), _words("torch_close_rel").search(report)
    assert a and r and float(a["v"]) == pytest.approx(0.5) and float(r["v"]) == pytest.approx(0.2), report


def test_pytest_reports(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fix="def test_a(faildiag_missing_fixture):\n    pass\n",
        test_broken="import faildiag_no_such_module_kpatterns\n",
    )
    res = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider", "--continue-on-collection-errors")
    out = "\n".join(res.outlines)
    m = _words("fixture_not_found").search(out)
    assert m and m["name"] == "faildiag_missing_fixture", out
    lines = [m["names"] for line in res.outlines if (m := _words("available_fixtures").search(line))]
    assert lines and "tmp_path" in lines[0], out
    assert _words("pytest_collect_header").search(out), out
    assert _words("pytest_setup_header").search(out), out
    assert _words("test_runner_words").search(out), out
    assert not _words("pytest_internalerror").search(out)
