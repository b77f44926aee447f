"""A value the library refused that the program wrote on its own calling line (issue 13).

A library's check that quotes the value it refused ("mode only supports 'fast' and 'safe', but got the value:
fancy") when that value is a string literal on the program's line that called it
(``beta.set_mode("fancy")``): the check did its job on a value the program chose, so the program's code or its
configuration leads, not a bug of the library (``value:written_by_program``). A value read from elsewhere (a
file, a variable) is not on the line and proves nothing either way; a lookup that misses the caller's key (a
KeyError) is the library's own table, not a check of a value.

Real Python runs here, with a package laid out in a real ``site-packages`` folder of ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import all_checks, cats
from tests.engine.site_package import run_beside_package

_BETA = """
    _MODES = ("fast", "safe")
    _TABLE = {"sum": sum}


    def set_mode(mode):
        if mode not in _MODES:
            raise ValueError(f"mode only supports 'fast' and 'safe', but got the value: {mode}")
        return mode


    def pick(name):
        return _TABLE[name]
"""

FACT = "context:value:written_by_program"


def _run(tmp_path: Path, code: str) -> str:
    return run_beside_package(tmp_path, "beta", _BETA, code).stderr


def test_a_refused_literal_written_on_the_calling_line_is_the_programs_choice(tmp_path):
    err = _run(tmp_path, 'import beta\nbeta.set_mode("fancy")\n')
    assert "but got the value: fancy" in err and 'beta.set_mode("fancy")' in err
    diag = diagnose(texts={"stderr": err}, exit_code=1)
    assert FACT in all_checks(diag)
    assert cats(diag, 1)[0] in ("config", "model"), cats(diag, 3)
    assert cats(diag, 2).count("library") == 0, cats(diag, 3)


def test_a_refused_value_read_from_elsewhere_is_not_on_the_line(tmp_path):
    (tmp_path / "mode.txt").write_text("fancy\n")
    err = _run(tmp_path, 'import beta\nmode = open("mode.txt").read().strip()\nbeta.set_mode(mode)\n')
    assert "but got the value: fancy" in err
    diag = diagnose(texts={"stderr": err}, exit_code=1)
    assert FACT not in all_checks(diag)


def test_a_lookup_that_misses_the_callers_key_is_no_refused_value(tmp_path):
    err = _run(tmp_path, 'import beta\nbeta.pick("mean")\n')
    assert "KeyError: 'mean'" in err
    diag = diagnose(texts={"stderr": err}, exit_code=1)
    assert FACT not in all_checks(diag)
