"""Who asked for a name, and what "missing" means (issue 13, klib3).

- A class's ``__getattr__`` raises AttributeError for the name its caller asked for (as a module's does). When that
  ``__getattr__`` is one package's (torch's ``_OpNamespace``: an operator no loaded library registered) and the
  line that asked is another library's, the asking library was written against another release of the first:
  ``api:cross_library`` (the installed versions lead), not an invariant of the asking library's own code
  (``raiser:library_internal`` is withdrawn).
- Python's "f() missing 1 required positional argument: 'x'" is a call that does not fit its callee's signature;
  nothing is absent from the installation, so ``cue:absent`` does not hold on those words alone.
- A device runtime's own error (CUDA's "device-side assert triggered", "kernel image is invalid") surfacing in a
  library's frame: CUDA reports a kernel's fault at a later call and the driver refuses an image, so the library's
  line where it surfaced is no evidence of that library's code (``raiser:library``, ``raiser:library_only`` and
  ``raiser:library_op`` are withdrawn). No CUDA device here: train logs only.

Each train log is diagnosed as ``bench/confusion.py --without-rules`` does (the rules that explained it left out).
Real runs use the installed torch on the CPU and plain Python.
"""

from __future__ import annotations

import pytest

from tests.kb.kb_helpers import (
    context_facts,
    run_failing,
    run_fake_library_call,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

# ---------------------------------------------------------------------------------------------------------------
# train logs
# ---------------------------------------------------------------------------------------------------------------


def test_train_log_a_library_asks_torch_ops_for_an_operator_it_lacks() -> None:
    """fbgemm_gpu's module asks ``torch.ops.fbgemm`` for an operator its extension (built for another torch) did
    not register: torch's ``_OpNamespace.__getattr__`` raises for fbgemm_gpu's line. Before, the library's own
    invariant was read (library first); now the two installed releases that do not fit are."""
    diag, label = train_log_without_rules("environment/fbgemm_gpu_stable_wheel_vs_torch24_undefined_symbol")
    assert label["category"] == "environment"
    facts = context_facts(diag)
    assert "api:cross_library" in facts and "raiser:library_internal" not in facts, facts
    assert top3(diag)[0] == "environment", top3(diag)
    diag, _ = train_log_with_rules("environment/fbgemm_gpu_stable_wheel_vs_torch24_undefined_symbol")
    assert top3(diag)[0] == "environment", top3(diag)


def test_train_log_a_package_own_getattr_is_not_another_package() -> None:
    """transformers' tokenizer ``__getattr__`` raising for transformers' own line: one package, no skew read."""
    diag, _ = train_log_without_rules("environment/env_chattts_berttokenizerfast_no_pad_token_transformers_too_new")
    assert "api:cross_library" not in context_facts(diag), context_facts(diag)


def test_train_log_a_plugin_call_missing_arguments_is_not_an_absent_install() -> None:
    """pytest-operator's fixture calls ``pytest.TempPathFactory`` without the two arguments pytest 7.3 added: the
    words "missing 2 required positional arguments" no longer read as something absent (environment first
    before); the plugin's code is first now."""
    diag, label = train_log_without_rules("pytest_python/pytest73_plugin_temppathfactory_missing_retention_args")
    assert label["category"] == "library"
    assert "cue:absent" not in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "library", top3(diag)


def test_train_log_a_program_call_missing_an_argument() -> None:
    """equinox's filter_value_and_grad called with its first argument as a keyword: the program's call (model),
    not an install (environment was first before, with and without the rules)."""
    for diagnosis in (train_log_without_rules, train_log_with_rules):
        diag, label = diagnosis("jax/jax_equinox_filter_grad_first_arg_passed_as_keyword_typeerror")
        assert label["category"] == "model"
        assert "cue:absent" not in context_facts(diag), context_facts(diag)
        assert top3(diag)[0] == "model", top3(diag)


def test_train_log_a_device_assert_surfacing_in_a_library_frame() -> None:
    """detectron2's training loop is where CUDA reported a device-side assert that NLLLoss's kernel hit on a class id
    out of range (the annotations): the library's frame was first before, the data is now."""
    diag, label = train_log_without_rules("pytorch/pt_gh5_detectron2_device_assert_invalid_category_id_in_annotations")
    assert label["category"] == "dataset"
    facts = context_facts(diag)
    assert not facts & {"raiser:library", "raiser:library_op"}, facts
    assert top3(diag)[0] == "dataset", top3(diag)


def test_train_log_a_kernel_image_the_driver_refused() -> None:
    """Triton's loader is where the driver refused a kernel image built by a ptxas newer than it: the installed
    versions lead with every rule (the library did, as an operation refusing its operands)."""
    diag, label = train_log_with_rules(
        "pytorch/pt_inductor_triton_kernel_image_invalid_bundled_ptxas_newer_than_driver_470"
    )
    assert label["category"] == "environment"
    assert "raiser:library_op" not in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)


def test_a_library_operation_error_that_is_not_the_device_runtime_keeps_its_reading() -> None:
    """unsloth's torch.mv on the LoRA weights it reshaped: an operand check, not the device runtime's report."""
    diag, _ = train_log_without_rules("pytorch/unsloth_fast_linear_forward_lora_size_mismatch")
    assert "raiser:library_op" in context_facts(diag), context_facts(diag)


# ---------------------------------------------------------------------------------------------------------------
# real runs
# ---------------------------------------------------------------------------------------------------------------

_OPS = """
import torch
class Lazy:
    def __getattr__(self, name):
        raise AttributeError(f"Lazy has no attribute {name}")
def load_op():
    return torch.ops.fakelib_ops.jagged_2d_to_dense
def own_lookup():
    return helper()
def helper():
    return Lazy().pad_token
"""


def test_real_library_asks_torch_ops_for_an_unregistered_operator(tmp_path) -> None:
    """An installed library's line asks torch.ops for an operator no loaded library registered."""
    pytest.importorskip("torch")
    diag, err = run_fake_library_call(tmp_path, _OPS, "fakelib.load_op()", imports="torch")
    assert "'_OpNamespace' 'fakelib_ops' object has no attribute 'jagged_2d_to_dense'" in err
    assert "torch/_ops.py" in err and "__getattr__" in err
    facts = context_facts(diag)
    assert "api:cross_library" in facts and "raiser:library_internal" not in facts, facts
    assert top3(diag)[0] == "environment", top3(diag)


def test_real_own_getattr_and_the_program_asking_are_left_alone(tmp_path) -> None:
    """The library's own ``__getattr__`` asked by its own code stays its invariant; the program's own line asking
    torch.ops is the program's call (its frame raised), not two libraries' skew."""
    pytest.importorskip("torch")
    diag, err = run_fake_library_call(tmp_path, _OPS, "fakelib.own_lookup()", imports="torch")
    assert "AttributeError: Lazy has no attribute pad_token" in err
    facts = context_facts(diag)
    assert "raiser:library_internal" in facts and "api:cross_library" not in facts, facts
    diag, err = run_failing(tmp_path, "import torch\ntorch.ops.fakelib_ops.jagged_2d_to_dense\n")
    assert "'_OpNamespace' 'fakelib_ops' object has no attribute" in err
    facts = context_facts(diag)
    assert "raiser:user" in facts and "api:cross_library" not in facts, facts


def test_real_missing_argument_is_not_absent(tmp_path) -> None:
    """CPython's own TypeError for a call without a required argument: cue:absent does not hold."""
    diag, err = run_failing(tmp_path, "def area(width, height):\n    return width * height\narea(3)\n")
    assert "area() missing 1 required positional argument: 'height'" in err
    assert "cue:absent" not in context_facts(diag), context_facts(diag)


def test_missing_argument_beside_an_absent_thing_keeps_the_cue(tmp_path) -> None:
    """Other words of absence in the same message still hold (only the signature's "missing" is set aside; a real
    Python run whose message says both)."""
    body = (
        "def load(path):\n    return path\n\ntry:\n    load()\nexcept TypeError as exc:\n"
        "    raise TypeError(f\"{exc} (plugin 'extra' is not installed)\") from None\n"
    )
    diag, err = run_failing(tmp_path, body)
    assert "load() missing 1 required positional argument: 'path' (plugin 'extra' is not installed)" in err
    assert "cue:absent" in context_facts(diag), context_facts(diag)
