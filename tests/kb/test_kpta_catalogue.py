"""CANN/torch_npu catalogue facts added by kpta (#13): the rest of HCCL's return codes (hccl_types.h
HcclResult), the runtime's own internal 507xxx codes (torch_npu NPUErrorCodes.h: the "[Error]:" sentence
torch_npu prints after the code), and the names torch_npu gives a device error ("NPU function error: HCCS LINK
ERROR, error code is N", "FORCE STOP", "HCCL OP RETRY FAILED", "SUSPECT MEM ERROR"; NPUException.cpp).

No train log prints these codes, so the messages below are the catalogue's own: the format strings of
torch_npu (HCCLUtils.hpp's HCCL_CHECK_ERROR, NPUException.h's NPU_CHECK_ERROR) filled with a code and the
description the catalogue gives for it, as the CANN guide's examples are used in test_cann_catalogue.py. A
real train log shows that the narrowed generic 507xxx rule still reads a kernel exception as before."""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3, train_log_path

ERR_ACL = "[ERROR] 2025-03-01-10:00:00 (PID:4242, Device:0, RankID:0) ERR00100 PTA call acl api failed"
ERR_HCCL = "[ERROR] 2025-03-01-10:00:00 (PID:4242, Device:0, RankID:0) ERR02200 DIST call hccl api failed."


def _hccl(code: int, call: str = "HcclAllReduce(...)") -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2050, in '
        "all_reduce\n    work = group.allreduce([tensor], opts)\n"
        f"RuntimeError: allreduce:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:3600 HCCL function error: {call}, "
        f"error code is {code}\n{ERR_HCCL}\n"
    )


def _acl(code: int, call: str, sentence: str) -> str:
    return (
        f"RuntimeError: synchronize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:467 NPU function error: {call}, "
        f"error code is {code}\n{ERR_ACL}\n[Error]: {sentence}\n"
        "Rectify the fault based on the error information in the ascend log.\n"
    )


def _diag(text: str):
    return diagnose(texts={"train.log": text})


def test_the_rules_load_and_their_suppressions_name_real_rules():
    ours = {r.id: r for r in pack_rules("55-cann-catalogue.toml")}
    for rid in (
        "cann.hccl.rc.internal",
        "cann.hccl.rc.system",
        "cann.hccl.rc.runtime",
        "cann.hccl.op_retry_failed",
        "cann.rt.force_stop",
        "cann.rt.runtime_internal",
        "cann.rt.task_type_unsupported",
    ):
        assert rid in ours, rid
    generic = {r.id: r for r in pack_rules("50-ascend.toml")}["hccl.error"]
    assert set(generic.suppressed_by) <= set(ours), generic.suppressed_by


def test_hccl_runtime_and_driver_codes_are_the_layer_below_hccl():
    # HCCL_E_RUNTIME 15, HCCL_E_DRV 16, HCCL_E_CCE 18: HCCL's call into the runtime/driver failed
    for code in (15, 16, 18):
        d = _diag(_hccl(code, "HcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &comm)"))
        assert fired(d, "cann.hccl.rc.runtime"), code
        assert d.profile.type == "backend", code
        assert top3(d)[0] == "backend", top3(d)
        assert not fired(d, "hccl.error"), "the generic 'HCCL failed' reading should stand aside"


def test_hccl_internal_error_stays_a_communication_failure():
    d = _diag(_hccl(4))
    assert fired(d, "cann.hccl.rc.internal")
    assert d.profile.type == "communication"
    assert top3(d)[0] == "communication"


def test_hccl_system_call_and_file_codes_are_the_machine_or_its_paths():
    for code in (8, 10):
        d = _diag(_hccl(code, "HcclCommInitClusterInfo(rankTableFile, rank, &comm)"))
        assert fired(d, "cann.hccl.rc.system"), code
        assert top3(d)[:2] == ["environment", "config"], top3(d)
    # 1 and 13 are other codes: no false match on a code that merely starts with the same digit
    assert not fired(_diag(_hccl(13)), "cann.hccl.rc.system")
    assert not fired(_diag(_hccl(18)), "cann.hccl.rc.system")


def test_hccl_memory_codes_reach_the_resource_rule():
    for code in (3, 24):
        d = _diag(_hccl(code))
        assert fired(d, "cann.hccl.resource"), code
        assert top3(d)[0] == "resource", top3(d)


def test_a_failed_hccl_retry_is_the_link():
    d = _diag(_hccl(23))
    assert fired(d, "cann.hccl.op_retry_failed")
    assert d.profile.type == "communication"
    assert top3(d)[:2] == ["communication", "hardware"]
    # torch_npu's own name for it (getDeviceErrorMessage)
    d = _diag("RuntimeError: c10_npu_check: NPU function error: HCCL OP RETRY FAILED, error code is 507904\n")
    assert fired(d, "cann.hccl.op_retry_failed")
    assert top3(d)[0] == "communication"


def test_torch_npu_names_of_device_errors():
    d = _diag(f"RuntimeError: c10_npu_check: NPU function error: HCCS LINK ERROR, error code is 507056\n{ERR_ACL}\n")
    assert fired(d, "cann.rt.link_error")
    assert top3(d)[:2] == ["communication", "hardware"]
    assert not fired(d, "ascend.rt_device_exec"), "507056 has its own rule, not a kernel fault"
    d = _diag("RuntimeError: c10_npu_check: NPU function error: UB LINK ERROR, error code is 507056\n")
    assert fired(d, "cann.rt.link_error")
    d = _diag("RuntimeError: c10_npu_check: NPU function error: SUSPECT MEM ERROR, error code is 507055\n")
    assert fired(d, "cann.rt.suspect_mem")
    assert top3(d)[0] == "hardware"


def test_a_force_stop_is_a_symptom_of_an_earlier_failure():
    text = (
        _acl(507015, "c10_npu::acl::AclrtSynchronizeStreamWithTimeout(stream)", "The aicore execution is abnormal.")
        + "RuntimeError: NPU function error:  FORCE STOP, error code is 107022\n"
    )
    d = _diag(text)
    assert top3(d)[0] == "operator", top3(d)  # the abort follows the AI Core exception
    assert d.root_causes[0].rule == "ascend.rt_device_exec"
    # alone, the abort is all the log shows: it is read, as a symptom of the runtime's
    d = _diag("RuntimeError: NPU function error:  FORCE STOP, error code is 107022\n")
    assert fired(d, "cann.rt.force_stop")


def test_runtime_internal_codes_lead_with_the_runtime_not_a_kernel():
    cases = {
        507000: "An internal error occurs in the runtime module on the host.",
        507001: "An internal error occurs in the task scheduler module on the device.",
        507007: "Failed to release the context.",
        507037: "An exception occurred when applying for internal resources of the Runtime.",
    }
    for code, sentence in cases.items():
        d = _diag(_acl(code, "AclrtSynchronizeDevice", sentence))
        assert fired(d, "cann.rt.runtime_internal"), code
        assert not fired(d, "ascend.rt_device_exec"), code
        assert d.profile.type == "backend"
        assert top3(d)[:2] == ["backend", "environment"], (code, top3(d))


def test_task_type_not_supported_is_the_driver():
    d = _diag(_acl(507009, "aclrtLaunchKernel", "The task type is not supported."))
    assert fired(d, "cann.rt.task_type_unsupported")
    assert top3(d)[0] == "environment"


def test_kernel_exceptions_keep_the_generic_507_reading():
    # catalogue form: 507015 AI Core exception is still a kernel fault
    d = _diag(_acl(507015, "AclrtSynchronizeStreamWithTimeout", "The aicore execution is abnormal."))
    assert fired(d, "ascend.rt_device_exec")
    assert not fired(d, "cann.rt.runtime_internal")
    assert top3(d)[0] == "operator"
    # real train log: an AI CPU operator exception (507018)
    d = diagnose([str(train_log_path("ascend/pta_aicpu_rightshift_507018_zero_dim_int64_shift_tensor"))])
    assert fired(d, "ascend.rt_device_exec")
    assert not fired(d, "cann.rt.runtime_internal")
    assert d.profile.type == "backend"
    assert top3(d)[0] == "operator"


def test_compact_output_of_a_cann_inner_error():
    # torch_npu's compact error output (c10_npu_check_error_message) replaces an E?9999 message by this sentence
    d = _diag(
        "RuntimeError: call aclnnMatmul failed, detail:\n"
        "CANN error: CANN Inner Error. Please rectify the fault based on the error information in the ascend log.\n"
    )
    assert fired(d, "pta.cann_inner_error")
    assert d.profile.type == "backend"
    assert top3(d)[:2] == ["backend", "operator"]


def test_an_internal_task_timeout_beside_hccl_notify_wait_is_the_collective():
    # torch_npu's troubleshooting guide (troubleshooting_cases/HCCL_timeout.md): 507048 printed with EI0002
    text = (
        "[W compiler_depend.ts:487] Warning: NPU warning, error code is 507048[Error]: \n"
        "[Error]: The execution of the internal task times out. \n"
        "        Rectify the fault based on the error information in the ascend log.\n"
        "EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution of the Notify register times out. "
        "Reason: The Notify register has not received the Notify record from remote rank [unknown].\n"
    )
    d = _diag(text)
    assert fired(d, "cann.rt.sync_timeout")
    assert not fired(d, "ascend.rt_device_exec"), "507048 is a wait that timed out, not a kernel fault"
    assert d.profile.type == "communication"
    assert top3(d)[0] == "communication"
    # alone, the code still reads as a wait that did not finish
    d = _diag(
        _acl(
            507048,
            "c10_npu::acl::AclrtSynchronizeStreamWithTimeout(stream)",
            "The execution of the internal task times out.",
        )
    )
    assert fired(d, "cann.rt.sync_timeout")
    assert top3(d)[0] == "communication"


def test_torch_npu_invalid_pointer_and_system_call_codes_are_torch_npu_internal():
    # torch_npu's error-code guide: ERRxx004 and ERRxx010, like ERRxx005, are to be reported to torch_npu
    for suffix in ("ERR00004 PTA invalid pointer", "ERR01010 OPS system call failed"):
        d = _diag(
            "RuntimeError: free memory callback get nullptr\n"
            f"[ERROR] 2025-01-01-10:00:00 (PID:4242, Device:0, RankID:-1) {suffix}\n"
        )
        assert fired(d, "pta.err.internal"), suffix
        assert top3(d)[0] == "library", (suffix, top3(d))
    assert not fired(_diag("free(): invalid pointer\nAborted (core dumped)\n"), "pta.err.internal")
