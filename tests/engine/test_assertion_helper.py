"""An assertion helper's AssertionError is its caller's check, not the library's own invariant (#13).

numpy.testing, torch.testing, pandas.testing, chex and unittest's ``assertX`` exist to raise on the values their
caller hands over. Raised inside the library's code, an ``AssertionError`` otherwise reads as the library breaking
its own invariant (``raiser:library_internal``) or, where no test ran, as an ``assert`` the library states about
itself (``raiser:untested_assert``): both lift ``library``. ``raiser:assertion_helper`` (engine/reason.py
``assertion_helper``) reads the call — the caller's line or the library's first frame names an ``assert…``
function — and keeps both from applying. Real outputs (tests/data/kb/assertion_helpers, kjaxlib's Chex runs) and
live runs of an installed package's helper beside its own internal ``assert``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import context_facts, run_fake_library_call, top3

DATA = Path(__file__).resolve().parents[1] / "data" / "kb"
LIBRARY_READINGS = {"raiser:library_internal", "raiser:untested_assert"}


@pytest.mark.parametrize(
    "log",
    ["assertion_helpers/torch_assert_close_script.log", "kjaxlib/chex_shape.log", "kjaxlib/chex_rank.log"],
)
def test_a_script_s_assertion_helper_does_not_lift_the_library(log):
    diag = diagnose([DATA / log], exit_code=1)
    assert not LIBRARY_READINGS & context_facts(diag)
    assert "library" not in top3(diag)
    assert diag.root_causes[0].category == "model"


HELPERS = '''
def assert_positive(values):
    """Raise AssertionError unless every value is positive."""
    bad = [v for v in values if v <= 0]
    if bad:
        raise AssertionError(f"not positive: {bad}")


def normalise(values):
    total = sum(values)
    assert total > 0
    return [v / total for v in values]
'''


def test_an_installed_helper_s_error_is_the_caller_s_check(tmp_path):
    diag, _ = run_fake_library_call(tmp_path, HELPERS, "fakelib.assert_positive([3, -1, 2])")
    assert "raiser:assertion_helper" in context_facts(diag)
    assert not LIBRARY_READINGS & context_facts(diag)
    assert diag.root_causes[0].category == "model"


def test_a_library_s_own_assert_still_reads_as_its_invariant(tmp_path):
    """The same package's ``normalise`` states an invariant about its own sum with ``assert``: no helper was
    called, so the reading of a library's own assert stands."""
    diag, _ = run_fake_library_call(tmp_path, HELPERS, "fakelib.normalise([0, 0])")
    assert LIBRARY_READINGS & context_facts(diag)
    assert "raiser:assertion_helper" not in context_facts(diag)
