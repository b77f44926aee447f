"""pytest's report forms the scanner reads (kscan2): ``--tb=long`` entries before the innermost
(``path.py:N: `` alone, below their code: _pytest/_code/code.py's ReprFileLocation with an empty message)
and the exceptions pytest's ``E   `` lines print whose classes are not named ``…Error``/``…Exception``:
pytest's outcomes (``Failed`` of ``pytest.fail``; _pytest/outcomes.py prints them unqualified),
``StopIteration`` and a warning raised under ``-W error``. Each shown on real pytest output made here
(pytester runs, and stored runs under ``fixtures_kscan2/``: pytest 9.2 alone and under torchrun ``--tee 3``,
whose ``[default0]:`` prefix is before every line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine import reason
from pytest_faildiag.parse.scan import ScanResult, raised_line, scan_text
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import top3, train_log_path, train_log_without_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures_kscan2"
SOURCE = (FIXTURES / "cases_source.py.txt").read_text()
MANAGEIQ = "pytest_python/manageiq_module_fixture_uses_function_provider_scopemismatch"


@pytest.fixture(scope="module")
def rs():
    return load_ruleset()


def _scan(rs, text: str) -> ScanResult:
    scan = ScanResult()
    scan_text(text, "log", rs, scan)
    return scan


def _facts(rs, text: str):
    scan = _scan(rs, text)
    return scan, reason._pytest_facts(scan, rs.reasoning)


def _run(pytester: pytest.Pytester, *args: str) -> str:
    pytester.makepyfile(test_cases=SOURCE)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:faildiag", *args)
    return "\n".join(res.outlines + res.errlines)


def _sites(scan: ScanResult) -> list[tuple[int, str]]:
    return [(site.line, exc) for _s, _l, site, exc in scan.pytest_locations]


def test_long_entry_before_innermost_is_a_frame(pytester: pytest.Pytester, rs) -> None:
    text = _run(pytester, "--tb=long", "-k", "test_key")
    assert "test_cases.py:36:" in text
    scan, (exc, msg, frames, _src, _line) = _facts(rs, text)
    assert _sites(scan) == [(36, ""), (33, "KeyError")]  # the caller's entry, then the raise site
    assert (exc, msg) == ("KeyError", "'k'")
    assert [f.line for f in frames] == [36, 33]


def test_long_entries_behind_torchrun_prefix_stored_run(rs) -> None:
    scan, (exc, _msg, frames, _src, _line) = _facts(rs, (FIXTURES / "torchrun_long_key.log").read_text())
    assert _sites(scan) == [(36, ""), (33, "KeyError")]
    assert exc == "KeyError" and [f.line for f in frames] == [36, 33]


def test_pytest_fail_long_stored_run(rs) -> None:
    scan, (exc, msg, frames, _src, _line) = _facts(rs, (FIXTURES / "long_test_fail.log").read_text())
    assert (exc, msg) == ("Failed", "value was 3")  # not the E line's text with its indent
    assert [f.line for f in frames] == [21, 18]


@pytest.mark.parametrize(
    ("case", "exc", "msg"),
    [
        ("test_fail", "Failed", "value was 3"),
        ("test_kbd", "StopIteration", "done"),
        ("test_warn", "DeprecationWarning", "old api"),
    ],
)
@pytest.mark.parametrize("tb", ["short", "line"])
def test_e_line_classes_named_otherwise(pytester: pytest.Pytester, rs, tb: str, case: str, exc: str, msg: str) -> None:
    text = _run(pytester, f"--tb={tb}", "-W", "error::DeprecationWarning", "-k", case)
    scan, (got, got_msg, frames, _src, _line) = _facts(rs, text)
    assert (got, got_msg) == (exc, msg)
    if tb == "short":
        assert frames and frames[-1].func in ("helper", case)
        # the short summary's ``FAILED id - DeprecationWarning: old api`` repeats the E line: no second exception
        assert not [t for t in scan.tracebacks if t.exc_type == exc]


def test_native_traceback_outcome_message(pytester: pytest.Pytester, rs) -> None:
    text = _run(pytester, "--tb=native", "-k", "test_fail")
    scan = _scan(rs, text)
    last = [t for t in scan.tracebacks if t.exc_type][-1]
    assert (last.exc_type, last.message) == ("Failed", "value was 3")


def test_outcome_names_only_on_e_lines() -> None:
    # printed alone (a CI tool's ``Failed: 3``), such a line is no exception; on an E line it is
    assert raised_line("Failed: value was 3") == ("Failed", "value was 3")
    assert raised_line("RemovedInPytest4Warning: Fixture called directly") is not None
    from pytest_faildiag.parse.scan import exception_line

    assert exception_line("Failed: 3") is None
    assert exception_line("DeprecationWarning: old api") is None


def test_pytest4_fixture_called_directly_train_log(rs) -> None:
    # pytest 4 raised its RemovedInPytest4Warning as the collection error: the E line names it
    text = train_log_path("pytest_python/py_collection_error_fixture_called_directly_pytest4_pyhf").read_text()
    _scan_, (exc, msg, _frames, _src, _line) = _facts(rs, text)
    assert exc is not None and exc.endswith("RemovedInPytest4Warning")
    assert "called directly" in msg


def test_scope_mismatch_read_as_the_exception(pytester: pytest.Pytester, rs) -> None:
    # pytest 9 prints ``ScopeMismatch: You tried to access the function scoped fixture …`` at the report's margin
    for tb in ("long", "short"):
        scan = _scan(rs, _run(pytester, f"--tb={tb}", "-k", "test_scope"))
        assert [t.exc_type for t in scan.tracebacks if t.exc_type] == ["ScopeMismatch"]
        assert scan.tracebacks[0].message.startswith("You tried to access the function scoped fixture")


def test_scope_mismatch_without_rules_train_log() -> None:
    # pytest 2.x under Python 2.7 printed the same line: without the rule that knows it, its family says test_code
    diag, label = train_log_without_rules(MANAGEIQ)
    assert label["category"] == "test_code"
    assert top3(diag)[0] == "test_code"
