"""kfp2: a traceback a program printed and handled is no failure; error words inside identifiers are no error.

The logs under tests/data/kb/kfp2/ are real outputs (see its README). A traceback printed in pytest's PASSES
section, under pytest's captured-log record, or logged under a record below ERROR (``logger.warning(...,
exc_info=True)``, absl's ``W…``) when the program went on logging is kept apart from the evidence
(``ScanResult.handled_tracebacks``); it counts only when the run failed and nothing else says how
(``settle_handled``). Under a record below ERROR alone it is a "maybe" (``Traceback.handled``): a program that
dies right after it logged a line prints the same, so it stays evidence unless the run exited 0.
``logger.exception`` (ERROR) always counts, and so does the unhandled traceback a program dies of after logging
the same error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse.scan import ScanResult, scan_file, scan_text, settle_handled
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
    assert all(t.handled for t in res.tracebacks)  # a "maybe" at most
    settle_handled(res, 0)
    assert not res.tracebacks
    assert sorted(t.exc_type for t in res.handled_tracebacks) == handled
    assert not res.error_lines, res.error_lines
    d = _diag(name, 0)
    assert not _rule_causes(d), _rule_causes(d)
    assert not any(c.summary.startswith(tuple(handled)) for c in d.root_causes)
    assert d.profile.type not in ("hang", "communication")


def test_the_catalogue_rule_of_a_handled_error_names_no_cause():
    """Before kfp2 the INFO-logged JSONDecodeError fired data.json_malformed on a run that exited 0."""
    res = _scan("warn_exc_exit0.log")
    settle_handled(res, 0)
    assert any(f.rule.id == "data.json_malformed" for f in res.handled_findings)
    assert not any(f.rule.id == "data.json_malformed" for f in res.findings)


def test_under_a_record_the_program_went_on_from_is_apart_else_maybe():
    """The ConnectionResetError's record is followed by another INFO record (the retry worked): apart. The
    JSONDecodeError is followed by a plain print: a "maybe", dropped only because the run exited 0."""
    res = _scan("warn_exc_exit0.log")
    assert [t.exc_type for t in res.handled_tracebacks] == ["ConnectionResetError"]
    assert [(t.exc_type, t.handled) for t in res.tracebacks] == [("json.decoder.JSONDecodeError", True)]


def test_pytest_passes_section_is_not_the_failure():
    """The failing test's AssertionError is the diagnosis, not the TimeoutError a passing test logged (before
    kfp2: proc.timeout_exit, a hang)."""
    d = _diag("pytest_rA_fail_after_handled.log", 1)
    assert d.profile.type == "runtime_error"
    assert "AssertionError" in d.root_causes[0].summary, d.root_causes[0].summary
    assert "proc.timeout_exit" not in _rule_causes(d)


def test_a_handled_error_then_another_failure():
    """The program dies of a KeyError right under an INFO record: a "maybe" that stays evidence."""
    res = _scan("warn_exc_then_other_failure.log")
    assert [t.exc_type for t in res.handled_tracebacks] == ["FileNotFoundError"]
    assert [(t.exc_type, t.handled) for t in res.tracebacks] == [("KeyError", True)]
    d = _diag("warn_exc_then_other_failure.log", 1)
    assert "py.file_not_found" not in _rule_causes(d)
    assert "KeyError" in d.root_causes[0].summary


def test_a_handled_error_then_death_by_the_same_error_keeps_the_real_one():
    res = _scan("warn_exc_then_same_failure.log")
    assert [t.exc_type for t in res.handled_tracebacks] == ["ConnectionRefusedError"]  # the program went on
    # the second retry's traceback is followed by the fatal one (not a record): a "maybe"; the last is unhandled
    assert [(t.exc_type, t.handled) for t in res.tracebacks] == [
        ("ConnectionRefusedError", True),
        ("ConnectionRefusedError", False),
    ]
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
def test_error_words_inside_identifiers_are_no_failure_of_a_run_that_exited_0(name):
    res = _scan(name)
    assert res.error_lines and {(s, n) for s, n, _t in res.error_lines} <= res.maybe_lines
    settle_handled(res, 0)
    assert not res.error_lines, res.error_lines
    d = _diag(name, 0)
    assert d.profile.type == "unknown" or name.startswith("pytest"), d.profile
    assert d.profile.stage == "unknown", d.profile


def test_error_words_inside_identifiers_stay_material_where_the_run_failed():
    """Where the run failed the generic lines are the reasoning's material, not its verdict: kept."""
    res = _scan("identifiers_exit0.log")
    settle_handled(res, 1)
    assert len(res.error_lines) == 3


def test_error_words_that_report_an_error_still_do():
    reports = [
        "Timeout waiting for the rendezvous after 900 s",
        "RuntimeError: CUDA_ERROR_OUT_OF_MEMORY",
        "the read timed out after 30 s",
        "request failed with error code 502",
        "2 errors during collection",
        "fatal: not a git repository",
        "pip._internal.exceptions.DistributionNotFound: No matching distribution found for fs==0.5.4",
        "terminate called after throwing an instance of 'std::runtime_error'",
        "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=33 error=10 : invalid device ordinal",
        "error_code=507018",
    ]
    names = [
        "plugins: xdist-3.8.0, timeout-2.4.0",  # a package's versioned name
        "import time:       551 |        551 |   asyncio.timeouts",
        "deadline set: timeout_obj=<Timeout [finished]>",
        "error handling: retries on",
        "x86_64-linux-gnu-gcc -O2 -Werror=format-security -c a.c",
        "torch._dynamo.config.suppress_errors = True",
    ]
    res = ScanResult()
    scan_text("\n".join(reports + names) + "\n", "t", load_ruleset(), res)
    settle_handled(res, 0)
    assert sorted(t for _s, _n, t in res.error_lines) == sorted(reports)


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
    assert [(t.exc_type, t.handled) for t in res.tracebacks] == [("OSError", False), ("RuntimeError", False)]
    assert not res.handled_tracebacks


def test_a_traceback_a_program_died_of_right_after_an_info_record_stays_evidence():
    """Real train-corpus shapes: a program logs an INFO line, then dies of an uncaught exception (nothing after it
    or a launcher's ERROR record); a relay that prefixes every line with its own INFO record."""
    text = "\n".join(
        [
            "INFO:model.core:vocoder loaded.",
            "Traceback (most recent call last):",
            '  File "/home/user/run.py", line 9, in <module>',
            "    main()",
            "RuntimeError: boom",
            "[ERROR] 2024-12-06-10:37:51 (PID:19, Device:0, RankID:-1) ERR99999 UNKNOWN application exception",
            "I0922 09:49:00.869728 140053 run_docker.py:193] Traceback (most recent call last):",
            'I0922 09:49:00.869728 140053 run_docker.py:193]   File "/app/run.py", line 3, in <module>',
            "I0922 09:49:00.869728 140053 run_docker.py:193]     main()",
            "I0922 09:49:00.869728 140053 run_docker.py:193] ValueError: bad",
            "",
        ]
    )
    res = ScanResult()
    scan_text(text, "t", load_ruleset(), res)
    assert [t.exc_type for t in res.tracebacks] == ["RuntimeError", "ValueError"]
    assert not res.handled_tracebacks
    settle_handled(res, 1)
    assert [t.exc_type for t in res.tracebacks] == ["RuntimeError", "ValueError"]


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
            "",
        ]
    )
    res = ScanResult()
    scan_text(text, "t", load_ruleset(), res)
    assert not res.tracebacks
    assert [t.exc_type for t in res.handled_tracebacks] == ["KeyError", "ValueError"]
