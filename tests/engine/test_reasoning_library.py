"""A library's bug or the caller's values: who raised, and what kind of error (issue 13, libk).

An AttributeError, KeyError, IndexError, NameError, an ``assert`` or a TypeError that Python raises for an
operation a library's own code performs, after that code ran on by itself, says that the library's code
broke (``raiser:library_internal``); a ValueError/TypeError raised by the very function the program called
is that function's check of the values it was given (``raiser:library_entry``). ``engine/reason.py`` reads
the frames below the raise to tell them apart.

Every test runs real Python here, with a package laid out in a real ``site-packages`` folder of
``tmp_path``; the train logs are from the thread corpus's train split.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import all_checks, cats, context_checks, train_log

# a library with an internal bug (its engine reads a cache it never set), an entry that checks its
# argument, and an internal step that uses the caller's value as an object
_ALPHA = """
    import os


    class _Engine:
        def __init__(self):
            self.table = {"sum": sum}

        def step(self, items):
            return self._cache.get(items)  # never set: the library's own invariant

        def pick(self, name):
            return self.table[name]

        def shape_of(self, data):
            return data.shape

        def home(self):
            return os.environ["FAILDIAG_TEST_ALPHA_HOME"]

        def flush(self):
            raise RuntimeError("flush queue in state 3: this should never happen")


    def run(items):
        return _Engine().step(items)


    def reduce(items, how):
        return _Engine().pick(how)(items)


    def describe(data):
        return _Engine().shape_of(data)


    def home():
        return _Engine().home()


    def flush():
        return _Engine().flush()


    def scale(items, factor):
        if factor < 0:
            raise ValueError(f"expected a non-negative factor but got {factor}")
        return [x * factor for x in items]
"""


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "lib" / "site-packages"
    (site / "alpha").mkdir(parents=True, exist_ok=True)
    (site / "alpha" / "__init__.py").write_text(textwrap.dedent(_ALPHA))
    return site


def _run(tmp_path: Path, code: str) -> tuple[str, int]:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": str(_site(tmp_path))}
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


def test_an_invariant_error_deep_in_a_library_leads_with_the_library(tmp_path):
    """alpha's engine reads an attribute it never set: an AttributeError on its own object, two library
    frames below the program's call. The library's code broke, so library leads and the program's code is
    moved down (the check says so on both causes)."""
    err, rc = _run(tmp_path, "import alpha\nalpha.run([1, 2])\n")
    assert "'_Engine' object has no attribute '_cache'" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert cats(diag, 1) == ["library"]
    assert context_checks(diag, "library")["context:raiser:library_internal"] == "passed"
    assert context_checks(diag, "model")["context:raiser:library_internal"] == "failed"

    # a KeyError on the library's own table, for a name the caller chose: still raised by the library's
    # own lookup after it ran on (a KeyError is no argument check), so the library is a lead hypothesis
    err, rc = _run(tmp_path, "import alpha\nalpha.reduce([1, 2], 'mean')\n")
    keyed = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:raiser:library_internal" in all_checks(keyed)
    assert "library" in cats(keyed, 2)

    # a KeyError that the standard library's os.environ raises for alpha is a variable the run was not
    # given (its configuration), not an invariant of alpha's code
    err, rc = _run(tmp_path, "import alpha\nalpha.home()\n")
    assert "KeyError: 'FAILDIAG_TEST_ALPHA_HOME'" in err
    unset = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:raiser:library_internal" not in all_checks(unset)


def test_a_check_at_the_library_entry_is_the_callers_values(tmp_path):
    """``alpha.scale`` itself rejects the factor the program passed (a ValueError right below the
    program's frame): the caller's values, so the program's code leads and the library is moved down."""
    err, rc = _run(tmp_path, "import alpha\nalpha.scale([1, 2], -1)\n")
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert cats(diag, 1) == ["model"]
    assert context_checks(diag, "model")["context:raiser:library_entry"] == "passed"
    assert "context:raiser:library_internal" not in all_checks(diag)
    lib = [c for c in diag.root_causes if c.category == "library"]
    assert not lib or context_checks(diag, "library")["context:raiser:library_entry"] == "failed"


def test_a_builtin_value_where_the_library_expects_an_object_is_not_its_bug(tmp_path):
    """The program hands a string where alpha expects an array: ``'str' object has no attribute 'shape'``
    deep in alpha may be the caller's value, not an invariant of alpha's own code, so the fact does not hold and
    the program's code stays among the hypotheses."""
    err, rc = _run(tmp_path, "import alpha\nalpha.describe('abc')\n")
    assert "'str' object has no attribute 'shape'" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:raiser:library_internal" not in all_checks(diag)
    assert "model" in cats(diag)


def test_train_logs_a_plugin_using_another_librarys_object_wrongly():
    """Two train logs: devpi reads a private attribute of pluggy's PluginManager that pluggy 1.1 dropped;
    optax runs ``isinstance`` on a subscripted generic inside its own schedule code (the standard library's
    typing raises the TypeError on optax's behalf). Both are the library's code: library leads."""
    for name in (
        "pytest_python/py_gi4_devpi_pluginmanager_no_attribute_implprefix_pluggy_110_break",
        "jax/jax_optax_inject_hyperparams_typeerror_subscripted_generic_new_chex",
    ):
        diag, label = train_log(name)
        assert label["category"] == "library"
        assert cats(diag, 1) == ["library"], name
        assert context_checks(diag, "library")["context:raiser:library_internal"] == "passed", name


def test_pytests_outcome_raised_for_the_test_is_not_a_library_bug():
    """``pytest.raises`` reporting DID NOT RAISE raises pytest's ``Failed`` from pytest's own frames: the
    test's verdict raised on its behalf, not an invariant of pytest's code."""
    diag, _label = train_log("pytest_python/py_hypothesis_test_did_not_raise_deadline_exceeded_flaky_test")
    assert "context:raiser:library_internal" not in all_checks(diag)


def test_a_keyword_the_installed_release_does_not_know_is_no_value_check():
    """MindSpore's ``set_context`` says that a keyword argument "is not recognized" (its own words for
    Python's "unexpected keyword argument"): the call does not fit the installed release's signature, which
    is a version question as much as the caller's, so the entry's value-check reading does not hold. The
    same ValueError raised for a value would (see the ``alpha.scale`` test above)."""
    diag, label = train_log("mindspore/ms_set_context_jit_config_not_recognized_mindspore_too_old")
    assert label["category"] == "environment"
    assert "context:raiser:library_entry" not in all_checks(diag)


def test_a_library_saying_its_invariant_broke_leads_with_the_library(tmp_path):
    """A bare RuntimeError says little (its family ranks the program's code first); the library's own
    words "this should never happen" state that its invariant broke (``cue:library_bug``): library leads."""
    err, rc = _run(tmp_path, "import alpha\nalpha.flush()\n")
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert cats(diag, 1) == ["library"]
    assert context_checks(diag, "library")["context:cue:library_bug"] == "passed"


def test_a_value_error_while_a_library_is_imported_is_no_check_of_the_callers_values(tmp_path):
    """Importing a library runs its top level: no value was handed over, so a ValueError raised there (a
    build that expects other sizes than the installed package provides) is no check of the caller's values;
    the entry fact does not hold. Called as a function, the same check is (the alpha.scale test above)."""
    site = _site(tmp_path)
    (site / "beta").mkdir(exist_ok=True)
    (site / "beta" / "__init__.py").write_text(
        "raise ValueError('expected a record size of 96 but got 88 from the installed core')\n"
    )
    script = tmp_path / "job.py"
    script.write_text("import beta\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode != 0 and "ValueError: expected a record size" in p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert "context:raiser:library_entry" not in all_checks(diag)
