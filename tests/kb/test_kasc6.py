"""kasc6: Ascend ownership facts (rules/54-ascend-ownership.toml).

Each fact comes from the libraries' own sources (torch_npu 2.13.0, triton-ascend 3.2.0, vllm-ascend 0.23.0) or
CANN's aclnn documentation; it is shown on the train logs it moves and on real outputs produced on the CPU
(tests/data/kb/kasc6/README.md says how):

* CANN's EE1001 refusal of ASCEND_RT_VISIBLE_DEVICES names the setting: config, not the driver.
* torch_npu's "OPS function error: <Op>" is its single-operator (aclop/GE) path: the operator, not an ACL API
  misuse by the program.
* an aclnn operator's first phase (tiling, shape inference) ran on the host: not the device runtime.
* Triton-Ascend without a compiler target for the chip: the operator's absence; without the CANN toolchain
  (bisheng/ccec, ASCEND_HOME_PATH): the installation.
* MC2 (MoE dispatch/combine) operators are chosen per chip by the framework: the framework is a home.
"""

from __future__ import annotations

from pathlib import Path

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import (
    check_pack_rules,
    fired,
    first_cause,
    ids_in_other_packs,
    pack_rules,
    rules_dir,
    top3,
    train_diagnosis,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kasc6"
PACK = "54-ascend-ownership.toml"


def _real(name: str):
    return diagnose([str(DATA / name)], exit_code=1)


def test_the_pack_loads_and_its_ids_are_its_own():
    rules = pack_rules(PACK)
    assert {r.id for r in rules} >= {
        "ascend_own.visible_devices_refused",
        "ascend_own.aclop_op_failed",
        "ascend_own.triton_target_missing",
        "ascend_own.triton_ascend_toolchain",
        "ascend_own.mc2_op_failed",
    }
    check_pack_rules(rules)
    assert not {r.id for r in rules} & ids_in_other_packs(rules_dir() / PACK)


# --- train logs ------------------------------------------------------------------------------------------------------


def test_visible_devices_refused_by_cann_is_the_setting():
    d = train_diagnosis("ascend/gpustack_vllm_ascend_visible_devices_not_ascending")
    assert first_cause(d) == ("config", "ascend_own.visible_devices_refused")
    assert d.profile.stage == "startup"


def test_aclop_path_failure_is_the_operator_not_an_acl_api_misuse():
    d = train_diagnosis("ascend/ascend_mineru_910a_nonzero_op_graph_build_unsupported")
    assert first_cause(d) == ("operator", "ascend_own.aclop_op_failed")
    config = next(c for c in d.root_causes if c.category == "config")
    assert any(v.name == "context:cue:aclop_path" and v.status == "failed" for v in config.validation_checks)


def test_bishengir_without_the_chip_target_is_the_operator_absence():
    d = train_diagnosis("ascend/vllm_ascend_310p3_triton_bishengir_target_unsupported")
    assert (d.profile.type, d.profile.stage) == ("unsupported_op", "compile")
    assert first_cause(d) == ("operator", "ascend_own.triton_target_missing")


def test_first_phase_tiling_failure_is_not_the_device_runtime():
    d = train_diagnosis("ascend/xllm_causal_conv1d_padded_decode_tiling_failed")
    assert fired(d, "ascend_own.aclnn_first_phase_failed")
    assert d.root_causes[0].category == "library"
    backend = next(c for c in d.root_causes if c.category == "backend")
    assert any(v.name == "context:cue:aclnn_first_phase" and v.status == "failed" for v in backend.validation_checks)


def test_mc2_dispatch_failure_offers_the_framework_that_chose_it():
    d = train_diagnosis("ascend/pta_mc2_dispatch_on_a2_561000")
    assert fired(d, "ascend_own.mc2_op_failed")
    assert "library" in top3(d)[:2], top3(d)


# --- real outputs (triton-ascend 3.2.0, torch_npu 2.13.0 on a CPU machine without CANN) ------------------------------


def test_triton_ascend_without_cann_compilers_is_the_installation():
    d = _real("triton_ascend_no_active_driver.log")
    assert first_cause(d) == ("environment", "ascend_own.triton_ascend_toolchain")
    config = next(c for c in d.root_causes if c.category == "config")
    assert config.confidence < d.root_causes[0].confidence * 0.85


def test_triton_ascend_compile_without_ascend_home_is_the_installation():
    d = _real("triton_ascend_compile_no_ascend_home.log")
    assert d.root_causes[0].category == "environment"
    assert fired(d, "ascend_own.triton_ascend_toolchain")


def test_torch_npu_import_without_cann_stays_the_installation():
    d = _real("torch_npu_import_without_cann.log")
    assert d.root_causes[0].category == "environment"
    assert not any(c.rule and c.rule.startswith("ascend_own.") for c in d.root_causes)


# --- the libraries' own message texts (copied from their sources; no NPU here to raise them) ------------------------


def _text(text: str):
    return diagnose(texts={"stderr": text}, exit_code=1)


def test_torch_npu_soc_refusal_puts_the_fix_in_the_call():
    # libtorch_npu.so (torch_npu 2.13.0): the message TORCH_CHECK raises with, as torch_npu prints it
    d = _text(
        "RuntimeError: npu_mla_prolog not support on this soc version, please use npu_mla_prolog_v3\n"
        "[ERROR] 2026-12-02-07:00:00 (PID:1, Device:0, RankID:-1) ERR01007 OPS feature not supported\n"
    )
    assert fired(d, "ascend_own.pta_soc_refusal")
    assert d.profile.type == "unsupported_op"
    assert d.root_causes[0].category in {"model", "library"}


def test_vllm_ascend_310p_refusal_is_the_runs_choice():
    # vllm_ascend/_310p/fused_moe/fused_moe.py (vllm-ascend 0.23.0)
    d = _text("RuntimeError: Expert Parallel is not supported on 310P. Please remove --enable-expert-parallel.\n")
    assert fired(d, "ascend_own.vllm_ascend_chip_refusal")
    assert "config" in top3(d)[:2], top3(d)
    config = next(c for c in d.root_causes if c.category == "config")
    assert any(
        v.name == "context:cue:option_named_to_remove" and v.status == "passed" for v in config.validation_checks
    )


def test_release_without_the_chip_is_the_installation():
    # vllm_ascend/ascend_forward_context.py (vllm-ascend 0.23.0)
    d = _text("ValueError: Unsupported soc_version: AscendDeviceType.UNKNOWN\n")
    assert fired(d, "ascend_own.release_unknown_soc")
    assert d.root_causes[0].category == "environment"


def test_runtime_task_timeout_is_a_hang_not_a_device_id():
    # torch_npu 2.13.0 prints a failed runtime call as "NPU function error: <call>, error code is <N>" (the call is
    # one of libtorch_npu.so's own strings); 107020 is ACL_ERROR_RT_TASK_TIMEOUT in CANN's runtime code table
    d = _text(
        "RuntimeError: synchronize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:475 NPU function error: "
        "c10_npu::acl::AclrtSynchronizeDeviceWithTimeout(), error code is 107020\n"
        "[ERROR] 2026-12-02-07:00:00 (PID:1, Device:0, RankID:3) ERR00100 PTA call acl api failed\n"
    )
    assert d.profile.type == "hang"
    assert first_cause(d) == ("communication", "ascend_own.rt_task_timeout")
    assert not fired(d, "ascend.rt_param")


def test_a_runtime_abort_code_without_force_stop_is_the_force_stop_family():
    # 107023 is ACL_ERROR_RT_STREAM_ABORT in CANN's runtime code table: a call made while a stream's tasks were being
    # cleared after a failure elsewhere; 55's cann.rt.force_stop holds that family (a symptom, never the cause), and
    # the generic 107xxx device-selection reading does not apply
    d = _text(
        "RuntimeError: synchronize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:475 NPU function error: "
        "c10_npu::acl::AclrtSynchronizeDeviceWithTimeout(), error code is 107023\n"
        "[ERROR] 2026-12-02-07:00:00 (PID:1, Device:0, RankID:3) ERR00100 PTA call acl api failed\n"
    )
    assert fired(d, "cann.rt.force_stop")
    assert not fired(d, "ascend.rt_param")


def test_cann_s_own_compile_code_outranks_the_ops_line():
    # E40021 "Failed to compile Op" is CANN's compile-phase report of the same failure torch_npu prints as "OPS
    # function error": the toolkit's online compilation leads, not the single-operator path's reading
    d = _text(
        "RuntimeError: InnerRun:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:234 OPS function error: Conv3D, "
        "error code is 500002\n"
        "E40021: [PID: 1] 2026-12-02-07:00:00.000.000 Failed to compile Op [Conv3D1]. (oppath: [Compile "
        "/usr/local/Ascend/ascend-toolkit/latest/opp/built-in/op_impl/ai_core/tbe/impl/conv3d.py failed])\n"
    )
    assert fired(d, "ascend.code.compile")
    assert not fired(d, "ascend_own.aclop_op_failed")
    assert d.root_causes[0].category == "environment"
