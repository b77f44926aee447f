"""torch_npu's own messages (kpta2, #13): the texts torch_npu raises before its ERR code line, where the text
says more than the code: a forked child re-initialising the NPU, torch_npu loaded into a torch built for another
accelerator, a CANN function the installed CANN lacks, PYTORCH_NPU_ALLOC_CONF keys and values, torch_npu's own
environment variables, ProcessGroupHCCL's usage rules and heartbeat monitor, the CANN environment check at
import, and the float-status overflow API on Ascend910B and later chips (55-cann-catalogue.toml, "kpta2").

Except where a test says otherwise, these messages are CATALOGUE-FORM, NOT CAPTURED LOGS: torch_npu cannot run
here and no train log prints them. Each is the message text of torch_npu's source (Ascend/pytorch: TORCH_CHECK / raise texts) followed by the code
line torch_npu's formatErrorCode appends ("[ERROR] <time> (PID:n, Device:n, RankID:n) ERR<mm><ccc> <MOD>
<words>", NPUException.cpp), with a made-up time, pid and value where the source interpolates one. One real
log (a vLLM-Ascend worker, tests/data/kb/catalogue_round2) shows "Failed to find function"; real train logs that
print torch_npu's ERR lines show that the new rules stay silent where their messages are absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3, train_log_path

KPTA2 = (
    "cann.pta.npu_fork_reinit",
    "cann.pta.two_accelerators",
    "cann.pta.cann_function_missing",
    "cann.pta.npu_alloc_conf",
    "cann.pta.env_var_value",
    "cann.pta.hccl_usage",
    "cann.pta.hccl_cpu_tensor",
    "cann.pta.hccl_watchdog_stuck",
    "cann.pta.cann_env_paths",
    "cann.pta.overflow_api_newer_chip",
)
_MOD = {"PTA": 0, "OPS": 1, "DIST": 2, "GRAPH": 3, "PROF": 4}
_CODE = {
    "PARAM": (1, "invalid parameter"),
    "TYPE": (2, "invalid type"),
    "VALUE": (3, "invalid value"),
    "INTERNAL": (5, "internal error"),
    "NOT_SUPPORT": (7, "feature not supported"),
    "NOT_FOUND": (8, "resource not found"),
    "UNAVAIL": (9, "resource unavailable"),
}
SITE = "/usr/local/lib/python3.10/site-packages"
TB = 'Traceback (most recent call last):\n  File "/home/user/train.py", line 12, in <module>\n    main()\n'


def _code(mod: str, code: str, device: int = 0) -> str:
    n, words = _CODE[code]
    return (
        f"\n[ERROR] 2025-03-01-10:00:00 (PID:4242, Device:{device}, RankID:0) ERR{_MOD[mod]:02d}{n:03d} {mod} {words}"
    )


def _raise(exc: str, msg: str, mod: str, code: str) -> str:
    return f"{TB}{exc}: {msg}{_code(mod, code)}\n"


def _diag(text: str):
    return diagnose(texts={"train.log": text})


def test_the_rules_load_and_the_generic_code_rules_name_them():
    ours = {r.id for r in pack_rules("55-cann-catalogue.toml")}
    assert set(KPTA2) <= ours
    generic = {r.id: r for r in pack_rules("50-ascend.toml")}
    for rid in ("pta.err.feature_not_supported", "pta.err.invalid_argument", "pta.err.resource_not_found"):
        named = [s for s in generic[rid].suppressed_by if s in KPTA2]
        assert named, rid
        assert set(named) <= ours


def test_npu_used_in_a_forked_child():
    # torch_npu/npu/__init__.py _lazy_init, after its after-fork hook marked the child
    text = (
        f'{TB}  File "{SITE}/torch_npu/npu/__init__.py", line 317, in _lazy_init\n    raise RuntimeError(\n'
        "RuntimeError: Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, "
        "you must use the 'spawn' start method\n"
    )
    d = _diag(text)
    assert fired(d, "cann.pta.npu_fork_reinit")
    assert d.profile.type == "backend"
    assert top3(d)[0] == "model"
    assert "library" in top3(d)


def test_torch_npu_in_a_cuda_build_of_torch():
    # torch_npu/__init__.py _check_device_conflict writes its code line itself (Device:-1, RankID:-1)
    text = (
        f'{TB}  File "{SITE}/torch_npu/__init__.py", line 22, in _check_device_conflict\n    raise RuntimeError(\n'
        "RuntimeError: Two accelerators cannot be used at the same time in PyTorch: npu and cuda. You can install "
        "the cpu version of PyTorch to use your npu device, or use the cuda device with "
        "'export TORCH_DEVICE_BACKEND_AUTOLOAD=0'.\n"
        "[ERROR] 2025-03-01-10:00:00 (PID:4242, Device:-1, RankID:-1) ERR00007 PTA feature not supported\n"
    )
    d = _diag(text)
    assert fired(d, "cann.pta.two_accelerators")
    assert not fired(d, "pta.err.feature_not_supported"), "the text names the cause, not an unsupported feature"
    assert d.profile.type == "runtime_error"
    assert d.profile.stage == "startup"
    assert top3(d)[:2] == ["environment", "config"]


def test_a_cann_function_the_installed_cann_lacks():
    # AclInterface.cpp: TORCH_CHECK(func, "Failed to find function ", "aclprofCreateStepInfo", PROF_ERROR(NOT_FOUND))
    d = _diag(_raise("RuntimeError", "Failed to find function aclprofCreateStepInfo", "PROF", "NOT_FOUND"))
    assert fired(d, "cann.pta.cann_function_missing")
    assert not fired(d, "pta.err.resource_not_found")
    assert top3(d)[0] == "environment"
    # the variant that also asks to upgrade CANN reads the same (with pta.cann_too_old)
    d = _diag(
        _raise(
            "RuntimeError",
            "Failed to find function aclrtStreamQuery, Please upgrade CANN version.",
            "PROF",
            "NOT_FOUND",
        )
    )
    assert fired(d, "cann.pta.cann_function_missing")
    assert top3(d)[0] == "environment"


def test_a_real_log_of_a_cann_function_the_installed_cann_lacks():
    """Real log (vllm-project/vllm-ascend PR 1261): graph capture needs aclmdlRICaptureBegin, which the CANN
    installed lacks; torch_npu raised it with ERR00008 from a vLLM worker's prefixed lines."""
    log = (
        Path(__file__).resolve().parents[1]
        / "data"
        / "kb"
        / "catalogue_round2"
        / "vllm_ascend_capture_begin_missing_in_cann.log"
    )
    d = diagnose([str(log)])
    assert fired(d, "cann.pta.cann_function_missing")
    assert not fired(d, "pta.err.resource_not_found")
    assert d.profile.type == "runtime_error"
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("cann.pta.cann_function_missing", "environment")
    assert "aclmdlRICaptureBegin" in top.summary


def test_a_warning_with_the_same_words_is_not_the_failure():
    # TORCH_NPU_WARN("Failed to find function halGetAPIVersion.") is printed and the run goes on
    text = (
        "[W compiler_depend.ts:52] Warning: Failed to find function halGetAPIVersion. (function operator())\n"
        f"{TB}ValueError: operands could not be broadcast together\n"
    )
    assert not fired(_diag(text), "cann.pta.cann_function_missing")


@pytest.mark.parametrize(
    ("exc", "msg", "mod", "code"),
    [
        ("ValueError", "Unrecognized key 'max_split_size' in NPU allocator config, ", "OPS", "VALUE"),
        (
            "ValueError",
            "torch_npu not support key 'pinned_use_cuda_host_register' in NPU allocator config, ",
            "OPS",
            "VALUE",
        ),
        (
            "RuntimeError",
            "Both PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF have been set, please set only one of them.",
            "OPS",
            "VALUE",
        ),
        (
            "RuntimeError",
            "`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with `expandable_segments`, "
            "please set `expandable_segments` to `False`.",
            "OPS",
            "PARAM",
        ),
        ("RuntimeError", "per_process_memory_fraction is invalid, set it in [0.0, 1.0]", "PTA", "VALUE"),
        (
            "RuntimeError",
            "CachingAllocator option segment_size_mb error, must be [20, 512], dtype is int",
            "OPS",
            "VALUE",
        ),
    ],
)
def test_npu_allocator_configuration(exc, msg, mod, code):
    d = _diag(_raise(exc, msg, mod, code))
    assert fired(d, "cann.pta.npu_alloc_conf")
    assert not fired(d, "pta.err.invalid_argument"), "the generic 'the program passed a bad argument' stands aside"
    assert top3(d)[0] == "config"


@pytest.mark.parametrize(
    "msg",
    [
        "TASK_QUEUE_ENABLE should be 0, 1 or 2",
        "ASCEND_LAUNCH_BLOCKING should be 0 or 1.",
        "HCCL_BUFFSIZE should be positive.",
        "TORCH_ACL_INIT_CONFIG_PATH /home/user/acl.json is invalid. Please set the environment variable "
        "'TORCH_ACL_INIT_CONFIG_PATH' to a valid JSON config file path.",
    ],
)
def test_torch_npu_environment_variables(msg):
    code = "UNAVAIL" if "ACL_INIT" in msg else "VALUE"
    d = _diag(_raise("RuntimeError", msg, "PTA", code))
    assert fired(d, "cann.pta.env_var_value")
    assert not fired(d, "pta.err.invalid_argument")
    assert not fired(d, "pta.err.resource_not_found")
    assert d.profile.stage == "startup"
    assert top3(d)[0] == "config"


def test_inf_nan_mode_on_a_chip_that_requires_it():
    # NpuVariables.cpp IsSupportInfNan: AT_ERROR without an ErrCode
    d = _diag(
        f"{TB}RuntimeError: INF_NAN_MODE_ENABLE shouldn't be set to 0 on the current device. If you want to disable "
        "inf-nan mode, please export INF_NAN_MODE_FORCE_DISABLE=1\n"
    )
    assert fired(d, "cann.pta.env_var_value")
    assert top3(d)[0] == "config"


@pytest.mark.parametrize(
    "msg",
    [
        "ProcessGroupHCCL does not support gather",
        "ProcessGroupHCCL support one device per process only",
        "Unsupported data type for HCCL process group",
    ],
)
def test_what_process_group_hccl_does_not_offer(msg):
    d = _diag(_raise("RuntimeError", msg, "DIST", "NOT_SUPPORT"))
    assert fired(d, "cann.pta.hccl_usage")
    assert not fired(d, "pta.err.feature_not_supported")
    assert d.profile.type == "unsupported_op"
    assert top3(d)[:2] == ["model", "library"]


def test_a_collective_on_cpu_tensors_in_an_hccl_group():
    d = _diag(_raise("RuntimeError", "Tensors must be NPU and dense", "DIST", "TYPE"))
    assert fired(d, "cann.pta.hccl_cpu_tensor")
    assert not fired(d, "pta.err.invalid_argument")
    assert d.profile.type == "communication"
    assert set(top3(d)) == {"library", "config", "model"}


def test_process_group_hccl_heartbeat_monitor():
    text = (
        "[rank1]:[E ProcessGroupHCCL.cpp:1790] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be "
        "terminated after dumping debug info. workMetaList_.size()=1\n"
        "[rank1]:[F ProcessGroupHCCL.cpp:1820] [PG 0 Rank 1] ProcessGroupHCCL's watchdog got stuck for 480 seconds "
        "without making progress in monitoring enqueued collectives.\n"
    )
    d = _diag(text)
    assert fired(d, "cann.pta.hccl_watchdog_stuck")
    assert d.profile.type == "hang"
    assert top3(d)[0] == "library"
    # NCCL's monitor is not read as HCCL's
    nccl = "[rank1]:[E ProcessGroupNCCL.cpp:1300] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated"
    assert not fired(_diag(nccl + "\n"), "cann.pta.hccl_watchdog_stuck")


@pytest.mark.parametrize(
    "msg",
    [
        "ASCEND_HOME_PATH : /usr/local/Ascend/ascend-toolkit/latest does not exist. "
        "Please run 'source set_env.sh' in the CANN installation path.",
        "ASCEND_RUNTIME_PATH : /usr/local/Ascend/ascend-toolkit/latest/runtime does not exist. Please check whether "
        "the runtime package has been installed. If exist, please run 'source set_env.sh' in the CANN installation path.",
    ],
)
def test_cann_environment_checked_at_import(msg):
    d = _diag(_raise("Exception", msg, "PTA", "NOT_FOUND"))
    assert fired(d, "cann.pta.cann_env_paths")
    assert not fired(d, "pta.err.resource_not_found")
    assert d.profile.stage == "startup"
    assert top3(d)[0] == "environment"


def test_float_status_overflow_api_on_a_newer_chip():
    msg = "Unsupported api when soc_version >= Ascend910B1, please use npu_check_overflow"
    d = _diag(_raise("RuntimeError", msg, "PTA", "NOT_SUPPORT"))
    assert fired(d, "cann.pta.overflow_api_newer_chip")
    assert not fired(d, "pta.err.feature_not_supported")
    assert set(top3(d)[:2]) == {"model", "library"}


@pytest.mark.parametrize(
    "name",
    [
        "ascend/pta_310p_promptflashattention_no_binary",
        "ascend/pta_moe_dispatch_hccl_buffsize_too_small",
        "ascend/pta_numpy2_setprecisionmode_500001",
        "ascend/pta_set_device_acl_500001_numpy2_with_cann",
    ],
)
def test_real_torch_npu_logs_without_these_messages_keep_their_reading(name):
    """Real train logs that print torch_npu's ERR code lines (ERR00100, ERR01100): none of the kpta2 rules
    fires, and the category the label gives stays first."""
    path = train_log_path(name)
    label = json.loads(path.with_suffix(".json").read_text())
    d = diagnose([str(path)], exit_code=label.get("exit_code"))
    assert not [r for r in KPTA2 if fired(d, r)]
    assert top3(d)[0] == label["category"]
