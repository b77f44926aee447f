"""Facts from the train misses of batches 62-65 (#13), 38th pass: a file of the program named like the package it
imports (its frame runs ``M.py`` while ``module 'M'`` lacks a name), produced here for real with the interpreter;
FSDP's older wording of its uniform-parameters check; TensorFlow Lite's operator versions. The train logs of this
pass's other new rules (gRPC's message-size limit, Rust's panic hook, GitHub's rate limit, PyO3's Python range,
aiohttp's loop, ONNX Runtime's providers, gradio_client's schemas, accelerators' runtimes, TorchScript) are rows
of the table in test_parser_panic_fp8_facts.py. Each test fails on the rules and the reasoning from before the
commit that added its fact."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.kb.kb_helpers import context_facts, fired, run_failing, top3, train_diagnosis

# a helper module of the program, saved as random.py beside the script: ``import random`` inside it finds itself
# first on sys.path (the script's folder), so random.choice is looked up on the program's own file
_SHADOW = """
    import random


    def pick(items):
        return random.choice(items)
"""

_MAIN = """
    import random

    print(random.pick([1, 2, 3]))
"""


def test_a_program_file_named_like_the_package_it_imports_is_the_program(tmp_path: Path) -> None:
    (tmp_path / "random.py").write_text(textwrap.dedent(_SHADOW))
    diag, err = run_failing(tmp_path, _MAIN, as_file=True)  # beside random.py: the script's folder comes first
    assert "module 'random' has no attribute 'choice'" in err and "partially initialized" not in err
    assert "module:own_file" in context_facts(diag)
    assert top3(diag)[0] == "model", [(rc.rule, rc.category) for rc in diag.root_causes[:3]]


def test_a_package_lacking_a_name_called_from_a_differently_named_file_is_not_shadowed(tmp_path: Path) -> None:
    # the same program with the helper saved as helpers.py: random is the standard library's, which has no pick
    (tmp_path / "helpers.py").write_text("import random\n\n\ndef pick(items):\n    return random.pick(items)\n")
    diag, err = run_failing(tmp_path, "import helpers\n\nprint(helpers.pick([1, 2, 3]))\n", as_file=True)
    assert "module 'random' has no attribute 'pick'" in err
    assert "module:own_file" not in context_facts(diag)


def test_fsdp_1_13_s_wording_of_the_uniform_requires_grad_check_is_fsdps_grouping() -> None:
    # PyTorch 1.12-1.13: "`FlatParameter` requires uniform `requires_grad`"; the thread's fix was the wrapping
    # settings (use_orig_params, the wrap policy), which the rule keeps among its first three homes
    diag = train_diagnosis("distributed/fsdp_flatparameter_nonuniform_requires_grad_frozen_params")
    assert fired(diag, "fsdp.non_uniform_params")
    assert "config" in top3(diag)
    assert diag.profile.stage == "startup"


def test_a_tflite_runtime_without_the_models_operator_version_is_the_runtimes_release() -> None:
    # tfjs-tflite bundled an older runtime (the thread's fix was its release): the runtime's age first, the
    # library that bundles it second
    diag = train_diagnosis("environment/tfjs_tflite_runtime_too_old_conv2d_opcode_v6")
    assert diag.root_causes[0].rule == "tflite.op_version_unsupported"
    assert top3(diag)[:2] == ["environment", "library"]
    assert diag.profile.type == "unsupported_op"
