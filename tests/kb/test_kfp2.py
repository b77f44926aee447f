"""kfp2: a traceback a program printed and handled is no failure; error words inside identifiers are no error.

The logs under tests/data/kb/kfp2/ are real outputs (see its README). A traceback logged under a record below
ERROR (``logger.warning(..., exc_info=True)``, absl's ``W…``, pytest's captured ``WARNING  name:file:N``) or
printed in pytest's PASSES section is kept apart from the evidence (``ScanResult.handled_tracebacks``); it
counts only when the run failed and nothing else says how (``settle_handled``). ``logger.exception`` (ERROR)
still counts, and so does the unhandled traceback a program dies of after logging the same error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse.scan import ScanResult, scan_file, scan_text
from pytest_faildiag.rules import load_ruleset

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kfp2"


def _scan(name: str) -> ScanResult:
    res = ScanResult()
    scan_file(str(DATA / name), name, load_ruleset(), res)
    return res


def _diag(name: str, exit_code: int):
    return diagnose([str(DATA / name)], exit_code=exit_code, factory_root=False)


def _rule_causes(d) -> list[str]:
    ids = {r.id for r in load_ruleset().rules}
    return [c.rule for c in d.root_causes if c.rule in ids]


@pytest.mark.parametrize(
    ("name", "handled"),
    [
        ("warn_exc_exit0.log", ["ConnectionResetError", "json.decoder.JSONDecodeError"]),
        ("absl_warn_exc_exit0.log", ["FileNotFoundError"]),
        ("pytest_rA_pass_handled.log", ["TimeoutError", "ValueError"]),
    ],
)
def test_a_healthy_run_s_handled_tracebacks_are_no_evidence(name, handled):
    res = _scan(name)
    assert not res.tracebacks
    assert [t.exc_type for t in res.handled_tracebacks] == handled
    assert not res.error_lines, res.error_lines
    d = _diag(name, 0)
    assert not _rule_causes(d), _rule_causes(d)
    assert not any(c.summary.startswith(tuple(handled)) for c in d.root_causes)
    assert d.profile.type not in ("hang", "communication")


def test_the_catalogue_rule_of_a_handled_error_names_no_cause():
    """Before kfp2 the INFO-logged JSONDecodeError fired data.json_malformed on a run that exited 0."""
    res = _scan("warn_exc_exit0.log")
    assert any(f.rule.id == "data.json_malformed" for f in res.handled_findings)
    assert not any(f.rule.id == "data.json_malformed" for f in res.findings)


def test_pytest_passes_section_is_not_the_failure():
    """The failing test's AssertionError is the diagnosis, not the TimeoutError a passing test logged (before
    kfp2: proc.timeout_exit, a hang)."""
    d = _diag("pytest_rA_fail_after_handled.log", 1)
    assert d.profile.type == "runtime_error"
    assert "AssertionError" in d.root_causes[0].summary, d.root_causes[0].summary
    assert "proc.timeout_exit" not in _rule_causes(d)


def test_a_handled_error_then_another_failure():
    res = _scan("warn_exc_then_other_failure.log")
    assert [t.exc_type for t in res.tracebacks] == ["KeyError"]
    d = _diag("warn_exc_then_other_failure.log", 1)
    assert "py.file_not_found" not in _rule_causes(d)
    assert "KeyError" in d.root_causes[0].summary


def test_a_handled_error_then_death_by_the_same_error_keeps_the_real_one():
    res = _scan("warn_exc_then_same_failure.log")
    assert len(res.handled_tracebacks) == 2
    assert [t.exc_type for t in res.tracebacks] == ["ConnectionRefusedError"]
    d = _diag("warn_exc_then_same_failure.log", 1)
    assert d.profile.type == "communication"
    assert d.root_causes[0].category == "communication"


def test_logger_exception_is_evidence():
    res = _scan("exception_logged_exit1.log")
    assert [t.exc_type for t in res.tracebacks] == ["ModuleNotFoundError"]
    assert not res.handled_tracebacks
    d = _diag("exception_logged_exit1.log", 1)
    assert _rule_causes(d)[:1] == ["py.module_not_found"]


@pytest.mark.parametrize("exit_code", [1, None])
def test_a_failing_run_whose_only_traceback_was_handled_keeps_it(exit_code):
    """The only exception the program logged before giving up: a best effort beats `unknown`."""
    d = _diag("warn_exc_only_exit1.log", exit_code)
    assert d.profile.type == "runtime_error"
    assert "ValueError" in d.root_causes[0].summary, d.root_causes[0].summary


def test_the_same_run_that_exited_0_has_no_diagnosis_from_it():
    d = _diag("warn_exc_only_exit1.log", 0)
    assert not any("ValueError" in c.summary for c in d.root_causes)


@pytest.mark.parametrize("name", ["identifiers_exit0.log", "importtime_asyncio.log", "pytest_rA_pass_handled.log"])
def test_error_words_inside_identifiers_are_no_error_lines(name):
    res = _scan(name)
    assert not res.error_lines, res.error_lines
    d = _diag(name, 0)
    assert d.profile.type == "unknown" or name.startswith("pytest"), d.profile


def test_error_words_that_report_an_error_still_do():
    text = "\n".join(
        [
            "plugins: xdist-3.8.0, timeout-2.4.0",  # a package's versioned name: no error
            "import time:       551 |        551 |   asyncio.timeouts",
            "Timeout waiting for the rendezvous after 900 s",
            "RuntimeError: CUDA_ERROR_OUT_OF_MEMORY",
            "the read timed out after 30 s",
            "request failed with error code 502",
            "2 errors during collection",
            "fatal: not a git repository",
            "error handling: retries on",
        ]
    )
    res = ScanResult()
    scan_text(text, "t", load_ruleset(), res)
    got = {t for _s, _n, t in res.error_lines}
    assert "Timeout waiting for the rendezvous after 900 s" in got
    assert "the read timed out after 30 s" in got
    assert "request failed with error code 502" in got
    assert "2 errors during collection" in got
    assert "fatal: not a git repository" in got
    assert not any("timeout-2.4.0" in t or "asyncio.timeouts" in t or "error handling" in t for t in got), got


def test_a_traceback_under_an_error_record_or_a_plain_line_still_counts():
    text = "\n".join(
        [
            "2026-12-02 04:40:57,679 ERROR loader: could not load the shard",
            "Traceback (most recent call last):",
            '  File "/home/user/a.py", line 3, in <module>',
            "    load()",
            "OSError: [Errno 5] Input/output error",
            "step 10 loss=0.5",
            "Traceback (most recent call last):",
            '  File "/home/user/a.py", line 9, in <module>',
            "    run()",
            "RuntimeError: boom",
        ]
    )
    res = ScanResult()
    scan_text(text, "t", load_ruleset(), res)
    assert [t.exc_type for t in res.tracebacks] == ["OSError", "RuntimeError"]
    assert not res.handled_tracebacks


def test_a_chained_sequel_of_a_handled_traceback_is_handled_too():
    """logging prints the whole chain of a record's exc_info (the cause, the chain header, the exception)."""
    text = "\n".join(
        [
            "WARNING:cache:falling back to a cold start",
            "Traceback (most recent call last):",
            '  File "/home/user/a.py", line 3, in load',
            "    return json.load(f)",
            "KeyError: 'step'",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            '  File "/home/user/a.py", line 7, in <module>',
            "    load()",
            "ValueError: bad cache",
            "INFO:train:epoch 1",
        ]
    )
    res = ScanResult()
    scan_text(text, "t", load_ruleset(), res)
    assert not res.tracebacks
    assert [t.exc_type for t in res.handled_tracebacks] == ["KeyError", "ValueError"]
