"""A call whose arguments do not bind to the callee's signature ("takes 1 positional argument but 2 were given",
"missing 1 required positional argument", "got multiple values for argument") is raised by Python in the CALLER's
frame, before the callee's body runs: the code that wrote the call is where it must change. Raised in an installed
library's own frame, that library's code made the call (``caller:library``); a wrapper that passes on its caller's
``*args, **kwargs`` is skipped, so a program's wrong call through a library's wrapper stays the program's. Real
interpreters, with a library installed under a ``site-packages`` folder. Also: a name the library's own code refers to
(NameError, UnboundLocalError) is its code even at its entry."""

from __future__ import annotations

from pathlib import Path

from tests.kb.kb_helpers import context_facts, run_failing, run_fake_library_call, top3

_LIBRARY = """
def _state_file(folder):
    return folder + "/state.pt"

def load(folder, stage):
    return _state_file(folder, stage)  # the library's own call, against its own helper's signature

def grad(fn):
    def wrapped(*args, **kwargs):
        return fn(*args, **kwargs)  # passes on what its caller gave
    return wrapped
"""


def test_a_librarys_own_call_with_too_many_arguments_is_the_librarys(tmp_path: Path) -> None:
    diag, err = run_fake_library_call(tmp_path, _LIBRARY, "fakelib.load('ckpt', 2)")
    assert "_state_file() takes 1 positional argument but 2 were given" in err
    assert "caller:library" in context_facts(diag)
    assert top3(diag)[0] == "library"


def test_a_programs_call_through_a_forwarding_wrapper_stays_the_programs(tmp_path: Path) -> None:
    call = "def loss(model, x):\n    return x\n\nfakelib.grad(loss)(1)"
    diag, err = run_fake_library_call(tmp_path, _LIBRARY, call)
    assert "missing 1 required positional argument: 'x'" in err
    assert "caller:user" in context_facts(diag)
    assert "caller:library" not in context_facts(diag)
    assert top3(diag)[0] == "model"


def test_the_programs_own_wrong_call_stays_the_programs(tmp_path: Path) -> None:
    diag, err = run_failing(tmp_path, "def f(a):\n    return a\n\ndef main():\n    f(1, 2)\n\nmain()\n")
    assert "f() takes 1 positional argument but 2 were given" in err
    assert "caller:user" in context_facts(diag)
    assert top3(diag)[0] == "model"


# --- a name the library's own code refers to ---------------------------------------------------------------------


def test_a_name_error_at_a_librarys_entry_is_the_librarys_code(tmp_path: Path) -> None:
    """No value a caller hands over makes a name undefined in the callee's code: a NameError raised in the very
    function the program called is that library's own code, as it is deeper inside it."""
    diag, err = run_fake_library_call(tmp_path, "def f(x):\n    return helper(x)\n", "fakelib.f(1)")
    assert "NameError: name 'helper' is not defined" in err
    assert "raiser:library_internal" in context_facts(diag)
    assert top3(diag)[0] == "library"


def test_an_unbound_local_at_a_librarys_entry_is_the_librarys_code(tmp_path: Path) -> None:
    body = "def f(x):\n    if x:\n        y = 1\n    return y\n"
    diag, err = run_fake_library_call(tmp_path, body, "fakelib.f(0)")
    assert "UnboundLocalError" in err
    assert top3(diag)[0] == "library"


def test_an_attribute_error_at_a_librarys_entry_stays_with_the_callers_value(tmp_path: Path) -> None:
    # an AttributeError on the value the caller passed is not read as the library's own bug at its entry
    diag, err = run_fake_library_call(tmp_path, "def f(x):\n    return x.shape\n", "fakelib.f(3)")
    assert "'int' object has no attribute 'shape'" in err
    assert "raiser:library_internal" not in context_facts(diag)


def test_a_name_error_in_the_programs_own_code_stays_the_programs(tmp_path: Path) -> None:
    diag, err = run_failing(tmp_path, "def main():\n    return undefined_helper()\n\nmain()\n")
    assert "NameError" in err
    assert top3(diag)[0] == "model"
