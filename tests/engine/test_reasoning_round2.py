"""Who owns a failing test: the code under test, the test's check, or the tests' set-up.

Real pytest runs (``pytester``, the plugin off) of a small project whose application module lives beside
its tests. Each asserts the ranking that the general facts ``raiser:test_check``, ``raiser:test_setup`` and
``raiser:under_test`` decide, and the check each leaves on the cause it moved, so a change that reads an
``assert`` in a test as the test's own bug, or a conftest fixture's error as the application's, fails here.
Also: the documented convention (an installed release too old or too new for the code is ``environment``)
holds for the version messages the packs know, from real output made on this machine.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_faildiag.engine.api import diagnose

APP = """
def total(xs):
    return sum(xs) + 1  # off by one: the code under test is wrong


def parse(text):
    if not text.isdigit():
        raise ValueError(f"not a number: {text!r}")
    return int(text)
"""


def _pytest(pytester, **files: str):
    pytester.makepyfile(app=APP, **files)
    res = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider")
    assert res.ret == 1, res.outlines
    return diagnose(texts={"stdout": "\n".join(res.outlines)}, exit_code=int(res.ret))


def _cats(diag) -> list[str]:
    return [c.category for c in diag.root_causes]


def _checks(diag, category: str) -> list[tuple[str, str]]:
    cause = next(c for c in diag.root_causes if c.category == category)
    return [(v.name, v.status) for v in cause.validation_checks if v.name.startswith("context:raiser")]


def test_a_failed_assert_in_the_test_points_at_the_code_under_test(pytester):
    diag = _pytest(pytester, test_app="from app import total\n\ndef test_total():\n    assert total([1, 2]) == 3\n")
    cats = _cats(diag)
    assert cats[0] == "model", cats
    assert "test_code" in cats[:3], cats  # the expectation being wrong stays a hypothesis
    assert ("context:raiser:test_check", "passed") in _checks(diag, "model")


def test_an_error_raised_in_application_code_a_test_called_is_the_code_under_test(pytester):
    diag = _pytest(pytester, test_app="from app import parse\n\ndef test_parse():\n    assert parse('4x') == 4\n")
    cats = _cats(diag)
    assert cats[0] == "model", cats
    assert ("context:raiser:under_test", "passed") in _checks(diag, "model")
    assert "test_code" not in cats[:2], cats


def test_a_conftest_fixture_that_raises_is_the_tests_own_code(pytester):
    pytester.makeconftest(
        textwrap.dedent(
            """
            import pytest

            @pytest.fixture
            def settings():
                cfg = {"name": "app"}
                return cfg["port"]
            """
        )
    )
    diag = _pytest(
        pytester, test_app="from app import total\n\ndef test_total(settings):\n    assert total([1]) == 2\n"
    )
    cats = _cats(diag)
    assert cats[0] == "test_code", cats
    assert ("context:raiser:test_setup", "passed") in _checks(diag, "test_code")


def test_the_same_assert_in_a_script_is_not_read_as_a_test(tmp_path: Path):
    """The test-only facts need a test: the same failed ``assert`` run as a script gets none of them."""
    script = tmp_path / "job.py"
    script.write_text(APP + "\nassert total([1, 2]) == 3\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    names = {v.name for c in diag.root_causes for v in c.validation_checks}
    assert not names & {"context:raiser:test_check", "context:raiser:test_setup", "context:raiser:under_test"}


def _frameless_runtime_error(tmp_path: Path, message: str):
    """A real process that prints only its exception line (``sys.tracebacklimit = 0``), as launchers and
    log excerpts often do: no frame says who raised, so the family's priors and the words decide."""
    code = f"import sys\nsys.tracebacklimit = 0\nraise RuntimeError({message!r})\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.stderr.strip() == f"RuntimeError: {message}", p.stderr
    return diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)


def test_version_words_lift_the_installed_versions_not_a_library_bug(tmp_path: Path):
    """By the documented convention a mismatch between installed versions is ``environment``: the
    message's version words (``cue:version``) lift that hypothesis and leave a library bug where the
    family's priors put it."""
    plain = _frameless_runtime_error(tmp_path, "output of the fused kernel does not match its reference")
    versions = _frameless_runtime_error(tmp_path, "module was compiled against another version of the runtime")
    cats = _cats(versions)
    assert cats[0] == "environment", cats
    env, lib = (next(c for c in versions.root_causes if c.category == k) for k in ("environment", "library"))
    assert ("context:cue:version", "passed") in [(v.name, v.status) for v in env.validation_checks]
    assert not [v for v in lib.validation_checks if v.name == "context:cue:version"]
    env0 = next(c for c in plain.root_causes if c.category == "environment")
    assert env.confidence > env0.confidence


def test_an_error_in_the_tests_own_body_offers_the_test_even_where_the_family_names_no_test_cause(pytester):
    """The test's body raised (not its check, not the code under test): the key-error family lists no cause
    in the tests, so the ``test_owned`` cause joins it, lifted by ``raiser:test``."""
    body = "from app import total\n\ndef test_total():\n    expected = {'one': 2}\n    assert total([1]) == expected['1']\n"
    diag = _pytest(pytester, test_app=body)
    cats = _cats(diag)
    assert "test_code" in cats[:2], cats
    assert ("context:raiser:test", "passed") in _checks(diag, "test_code")
