"""A call whose arguments do not bind to the callee's signature ("takes 1 positional argument but 2 were given",
"missing 1 required positional argument", "got multiple values for argument") is raised by Python in the CALLER's
frame, before the callee's body runs: the code that wrote the call is where it must change. Raised in an installed
library's own frame, that library's code made the call (``caller:library``); a wrapper that passes on its caller's
``*args, **kwargs`` is skipped, so a program's wrong call through a library's wrapper stays the program's. Real
interpreters, with a library installed under a ``site-packages`` folder."""

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
