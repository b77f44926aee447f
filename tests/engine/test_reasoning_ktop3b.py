"""Top-3 composition (issue 13, ktop3b): two facts that bring a left-out home among the three hypotheses.

- ``cue:kernel_lowering``: a kernel compiler built on MLIR refused one operation (MLIR's op verifier
  ``error: '<dialect>.<op>' op …``, Mosaic's "The MLIR operation involved:" / "TPU kernel compiler error" / "Mosaic
  failed to compile TPU kernel", Triton's ``MLIRCompilationError``): the operation's lowering for this target lifts
  the operator, which the generic runtime family does not list. Python's own "unsupported operand type(s)" is not it.
- ``type:backend`` from JAX's own words for a device back end it could not initialise (``xla_bridge``: "Unable to
  initialize backend '<platform>': …", before "Requested backend <platform>, but it failed to initialize: …"): the
  failure is the device back end's (its runtime, its plugin, the platform chosen), which the generic runtime family
  does not list.
- pytest's "ERROR collecting <path>" header (``[patterns] test_runner_words``, ``pytest_collect_header``) (or "Interrupted: N errors during collection")
  says that pytest ran and failed while collecting tests, where no session header, no frame and no rule said so: the
  tests ran (``run:tests``, not ``run:no_tests``), so the tests' code stays a hypothesis.

Each train log is diagnosed as ``bench/confusion.py`` does: with every rule, and with the findings of the rules whose
causes that diagnosis listed dropped (``--without-rules``). The pytest check uses a real pytest run (``pytester``).
"""

from __future__ import annotations

import re
import warnings

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import context_checks, context_facts, top3, train_log_with_rules, train_log_without_rules


def _kernel_lowering_pattern() -> re.Pattern[str]:
    ctx = next(c for c in load_ruleset().reasoning.contexts if c.fact == "cue:kernel_lowering")
    assert ctx.pattern is not None
    return ctx.pattern


# ---------------------------------------------------------------------------------------------------------------
# cue:kernel_lowering
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        # Pallas on TPU: Mosaic's "Internal TPU kernel compiler error" and "The MLIR operation involved: tpu.matmul"
        "jax/pallas_tpu_matmul_block_k_below_128_unsupported_layout",
        # jax-metal: MLIR's op verifier rejects the 6-D uint8 'anec.reshape' (no exception, the process aborted)
        "jax/jax_metal_tile_uint8_6d_reshape_abort_fixed_in_jax_metal_0_1_1",
        # vllm-ascend on 310P: Triton-Ascend's MLIRCompilationError (bishengir has no target for the chip)
        "ascend/vllm_ascend_310p3_triton_bishengir_target_unsupported",
    ],
)
def test_train_log_a_refused_lowering_puts_the_operator_among_the_three_without_the_rules(name: str) -> None:
    """Before, the operator was outside the three (environment, library, model); now the fact lifts it."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == "operator"
    assert "cue:kernel_lowering" in context_facts(diag), context_facts(diag)
    assert context_checks(diag, "operator").get("context:cue:kernel_lowering") == "passed"
    assert "operator" in top3(diag), top3(diag)


def test_train_log_pallas_with_the_rules_keeps_the_operator() -> None:
    diag, label = train_log_with_rules("jax/pallas_tpu_matmul_block_k_below_128_unsupported_layout")
    assert label["category"] == "operator"
    assert "operator" in top3(diag), top3(diag)


def test_pythons_unsupported_operand_type_is_not_a_lowering() -> None:
    """A TypeError of the program's own expression (equinox/optax: a float times a module) is not the compiler's."""
    diag, _label = train_log_without_rules("jax/equinox_optax_update_grads_wrt_input_not_model")
    assert "cue:kernel_lowering" not in context_facts(diag)


@pytest.mark.parametrize(
    ("text", "fires"),
    [
        # MLIR's op verifier (emitOpError): "'<dialect>.<op>' op <what it rejects>"
        ("loc(\"x.py\":1:0): error: 'tosa.reshape' op result #0 must be tensor of number values", True),
        ("INTERNAL: Mosaic failed to compile TPU kernel: Unsupported matmul RHS type on target", True),
        ("triton.compiler.errors.MLIRCompilationError:", True),
        ("TypeError: unsupported operand type(s) for *: 'float' and 'Linear'", False),
        ("error: 'x' is undefined", False),
    ],
)
def test_the_lowering_words(text: str, fires: bool) -> None:
    assert bool(_kernel_lowering_pattern().search(text)) is fires


# ---------------------------------------------------------------------------------------------------------------
# JAX could not initialise a device back end
# ---------------------------------------------------------------------------------------------------------------


def test_train_log_a_back_end_jax_could_not_initialise_is_the_device_back_end() -> None:
    """Colab's nightly TPU driver: "Requested backend tpu_driver, but it failed to initialize: DEADLINE_EXCEEDED".
    Before, the runtime family offered the installed versions, the program's code and the library; now the failure
    is typed as the device back end's, which is among the three with and without the rules."""
    diag, label = train_log_without_rules("jax/jax_colab_tpu_nightly_driver_deadline_exceeded")
    assert label["category"] == "backend"
    assert diag.profile.type == "backend"
    assert "backend" in top3(diag), top3(diag)
    diag, _label = train_log_with_rules("jax/jax_colab_tpu_nightly_driver_deadline_exceeded")
    assert "backend" in top3(diag), top3(diag)


def test_train_log_a_tpu_held_by_another_process_keeps_its_home() -> None:
    """JetStream's TPU already in use ("Unable to initialize backend 'tpu'"): typed as the back end's now, and the
    home its thread confirmed (the library's code holding the TPU) stays among the three."""
    diag, label = train_log_without_rules("jax/jetstream_xla2_head_holds_tpu_workers_in_use")
    assert label["type"] == "backend"
    assert diag.profile.type == "backend"
    assert label["category"] in top3(diag), top3(diag)


@pytest.mark.parametrize(
    ("text", "fires"),
    [
        ("RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.", True),
        ("RuntimeError: Requested backend tpu_driver, but it failed to initialize: DEADLINE_EXCEEDED", True),
        ("RobotIKController is required, but it failed to initialize.", False),
    ],
)
def test_the_back_end_words(text: str, fires: bool) -> None:
    contexts = [c for c in load_ruleset().reasoning.contexts if c.fact == "type:backend" and c.pattern is not None]
    assert any(c.pattern.search(text) for c in contexts if c.pattern is not None) is fires


# ---------------------------------------------------------------------------------------------------------------
# pytest's collection report says that tests ran
# ---------------------------------------------------------------------------------------------------------------


def test_train_log_a_collection_error_keeps_the_tests_code_without_the_rules() -> None:
    """bmad's CI: two test files with one basename; the paste is pytest's ERRORS section alone (no session header).
    Before, the tests' code was ruled out (``run:no_tests``) and fell out of the three."""
    diag, label = train_log_without_rules("pytest_python/bmad_regression_test_duplicate_basename_test_lcavity")
    assert label["category"] == "test_code"
    assert context_checks(diag, "test_code").get("context:run:tests") == "passed"
    assert "test_code" in top3(diag), top3(diag)


@pytest.mark.parametrize(
    ("text", "fires"),
    [
        ("__________ ERROR collecting tests/test_io.py ___________", True),
        ("!!!!!!!!!!!!!!!!!!!! Interrupted: 2 errors during collection !!!!!!!!!!!!!!!!!!!!", True),
        ("ERROR: could not collect garbage", False),
        ("Interrupted by user", False),
    ],
)
def test_the_collection_words(text: str, fires: bool) -> None:
    assert bool(load_ruleset().reasoning.patterns["pytest_collect_header"].search(text)) is fires


def test_real_pytest_run_a_pasted_errors_section_says_tests_ran(pytester: pytest.Pytester) -> None:
    """A real pytest run whose two test modules share a basename (pytest's "import file mismatch"); the paste keeps
    only its ERRORS section. With the rules that explain it left out, the tests still ran: the tests' code is lifted
    (``run:tests``), not ruled out (``run:no_tests``)."""
    from bench.ablate_rules import OWN, dropping

    pytester.mkdir("a")
    pytester.mkdir("b")
    (pytester.path / "a" / "test_same.py").write_text("def test_a():\n    pass\n")
    (pytester.path / "b" / "test_same.py").write_text("def test_b():\n    pass\n")
    res = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider", "--import-mode=prepend")
    assert res.ret == 2, res.outlines
    lines = res.outlines
    start = next(i for i, line in enumerate(lines) if "ERRORS" in line)
    end = next(i for i, line in enumerate(lines) if "short test summary" in line)
    # the paste names the project's folder, not pytester's (whose path says "pytest" by itself)
    paste = "\n".join(lines[start:end]).replace(str(pytester.path), "/home/user/proj")
    assert "ERROR collecting" in paste and "import file mismatch" in paste, paste
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = diagnose(texts={"paste": paste})
        rules = {c.rule for c in first.root_causes if not c.rule.startswith(OWN)}
        with dropping(rules):
            diag = diagnose(texts={"paste": paste})
    checks = context_checks(diag, "test_code") if any(c.category == "test_code" for c in diag.root_causes) else {}
    assert checks.get("context:run:tests") == "passed", (top3(diag), checks)
    assert "context:run:no_tests" not in checks
