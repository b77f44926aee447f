"""The type CANN's and MindSpore's own words give a failure on an Ascend NPU (issue 13, kasc6).

``engine/reason.py`` (``# --- kasc6 ---``: ``_npu_argument_refused``, ``npu_type``) and ``05-reasoning.toml``
(``# --- kasc6 ---``):

* ``cue:npu_argument_refused``: CANN's runtime checked an argument of the call and refused it (EE1001 "The argument
  is invalid", ACL's parameter-verification codes 1000xx, the runtime's 107xxx): the program's call, type
  ``runtime_error`` where a device runtime's reading said ``backend``; not where a 5xxxxx code, an inner error or a
  device fault is named beside it (``cue:npu_fault_code``);
* ``cue:chip_unsupported`` (kpta3) types the failure ``unsupported_op`` also over a generic reading
  (``runtime_error`` of a compile error, ``backend`` of a kernel that cannot be found);
* ``type:backend``: an ACL runtime/aclnn code in the notation a C++ caller logs it with ("aclrtX failed: 507018",
  "error_code=507018"), and MindSpore's "Unsupported device target … This process only supports one of".

The train logs are diagnosed with every rule and with the rules that explained them left out (the reasoning alone).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import top3, train_log_with_rules, train_log_without_rules

REASONING = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "05-reasoning.toml"


def _patterns(fact: str) -> list[re.Pattern[str]]:
    data = tomllib.loads(REASONING.read_text())
    return [re.compile(c["pattern"]) for c in data["context"] if c["fact"] == fact and "pattern" in c]


def _holds(fact: str, line: str) -> bool:
    return any(p.search(line) for p in _patterns(fact))


@pytest.mark.parametrize("reading", [train_log_with_rules, train_log_without_rules])
@pytest.mark.parametrize(
    "name",
    [
        # torch_npu's allocator in a spawned worker without a device set: 107002 "The context is empty", EE1001
        # "The argument is invalid.Reason: rtGetDevMsg execute failed, reason=[context pointer null]"
        "ascend/fastchat_npu_worker_subprocess_context_empty_107002",
        # 207004 from aclrtGetDeviceCount, whose EE1001 reason is the visible devices out of order
        "ascend/gpustack_vllm_ascend_visible_devices_not_ascending",
    ],
)
def test_a_refused_argument_is_the_programs_call(name: str, reading) -> None:
    diag, label = reading(name)
    assert label["type"] == "runtime_error"
    assert diag.profile.type == "runtime_error", diag.profile.type


def test_a_refused_argument_beside_an_inner_error_is_not_read() -> None:
    # ACL's "Parameter verification failed." (100000) printed after GE's "E19999: Inner Error!": the fault types it
    # (the rule's runtime_error stays; the cue is withdrawn from the failing message too)
    diag, _label = train_log_without_rules("ascend/ascend_mineru_910a_nonzero_op_graph_build_unsupported")
    assert all(not v.name.endswith("cue:npu_argument_refused") for c in diag.root_causes for v in c.validation_checks)
    text = (
        "RuntimeError: NPU function error: aclrtSynchronizeStream, error code is 507015\n"
        "[Error]: The aicore execution is abnormal.\n"
        "EE1001: The argument is invalid.Reason: rtGetDevMsg execute failed, reason=[context pointer null]\n"
    )
    assert diagnose(texts={"stderr": text}).profile.type == "backend"
    refused = "RuntimeError: NPU function error: aclrtSetDevice, error code is 107001\n[Error]: Invalid device ID.\n"
    assert diagnose(texts={"stderr": refused}).profile.type == "runtime_error"


@pytest.mark.parametrize("reading", [train_log_with_rules, train_log_without_rules])
def test_chip_without_a_compiler_target_is_unsupported_over_the_compile_error(reading) -> None:
    # Triton-Ascend's bishengir has no Ascend310P3 target; torch's compile rule reads MLIRCompilationError as a
    # runtime_error
    diag, label = reading("ascend/vllm_ascend_310p3_triton_bishengir_target_unsupported")
    assert diag.profile.type == label["type"] == "unsupported_op"
    assert "operator" in top3(diag)


def test_chip_missing_a_binary_is_unsupported_over_the_runtime_code() -> None:
    # 310P lacks PromptFlashAttention's bf16 binary; without the rules the remaining aclnn reading said backend
    diag, label = train_log_without_rules("ascend/pta_310p_promptflashattention_no_binary")
    assert diag.profile.type == label["type"] == "unsupported_op"


@pytest.mark.parametrize("reading", [train_log_with_rules, train_log_without_rules])
def test_runtime_code_in_a_callers_notation_is_the_device_runtime(reading) -> None:
    # "aclrtSynchronizeStream failed: 507018", "error_code=507018": no exception, no rule
    diag, label = reading("ascend/ascend_simpler_ci_device4_wedged_507018")
    assert diag.profile.type == label["type"] == "backend"
    assert diag.root_causes[0].category == "backend"


def test_mindspore_device_target_it_cannot_load_is_the_back_end() -> None:
    diag, label = train_log_without_rules("mindspore/ms_mindyolo_unsupported_device_ascend_cann_missing")
    assert diag.profile.type == label["type"] == "backend"
    assert top3(diag)[0] == label["category"] == "environment"


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        ("EE1001: [PID: 1] The argument is invalid.Reason: rtGetDevMsg execute failed", True),
        ("[Error]: Parameter verification failed.", True),
        ("NPU function error: aclrtSetDevice(device_id), error code is 107001", True),
        ("aclrtSetCurrentContext failed: 107002", True),
        ("OPS function error: NonZero, error code is 100000", True),
        # aclnn's parameter codes: the catalogue reads an operator refusing a dtype as unsupported_op
        ("call aclnnMatmul failed, error code is 161002", False),
        ("error code is 507018", False),
        ("error code is 1070023", False),
    ],
)
def test_argument_refused_words(line: str, holds: bool) -> None:
    assert _holds("cue:npu_argument_refused", line) is holds


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        ("NPU function error: call aclnnMoeDistributeDispatchV3 failed, error code is 561000", True),
        ("E19999: Inner Error!", True),
        ("EZ9999: Inner Error!", True),
        ("rtStreamSynchronize execute failed, reason=[device task abort]", True),
        ("NPU function error: FORCE STOP, error code is 107020", True),
        ("reason=[context pointer null]", False),
        ("error code is 207004", False),
    ],
)
def test_fault_words(line: str, holds: bool) -> None:
    assert _holds("cue:npu_fault_code", line) is holds


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        ("BootstrapDispatcher: aclrtSynchronizeStream failed: 507018", True),
        ("  error_code=507018 (device-level)", True),
        ("aclnnAdd ret=561002", True),
        ("status = 207001", True),
        # class 1 is the refused argument's; a seven-digit number, an HTTP status are not ACL codes
        ("aclrtSetDevice failed: 107001", False),
        ("failed: 5070181", False),
        ("request failed: 503", False),
    ],
)
def test_acl_code_notations(line: str, holds: bool) -> None:
    pats = [p for p in _patterns("type:backend") if "07|61" in p.pattern]
    assert len(pats) == 1
    assert bool(pats[0].search(line)) is holds


@pytest.mark.parametrize(
    ("line", "holds"),
    [
        (
            "RuntimeError: Unsupported device target Ascend. This process only supports one of the ['CPU']. Please",
            True,
        ),
        ("Load dynamic library: libmindspore_ascend.so.2 failed. libge_runner.so: cannot open shared object", True),
        ("ValueError: Unsupported device target 'npu'", False),
    ],
)
def test_mindspore_back_end_words(line: str, holds: bool) -> None:
    pats = [p for p in _patterns("type:backend") if "libmindspore" in p.pattern]
    assert len(pats) == 1
    assert bool(pats[0].search(line)) is holds
