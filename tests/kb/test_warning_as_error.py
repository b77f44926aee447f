"""A warning raised as an error (Python's warnings catalogue: the "error" action turns a matching warning into an
exception; by default a UserWarning or RuntimeWarning is only reported): the family ``warning_as_error`` reads
it, with the filter that made it fatal first. Real pytest runs (pytester) and a real interpreter with ``-W error``;
a warning printed alone before another failure stays out of it."""

from __future__ import annotations

import subprocess
import sys

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import context_facts, top3, train_log_path


def _family(diag) -> str:
    return diag.root_causes[0].rule if diag.root_causes else ""


def test_a_warning_at_import_under_filterwarnings_error_fails_collection_by_the_filter(pytester):
    pytester.makeini("[pytest]\nfilterwarnings =\n    error\n")
    pytester.makepyfile(
        noisy="import warnings\nwarnings.warn('the experimental submodule may change', UserWarning)\n",
        test_noisy="import noisy\n\ndef test_x():\n    assert noisy\n",
    )
    result = pytester.runpytest("-p", "no:faildiag")
    assert "UserWarning: the experimental submodule may change" in result.stdout.str()
    diag = diagnose(texts={"stdout.txt": result.stdout.str()}, exit_code=int(result.ret), command="pytest")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "collection")
    assert _family(diag) == "differential:warning_as_error"
    assert top3(diag)[0] == "config"


def test_a_runtime_warning_under_w_error_ends_the_program_by_the_filter(tmp_path):
    code = "import warnings\ndef mean(xs):\n    warnings.warn('mean of empty slice', RuntimeWarning)\nmean([])\n"
    p = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 1 and "RuntimeWarning: mean of empty slice" in p.stderr
    diag = diagnose(texts={"stderr.txt": p.stderr}, exit_code=p.returncode)
    assert diag.profile.type == "runtime_error"
    assert _family(diag) == "differential:warning_as_error"
    assert top3(diag)[:2] == ["config", "model"]


def test_a_warning_printed_before_another_error_is_not_the_failure(tmp_path):
    code = "import warnings\nwarnings.warn('dubious', UserWarning)\nraise ValueError('bad value 3')\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert "UserWarning: dubious" in p.stderr and "ValueError: bad value 3" in p.stderr
    diag = diagnose(texts={"stderr.txt": p.stderr}, exit_code=p.returncode)
    assert "ValueError" in diag.profile.first_failure.excerpt
    assert all(not c.rule.endswith("warning_as_error") for c in diag.root_causes)


def test_deprecations_keep_their_own_family(tmp_path):
    code = "import warnings\nwarnings.warn('old_api is deprecated; use new_api', DeprecationWarning)\n"
    p = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    diag = diagnose(texts={"stderr.txt": p.stderr}, exit_code=p.returncode)
    assert _family(diag) == "differential:deprecation"


def test_the_numpy_collection_errors_of_a_warning_at_import_are_the_filters():
    # numpy's own test suite (filterwarnings = error) collecting modules that import numpy.array_api, which warns
    d = diagnose([train_log_path("pytest_python/pytest_ini_warnings_as_errors_numpy_array_api_userwarning_collection")])
    assert d.profile.stage == "collection"
    assert top3(d)[0] == "config"


def test_a_user_warning_that_announces_a_deprecation_is_not_read_as_advisory(tmp_path):
    # libraries that deprecate with a UserWarning (huggingface_hub's "… is deprecated and ignored"): the calling code
    # needs the change, as for a DeprecationWarning, so the filter is not put first by the cue
    code = "import warnings\nwarnings.warn('`resume` is deprecated and ignored in `fetch`', UserWarning)\n"
    p = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert "UserWarning: `resume` is deprecated" in p.stderr
    diag = diagnose(texts={"stderr.txt": p.stderr}, exit_code=p.returncode)
    assert "cue:warning_raised" not in context_facts(diag)
    plain = "import warnings\nwarnings.warn('the value is clipped to 1.0', UserWarning)\n"
    q = subprocess.run([sys.executable, "-W", "error", "-c", plain], capture_output=True, text=True, cwd=tmp_path)
    assert "cue:warning_raised" in context_facts(diagnose(texts={"stderr.txt": q.stderr}, exit_code=q.returncode))
