"""Which homes make the three hypotheses shown (issue 13, kwo4): who raised keeps its counterpart among them.

- ``kept:raiser:user``: the program's own frame raised and no rule explains it: the library the program was calling
  keeps a place among the three (before: the configuration and the data, which the program's frame lifts only a
  little, filled the second and third places and the library fell out). Not in a test run: there the tests' code
  is the other owner on the stack and keeps its place (tests/kb/test_pytest_homes.py).
- ``kept:raiser:library_entry``: a library's entry check raised (a ValueError/TypeError of the function called): that
  library's own check keeps a place (a release that rejects a valid use).
- A kept home takes the third place only from a guess: a hypothesis whose net lift from the facts is below
  ``POINTED_LIFT`` (1.3). A rule's own cause and a hypothesis the evidence lifted clearly keep their places, and the
  kept homes apply beside the rules' causes too (the differential's guesses make room, a rule's homes never do).

Each train log is diagnosed as ``bench/confusion.py`` does: with every rule, and with the findings of the rules
whose causes that diagnosis listed dropped (``--without-rules``). Real runs use the installed torch on the CPU.
"""

from __future__ import annotations

import pytest

from pytest_faildiag.engine.reason import POINTED_LIFT, diversify
from pytest_faildiag.model import RootCause, ValidationCheck
from tests.kb.kb_helpers import (
    context_facts,
    run_failing,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

# ---------------------------------------------------------------------------------------------------------------
# train logs
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fact"),
    [
        # DGL's DimeNet example: the in-place op on a leaf is the library's example code
        ("pytorch/dgl_dimenet_example_leaf_inplace_arange", "raiser:user"),
        # diffrax's error_if check rejects a float dt0 it should accept
        ("jax/diffrax_error_if_float_dt0_no_arrays_to_thread", "raiser:library_entry"),
        # ColabFold hands jnp.take a list, which a newer jax's entry check rejects
        ("jax/jax_colabfold_take_list_arg_rejected_new_jax", "raiser:library_entry"),
    ],
)
def test_train_log_the_library_keeps_a_place_without_the_rules(name: str, fact: str) -> None:
    """Before, the library was fourth or fifth (bench/confusion.py --without-rules); now it is among the three."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert fact in context_facts(diag), context_facts(diag)
    assert "library" in top3(diag), top3(diag)


@pytest.mark.parametrize(
    "name",
    [
        "jax/diffrax_error_if_float_dt0_no_arrays_to_thread",
        # a rule explains the in-place error (the program's autograd use): the library now makes room beside it
        "pytorch/dgl_dimenet_example_leaf_inplace_arange",
        # a rule reads the unpicklable worker state; nothing shows the program's code: the library keeps a place
        "pytest_python/fairsoft_spack_py38_macos_pickle_child_process",
    ],
)
def test_train_log_the_library_keeps_a_place_with_the_rules(name: str) -> None:
    diag, label = train_log_with_rules(name)
    assert label["category"] == "library"
    assert "library" in top3(diag), top3(diag)


def test_train_log_a_rules_home_is_never_displaced() -> None:
    """D-FINE's hard-coded device: no frame of the program is shown (the library is a kept home), and the rules
    list the configuration, the connection and the program's code. The kept library takes the place of a
    differential guess only, so the rules' three stay (the program's code, the home, among them)."""
    diag, label = train_log_with_rules("distributed/dfine_duplicate_gpu_hardcoded_device")
    assert label["category"] == "model"
    assert "raiser:unseen" in context_facts(diag)
    assert top3(diag) == ["config", "communication", "model"], top3(diag)


def test_train_log_a_clearly_lifted_home_keeps_its_place() -> None:
    """CANN's aicpu exception: the kernel-fault words lift the operator (2.5, below the program's frame's 0.6); it
    is the home, third, and the library kept for the program's frame does not take its place."""
    diag, label = train_log_without_rules("ascend/pta_aicpu_rightshift_507018_zero_dim_int64_shift_tensor")
    assert label["category"] == "operator"
    assert "raiser:user" in context_facts(diag) and "cue:kernel_fault" in context_facts(diag)
    assert "operator" in top3(diag) and "library" not in top3(diag), top3(diag)


# ---------------------------------------------------------------------------------------------------------------
# diversify
# ---------------------------------------------------------------------------------------------------------------


def _cause(cat: str, conf: float, lifted: bool = False, rule: str = "differential:value_error") -> RootCause:
    c = RootCause(f"x.{cat}", cat, conf, cat, [], rule=rule)
    if lifted:
        c.validation_checks.append(ValidationCheck("context:raiser:user", "passed", ""))
    return c


def test_diversify_keeps_a_home_in_place_of_a_weakly_lifted_guess() -> None:
    ranked = [_cause("model", 0.4, True), _cause("config", 0.3, True), _cause("dataset", 0.2, True)]
    ranked.append(_cause("library", 0.1))
    lifts = {"model": 1.5, "config": 1.2, "dataset": 1.1, "library": 0.6}
    assert [c.category for c in diversify(list(ranked), keep=["library"], lifts=lifts)][:3] == [
        "model",
        "config",
        "library",
    ]
    # without the lifts every passed check counts (the program_unshown behaviour before): dataset stays
    assert [c.category for c in diversify(list(ranked), keep=["library"])][:3] == ["model", "config", "dataset"]
    # a clear lift keeps its place
    lifts["dataset"] = POINTED_LIFT
    assert [c.category for c in diversify(list(ranked), keep=["library"], lifts=lifts)][:3] == [
        "model",
        "config",
        "dataset",
    ]


def test_diversify_never_replaces_a_rules_cause() -> None:
    ranked = [_cause("model", 0.5, rule="torch.autograd_usage"), _cause("config", 0.3, rule="torch.autograd_usage")]
    ranked += [_cause("environment", 0.2, rule="some.rule"), _cause("library", 0.1)]
    out = diversify(ranked, keep=["library"], lifts={"environment": 1.0})
    assert [c.category for c in out][:3] == ["model", "config", "environment"]


# ---------------------------------------------------------------------------------------------------------------
# real runs (torch on the CPU)
# ---------------------------------------------------------------------------------------------------------------


def test_real_program_frame_raises_under_a_library_call(tmp_path) -> None:
    """torch's DataLoader calls the program's ``collate_fn``, which raises its own ValueError on what torch handed
    it: the program's frame raised with torch's frames on the stack, so torch stays among the three (before: the
    configuration and the data, lifted a little by the program's frame)."""
    pytest.importorskip("torch")
    diag, err = run_failing(
        tmp_path,
        """
        import torch
        from torch.utils.data import DataLoader
        def collate(batch):
            s = torch.softmax(torch.stack(batch), dim=0)
            raise ValueError(f"expected a peaked distribution, got max {s.max().item():.2f}")
        for _ in DataLoader([torch.zeros(4)] * 4, batch_size=2, collate_fn=collate):
            pass
        """,
    )
    assert "ValueError: expected a peaked distribution" in err
    assert "site-packages/torch/utils/data/" in err.replace("\\", "/")
    assert "raiser:user" in context_facts(diag)
    assert "library" in top3(diag), top3(diag)


def test_real_program_frame_raises_with_no_library_on_the_stack(tmp_path) -> None:
    """The program checks what torch returned and raises its own ValueError, torch's frames gone from the stack:
    nothing on it shows a library, so none is kept as the raiser's home and the program's code leads. A library
    is not ruled out: it can have handed over a wrong result earlier (the train logs whose own code raised with no
    library on the stack were a library's bug about one time in six), so it may remain a lower hypothesis."""
    pytest.importorskip("torch")
    diag, err = run_failing(
        tmp_path,
        """
        import torch
        def check(p):
            s = torch.softmax(p, dim=0)
            raise ValueError(f"expected a peaked distribution, got max {s.max().item():.2f}")
        check(torch.zeros(4))
        """,
    )
    assert "ValueError: expected a peaked distribution" in err
    assert "raiser:user" in context_facts(diag)
    assert top3(diag)[0] == "model" and top3(diag)[1] != "library", top3(diag)


def test_real_library_entry_check(tmp_path) -> None:
    """torch's Conv2d rejects a padding string in its own constructor (the function called): the caller's values
    lead, and torch's own check stays a hypothesis."""
    pytest.importorskip("torch")
    diag, err = run_failing(tmp_path, "import torch\ntorch.nn.Conv2d(3, 8, 3, padding='bogus')\n")
    assert "ValueError: Invalid padding string 'bogus'" in err
    assert "raiser:library_entry" in context_facts(diag)
    assert "library" in top3(diag), top3(diag)
