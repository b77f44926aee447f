"""What CANN's own messages name, read without a rule for their code (issue 13, kpta3).

CANN's error manager prints a code's reason on lines of its own ("EE1001: [PID: N] … Reason: …", "EZ9999[PID: N] …
(EZ9999): <reason>"), below the RuntimeError that carries only the numeric ACL/aclnn code; a hint rule
(``reason.npu_message_lines``) keeps them, and the lines naming an Ascend chip. Two facts are read in them and in the
failing message (``engine/reason.py``, ``_npu_message_cues``; ``05-reasoning.toml``, ``# --- kpta3 ---``):

* ``cue:npu_setting_refused``: CANN names one of its environment-variable settings (ASCEND_RT_VISIBLE_DEVICES,
  HCCL_BUFFSIZE, …) and refuses its value: the configuration, not the kernel that checked it or the installation;
* ``cue:chip_unsupported``: a line names an Ascend chip beside "cannot find", "not supported", "no kernel/target":
  the operator or compiler path has no implementation for this chip (type ``unsupported_op``).

The train logs are diagnosed with the rules that explained them left out (``bench/ablate_rules.py``'s reading): the
reasoning alone must find the home.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import context_checks, context_facts, top3, train_log_with_rules, train_log_without_rules

REASONING = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "05-reasoning.toml"


def _pattern(fact: str) -> re.Pattern[str]:
    data = tomllib.loads(REASONING.read_text())
    return re.compile(next(c["pattern"] for c in data["context"] if c["fact"] == fact))


def test_visible_devices_out_of_order_is_the_launch_setting() -> None:
    # EE1001 "The argument is invalid.Reason: set ASCEND_RT_VISIBLE_DEVICES:0,2,4,6,1,3,5,7 error, it must be
    # configured in ascending order", printed below torch_npu's 207004 RuntimeError from aclrtGetDeviceCount
    diag, label = train_log_without_rules("ascend/gpustack_vllm_ascend_visible_devices_not_ascending")
    assert label["category"] == "config"
    assert "cue:npu_setting_refused" in context_facts(diag)
    assert top3(diag)[0] == "config", top3(diag)
    assert context_checks(diag, "config")["context:cue:npu_setting_refused"] == "passed"


def test_hccl_buffer_too_small_keeps_the_setting_among_the_three() -> None:
    # an inner error (EZ9999) whose reason is the MoE dispatch's tiling check "HCCL_BUFFSIZE is too SMALL": the
    # aclnn 561002 (tiling) code alone reads as the operator; the variable named makes the value a home
    diag, label = train_log_without_rules("ascend/pta_moe_dispatch_hccl_buffsize_too_small")
    assert label["category"] == "config"
    assert "cue:npu_setting_refused" in context_facts(diag)
    assert "config" in top3(diag), top3(diag)
    assert context_checks(diag, "operator")["context:cue:npu_setting_refused"] == "failed"
    with_rules, _ = train_log_with_rules("ascend/pta_moe_dispatch_hccl_buffsize_too_small")
    assert top3(with_rules)[0] == "config"


def test_chip_without_a_compiler_target_is_the_operator() -> None:
    # Triton-Ascend's bishengir has no Ascend310P3 target ("Cannot find option named 'Ascend310P3'!"), printed below
    # the MLIRCompilationError whose own line holds no message
    diag, label = train_log_without_rules("ascend/vllm_ascend_310p3_triton_bishengir_target_unsupported")
    assert label["category"] == "operator"
    assert "cue:chip_unsupported" in context_facts(diag)
    assert top3(diag)[0] == "operator", top3(diag)
    assert diag.profile.type == label["type"] == "unsupported_op"


def test_chip_named_beside_a_missing_kernel_lifts_the_operator() -> None:
    # 310P lacks PromptFlashAttention's bf16 binary; TBE's "[ascend310p] … not found" line names the chip
    diag, label = train_log_without_rules("ascend/pta_310p_promptflashattention_no_binary")
    assert label["category"] == "operator"
    assert context_checks(diag, "operator")["context:cue:chip_unsupported"] == "passed"
    assert "operator" in top3(diag)[:2]
    with_rules, _ = train_log_with_rules("ascend/pta_310p_promptflashattention_no_binary")
    assert top3(with_rules)[0] == "operator"


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        ("EE1001: [PID: 1] The argument is invalid.Reason: set ASCEND_RT_VISIBLE_DEVICES:1,0 error, it must be", True),
        ("EZ9999[PID: 1] 2025-12-23 (EZ9999):  HCCL_BUFFSIZE is too SMALL, maxBs = 512", True),
        ("EI0001: the value of environment variable HCCL_CONNECT_TIMEOUT is invalid", True),
        # a remedy offered for a timeout, not a verdict on the value
        (
            "EI0002: The wait execution of the Notify register times out. Please check whether HCCL_EXEC_TIMEOUT is",
            False,
        ),
        # the installation's variables (set_env.sh): the catalogue's 148049/561107 rules read them
        ("ASCEND_OPP_PATH is invalid", False),
        ("ASCEND_HOME_PATH must be set", False),
        # an enum of aclCompileOpt, not a setting the user exported
        ("AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001", False),
    ],
)
def test_setting_refused_reads_a_verdict_on_a_cann_variable(line: str, holds: bool) -> None:
    assert bool(_pattern("cue:npu_setting_refused").search(line)) is holds


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        ("bishengir-compile: for the --target option: Cannot find option named 'Ascend310P3'!", True),
        ("Atlas A2 does not support MC2", True),
        ("op GroupedMatmul is not supported on Ascend910B2", True),
        # a chip named without a verdict, a size that only looks like a chip
        ("[INFO] soc version: Ascend910B2, device 0", False),
        ("Tried to allocate 910.00 MiB; file not found", False),
    ],
)
def test_chip_unsupported_needs_the_chip_and_a_verdict(line: str, holds: bool) -> None:
    assert bool(_pattern("cue:chip_unsupported").search(line)) is holds


def test_cann_reason_line_is_read_below_the_exception() -> None:
    # the failing message names only the ACL code; the reason is on CANN's own line after it
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/torch_npu/npu/utils.py", line 80, in set_device\n'
        "    torch_npu._C._npu_setDevice(device_id)\n"
        "RuntimeError: init:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:292 NPU function error: "
        "aclrtGetDeviceCount(&device_count), error code is 207004\n"
        "EE1001: [PID: 7] 2025-07-17-08:06:53.296.370 The argument is invalid.Reason: set "
        "ASCEND_RT_VISIBLE_DEVICES:3,1 error, it must be configured in ascending order\n"
    )
    diag = diagnose(texts={"stderr": text})
    assert "cue:npu_setting_refused" in context_facts(diag)
    without = diagnose(texts={"stderr": text.rsplit("EE1001", 1)[0]})
    assert "cue:npu_setting_refused" not in context_facts(without)
