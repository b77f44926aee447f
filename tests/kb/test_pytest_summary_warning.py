"""A warning that failed a test, read from pytest's short summary (#13).

Under ``-W error`` (or ``filterwarnings = error``) a warning raised in a test is its failure, and pytest's
short summary says so: ``FAILED id - FutureWarning: msg``. CI logs often keep only that summary. A warning
printed elsewhere is no failure, so only behind that prefix is a warning class read as the exception.
Shown on a real pytester run and on a train log from a public thread (a CI run that kept only the summary)."""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import train_log_path

WARNS = """
import warnings

def fetch(legacy_mode=None):
    if legacy_mode is not None:
        warnings.warn("`legacy_mode` is deprecated and will be removed in version 3.0; pass mode= instead.", FutureWarning)
    return 1

def test_fetch():
    assert fetch(legacy_mode=False) == 1
"""


def _summary(text: str) -> str:
    head = text.index("short test summary info")
    return text[text.index("\n", head) + 1 :]


def test_the_summary_of_a_real_run_names_the_warning_as_the_failure(pytester):
    pytester.makepyfile(test_fetch=WARNS)
    result = pytester.runpytest("-p", "no:faildiag", "-W", "error::FutureWarning", "-rf")
    out = result.stdout.str()
    assert "FAILED test_fetch.py::test_fetch - FutureWarning" in out
    summary = _summary(out)
    assert "E   " not in summary  # only the summary: what a CI log that cut the rest keeps
    diag = diagnose(texts={"ci.log": summary})
    assert diag.profile.type == "runtime_error"
    assert diag.root_causes[0].rule == "differential:deprecation"


def test_a_warning_printed_alone_is_still_no_failure():
    diag = diagnose(texts={"run.log": "WARNING huggingface_hub FutureWarning: `resume_download` is deprecated\n"})
    assert diag.profile.type != "runtime_error"


def test_a_ci_log_holding_only_the_summary():
    text = train_log_path("pytorch/hf_hub_0230_resume_download_futurewarning_ci").read_text()
    diag = diagnose(texts={"ci.log": text})
    assert diag.profile.type == "runtime_error"
    assert {"environment", "library"} <= {c.category for c in diag.root_causes[:3]}
