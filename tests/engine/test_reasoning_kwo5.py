"""Who called the framework's operation, and what a size mismatch names (issue 13, kwo5).

- ``raiser:library_op``: a RuntimeError whose innermost frame is a line of a library's own code (not a framework's,
  not the standard library's, not a ``raise`` or ``assert``): a compiled operation that line called refused its
  operands, which that library's code computed. The library leads, the program's code recedes.
- ``cue:size_mismatch``: the message names tensor sizes that do not fit the operation (PyTorch's broadcasting,
  matmul, view and cat checks): sizes come from the code, the configuration that sets them and the samples, not
  from the installed versions.

Each train log is diagnosed as ``bench/confusion.py`` does: with every rule, and with the findings of the rules
whose causes that diagnosis listed dropped (``--without-rules``). Real runs use the installed torch on the CPU.
"""

from __future__ import annotations

import pytest

from tests.kb.kb_helpers import (
    context_facts,
    run_failing,
    run_fake_library_call,
    top3,
    train_log_without_rules,
)

# ---------------------------------------------------------------------------------------------------------------
# train logs
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        # unsloth's fast_linear_forward calls torch.mv on the LoRA weights it reshaped: torch's size check
        "pytorch/unsloth_fast_linear_forward_lora_size_mismatch",
        # PyG's DimeNet reset_parameters calls arange(out=…) on a leaf parameter that requires grad
        "pytorch/pyg_dimenet_bessel_leaf_inplace_reset",
    ],
)
def test_train_log_a_library_line_handed_torch_its_operands(name: str) -> None:
    """Before, the program's code was first (the runtime family's prior, autograd's words); now the library is."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert "raiser:library_op" in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "library", top3(diag)


def test_train_log_a_size_mismatch_keeps_the_configuration() -> None:
    """A ViT's position embedding sized for another image size: torch's broadcasting check in the program's frame.
    Before, the installed versions were second and the configuration fell out of the three; now it is in them."""
    diag, label = train_log_without_rules("pytorch/cct_vit_img_size_mismatch_flowers102")
    assert label["category"] == "config"
    assert "cue:size_mismatch" in context_facts(diag), context_facts(diag)
    assert "config" in top3(diag) and "environment" not in top3(diag), top3(diag)


# ---------------------------------------------------------------------------------------------------------------
# real runs (torch on the CPU)
# ---------------------------------------------------------------------------------------------------------------

_LIB_OP = """
import torch
def project(x):
    w = torch.zeros(16, 8)
    return torch.mv(w, x.ravel())
def checked(x):
    raise RuntimeError("fakelib: expected a vector of 8 values")
"""


def test_real_library_line_calls_torch_with_wrong_operands(tmp_path) -> None:
    """A library's own line calls torch.mv with operands it reshaped; torch's C++ check raises on that line."""
    pytest.importorskip("torch")
    diag, err = run_fake_library_call(tmp_path, _LIB_OP, "fakelib.project(torch.zeros(2, 6))", imports="torch")
    assert "RuntimeError: size mismatch" in err and "fakelib" in err
    assert "raiser:library_op" in context_facts(diag), context_facts(diag)
    assert "cue:size_mismatch" in context_facts(diag)
    assert top3(diag)[0] == "library", top3(diag)


def test_real_library_raise_statement_is_not_an_operation(tmp_path) -> None:
    """The library's own ``raise`` of its check: not an operation's refusal (its caller's values are in question)."""
    pytest.importorskip("torch")
    diag, err = run_fake_library_call(tmp_path, _LIB_OP, "fakelib.checked(torch.zeros(2))", imports="torch")
    assert "RuntimeError: fakelib: expected a vector" in err
    assert "raiser:library" in context_facts(diag)
    assert "raiser:library_op" not in context_facts(diag), context_facts(diag)


def test_real_program_line_calls_torch(tmp_path) -> None:
    """The program's own line calls torch.mv: the program computed the operands (raiser:user), and torch's own
    Python wrappers (a framework's frame, F.linear) are not a library's line either."""
    pytest.importorskip("torch")
    diag, err = run_failing(tmp_path, "import torch\ntorch.mv(torch.zeros(16, 8), torch.zeros(12))\n")
    assert "RuntimeError: size mismatch" in err
    assert "raiser:user" in context_facts(diag)
    assert "raiser:library_op" not in context_facts(diag)
    diag, err = run_failing(tmp_path, "import torch\nm = torch.nn.Linear(6, 4)\nm(torch.zeros(2, 3))\n")
    assert "mat1 and mat2 shapes cannot be multiplied" in err
    assert "raiser:library_op" not in context_facts(diag), context_facts(diag)


def test_real_broadcast_size_mismatch_in_the_program(tmp_path) -> None:
    """A position embedding sized for 65 tokens added to 197: torch's broadcasting check names both sizes. The
    configuration joins the three and the installed versions leave them."""
    pytest.importorskip("torch")
    diag, err = run_failing(
        tmp_path,
        """
        import torch
        pos = torch.zeros(1, 65, 8)
        def embed(x):
            return x + pos
        embed(torch.zeros(2, 197, 8))
        """,
    )
    assert "The size of tensor a (197) must match the size of tensor b (65)" in err
    assert "cue:size_mismatch" in context_facts(diag), context_facts(diag)
    assert "config" in top3(diag) and "environment" not in top3(diag), top3(diag)


def test_real_torch_size_messages_are_read() -> None:
    """Each of PyTorch's size checks, raised here by the installed torch, is read as a size mismatch; a dtype check
    is not (a dtype is the installed release's as often as the code's)."""
    torch = pytest.importorskip("torch")
    from pytest_faildiag.engine.api import diagnose

    def message(f) -> str:
        with pytest.raises(RuntimeError) as e:
            f()
        return str(e.value)

    sizes = [
        lambda: torch.zeros(3) + torch.zeros(4),
        lambda: torch.zeros(2, 3) @ torch.zeros(4, 2),
        lambda: torch.mv(torch.zeros(3, 4), torch.zeros(5)),
        lambda: torch.zeros(5).view(-1, 3),
        lambda: torch.cat([torch.zeros(2, 2), torch.zeros(3, 3)], 1),
    ]
    tb = 'Traceback (most recent call last):\n  File "/work/app/run.py", line 3, in <module>\n    y = f(x)\n'
    for f in sizes:
        diag = diagnose(texts={"log": tb + "RuntimeError: " + message(f) + "\n"})
        assert "cue:size_mismatch" in context_facts(diag), message(f)
    other = message(lambda: torch.zeros(2, 2, dtype=torch.int64).mm(torch.zeros(2, 2)))
    diag = diagnose(texts={"log": tb + "RuntimeError: " + other + "\n"})
    assert "cue:size_mismatch" not in context_facts(diag), other
