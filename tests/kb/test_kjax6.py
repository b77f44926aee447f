"""JAX: where the cause lives (73-jax-ownership.toml, pass kjax6). The Pallas lowerings' own refusals (a primitive
the kernel language does not lower, a TPU block shape outside Mosaic's (8, 128) tiling, Mosaic's compiler
rejecting an operation) are the kernel's, typed unsupported_op at compile; a backend factory's timeout or
unavailable status while JAX starts the platform is the device runtime's, not a collective's. Each family is
shown on real output of jax 0.10.2 on the CPU (tests/data/kb/kjax6/README.md) and on train logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    check_pack_rules,
    fired,
    ids_in_other_packs,
    pack_rules,
    rules_dir,
    top3,
    train_log_path,
)

PACK = "73-jax-ownership.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kjax6"

# real output -> (rule, category ranked first, type, stage)
REAL: dict[str, tuple[str, str, str, str | None]] = {
    "pallas_tpu_block": ("jax.k6.pallas_tpu_block_shape", "operator", "unsupported_op", "compile"),
    "pallas_tpu_unimpl": ("jax.k6.pallas_unimplemented_primitive", "operator", "unsupported_op", "compile"),
    "jit_sharding_mismatch": ("jax.k6.jit_arg_sharding_mismatch", "model", "runtime_error", "compile"),
    "aot_mismatch": ("jax.k6.aot_call_mismatch", "model", "runtime_error", "compile"),
    "pmap_no_mapped": ("jax.k6.pmap_call_contract", "model", "runtime_error", "compile"),
    "pmap_static": ("jax.k6.pmap_call_contract", "model", "runtime_error", "compile"),
    "masked": ("jax.k6.masked_array_input", "model", "runtime_error", "compile"),
    "export_platform": ("jax.k6.export_target_mismatch", "config", "runtime_error", None),
    "export_devices": ("jax.k6.export_target_mismatch", "config", "runtime_error", None),
    "string_array": ("jax.k6.non_numeric_array", "model", "runtime_error", None),
    "empty_truth": ("jax.k6.empty_array_truth", "model", "runtime_error", None),
    "dtype_array": ("jax.k6.removed_behaviour", "environment", "runtime_error", None),
    "mldtypes": ("jax.k6.ml_dtypes_too_old", "environment", "runtime_error", "startup"),
    "cudnn_attention": ("jax.k6.cudnn_not_detected", "environment", "backend", None),
    "shape_poly": ("jax.k6.shape_poly_inconclusive", "model", "runtime_error", "compile"),
    "shape_poly_reshape": ("jax.k6.shape_poly_inconclusive", "model", "runtime_error", "compile"),
    "checkify_nan": ("jax.k6.checkify_nan", "model", "runtime_error", "runtime"),
    "checkify_check": ("jax.k6.checkify_check_failed", "model", "runtime_error", "runtime"),
}

# train log -> (rule, category ranked first, type, stage)
TRAIN: dict[str, tuple[str, str, str, str]] = {
    "jax/pallas_tpu_matmul_block_k_below_128_unsupported_layout": (
        "jax.k6.mosaic_internal_compiler_error",
        "operator",
        "unsupported_op",
        "compile",
    ),
    "jax/jax_colab_tpu_nightly_driver_deadline_exceeded": (
        "jax.k6.backend_init_unreachable",
        "backend",
        "backend",
        "startup",
    ),
}


def test_the_pack_loads_and_its_ids_are_its_own():
    rules = pack_rules(PACK)
    assert {r.id for r in rules} >= {v[0] for v in (*REAL.values(), *TRAIN.values())}
    assert not {r.id for r in rules} & ids_in_other_packs(rules_dir() / PACK)
    check_pack_rules(rules)


def test_every_real_output_is_tested():
    assert {p.stem for p in DATA.glob("*.log")} == set(REAL) | {"jax_array_protocol"}


def _check(diag, rule: str, category: str, typ: str, stage: str | None) -> None:
    causes = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, rule), causes
    assert diag.profile.type == typ, diag.profile.type
    if stage:
        assert diag.profile.stage == stage, diag.profile.stage
    assert diag.profile.stack == "jax", diag.profile.stack
    top = diag.root_causes[0]
    assert (top.rule, top.category) == (rule, category), causes
    assert top.fix_hints


@pytest.mark.parametrize("name", sorted(REAL))
@pytest.mark.parametrize("exit_code", [1, None])
def test_real_output_is_read_by_its_family(name, exit_code):
    diag = diagnose([str(DATA / f"{name}.log")], exit_code=exit_code)
    _check(diag, *REAL[name])


@pytest.mark.parametrize("name", sorted(TRAIN))
def test_train_log_is_read_by_its_family(name):
    diag = diagnose([str(train_log_path(name))])
    _check(diag, *TRAIN[name])


def test_the_unimplemented_primitive_is_named():
    diag = diagnose([str(DATA / "pallas_tpu_unimpl.log")], exit_code=1)
    assert "'sort'" in diag.root_causes[0].summary and "TPU" in diag.root_causes[0].summary
    assert "library" in [c.category for c in diag.root_causes[:3]]


def test_a_triton_lowering_gap_reads_the_same():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/kern.py", line 12, in <module>\n'
        "    out = f(x)\n"
        "NotImplementedError: Unimplemented primitive in Pallas Triton lowering: sort. "
        "Please file an issue at https://github.com/jax-ml/jax/issues/new/choose.\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    _check(diag, "jax.k6.pallas_unimplemented_primitive", "operator", "unsupported_op", "compile")


def test_a_backend_timeout_at_start_is_not_a_collective():
    """The same status from jax.distributed's coordinator stays a communication failure; inside xla_bridge's
    initialisation wording it is the device runtime's."""
    init = "RuntimeError: Unable to initialize backend 'tpu': UNAVAILABLE: failed to connect to all addresses\n"
    diag = diagnose(texts={"stderr": init}, exit_code=1)
    assert fired(diag, "jax.k6.backend_init_unreachable")
    assert diag.profile.type == "backend"
    assert diag.root_causes[0].category == "backend", [(c.rule, c.category) for c in diag.root_causes]
    coord = (
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. "
        "Barrier_id: PjRT_Client_Connect. # of tasks that reached the barrier: 1/2.\n"
    )
    diag = diagnose(texts={"stderr": coord}, exit_code=1)
    assert not fired(diag, "jax.k6.backend_init_unreachable")


# the older wordings (jax 0.4.23's pjit.py, pxla.py, array.py) and messages a CPU-only run cannot produce
# (JAX_PLATFORMS without cpu, several processes), each as JAX prints it
WORDINGS: dict[str, tuple[str, str]] = {
    "ValueError: Sharding passed to pjit does not match the sharding on the respective arg. Got pjit sharding: "
    "NamedSharding(mesh={'data': 8}, spec=PartitionSpec('data',)),": ("jax.k6.jit_arg_sharding_mismatch", "model"),
    "ValueError: Compiled object called with input sharding(s) does not match the sharding(s) the computation was "
    "compiled with. Here are the 1 mismatches:": ("jax.k6.aot_call_mismatch", "model"),
    "RuntimeError: Fetching value for `jax.Array` that spans non-addressable devices is not possible. You can use "
    "`jax.experimental.multihost_utils.process_allgather` for this use case.": (
        "jax.k6.non_addressable_array",
        "model",
    ),
    'RuntimeError: jax.debug.callback failed to find a local CPU device to place the inputs on. Make sure "cpu" is '
    "listed in --jax_platforms or the JAX_PLATFORMS environment variable.": (
        "jax.k6.callback_no_cpu_platform",
        "config",
    ),
}


def _raised_from_main(line: str) -> str:
    """``line`` as the last line of a traceback raised under a program's main()."""
    return (
        'Traceback (most recent call last):\n  File "/home/user/train.py", line 40, in <module>\n    main()\n'
        + line
        + "\n"
    )


@pytest.mark.parametrize("line", sorted(WORDINGS))
def test_each_wording_is_read_by_its_family(line):
    rule, category = WORDINGS[line]
    diag = diagnose(texts={"stderr": _raised_from_main(line)}, exit_code=1)
    causes = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, rule), causes
    assert (diag.root_causes[0].rule, diag.root_causes[0].category) == (rule, category), causes
    assert diag.profile.type == "runtime_error"


def test_a_callback_without_a_cpu_platform_is_not_the_callback_raising():
    """72's jax.cat.host_callback reads "jax.pure_callback failed" as the callback's own error; the CPU-device
    message is the settings' (suppressed_by)."""
    text = "RuntimeError: jax.pure_callback failed to find a local CPU device to place the inputs on.\n"
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, "jax.k6.callback_no_cpu_platform")
    assert not fired(diag, "jax.cat.host_callback")


def test_a_removed_behaviour_offers_the_code_and_the_installed_jax():
    """__jax_array__ on the program's own class: the program's code and the installed jax's release are the two
    homes (70's jax.removed_name convention), a library's release the third."""
    diag = diagnose([str(DATA / "jax_array_protocol.log")], exit_code=1)
    assert fired(diag, "jax.k6.removed_behaviour")
    assert {"model", "environment"} <= set(top3(diag)[:2]), top3(diag)
    assert "library" in top3(diag)


def test_the_string_array_is_not_read_as_a_static_argument():
    """jit re-raises the dtype check as "Error interpreting argument ... as a JAX value"; the chained message says
    why, so 74's static-argument family is suppressed."""
    diag = diagnose([str(DATA / "string_array.log")], exit_code=1)
    assert not fired(diag, "jax.cat3.jit_arguments")
    assert top3(diag)[:2] == ["model", "dataset"], top3(diag)


# XLA:GPU's messages (strings of xla_cuda_plugin.so in jax-cuda12-pjrt 0.10.2; conv_algorithm_picker.cc), which a
# CPU-only machine cannot produce, as JAX re-raises them
GPU_LINES: dict[str, tuple[str, str]] = {
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: No PTX compilation provider is available. Neither ptxas/nvlink "
    "nor nvjtlink is available.": ("jax.k6.xla_gpu_toolchain", "environment"),
    "jax.errors.JaxRuntimeError: INTERNAL: libdevice is required by this HLO module but was not found at "
    "./cuda_sdk_lib/nvvm/libdevice": ("jax.k6.xla_gpu_toolchain", "environment"),
    "jaxlib.xla_extension.XlaRuntimeError: UNKNOWN: Failed to determine best cudnn convolution algorithm for:": (
        "jax.k6.conv_autotune_failed",
        "config",
    ),
}


@pytest.mark.parametrize("line", sorted(GPU_LINES))
def test_xla_gpu_toolchain_and_autotuning(line):
    rule, category = GPU_LINES[line]
    diag = diagnose(texts={"stderr": _raised_from_main(line)}, exit_code=1)
    causes = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, rule), causes
    assert diag.root_causes[0].category == category, causes
    assert (diag.profile.type, diag.profile.stage) == ("backend", "compile")
    assert "environment" in top3(diag)


def test_the_libdevice_warning_counts_only_when_the_run_failed():
    warn = "W0000 00:00:1.0 123 nvptx_compiler.cc:123] Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice. "
    warn += "This may result in compilation or runtime failures\n"
    ok = diagnose(texts={"stderr": warn}, exit_code=0)
    assert not fired(ok, "jax.k6.xla_libdevice_warning")
    failed = diagnose(
        texts={"stderr": warn + "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: compilation failed\n"}, exit_code=1
    )
    assert fired(failed, "jax.k6.xla_libdevice_warning")


def test_complex_arange_is_a_removed_behaviour():
    text = "ValueError: Passing complex start/stop/step to jnp.arange is no longer supported starting in JAX v0.10.0.\n"
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, "jax.k6.removed_behaviour")


@pytest.mark.parametrize(
    "line",
    [
        "NotImplementedError: Q must be fp16/bf16/fp8_e4m3fn/fp8_e5m2, got float32",
        "NotImplementedError: The head dim must be <= 128 and a multiple of 8, but got 72.",
        "NotImplementedError: Packed layout requires a GPU with at least Hopper architecture.",
    ],
)
def test_cudnn_attention_limits_are_the_kernels(line):
    text = (
        'Traceback (most recent call last):\n  File "/home/user/model.py", line 88, in attend\n    out = f(q)\n'
        + line
        + "\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    causes = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, "jax.k6.cudnn_attention_limits"), causes
    assert diag.profile.type == "unsupported_op"
    assert top3(diag)[:2] == ["operator", "config"], causes


def test_cudnn_not_detected_offers_the_install_and_the_setting():
    diag = diagnose([str(DATA / "cudnn_attention.log")], exit_code=1)
    assert top3(diag)[:2] == ["environment", "config"], top3(diag)


def test_the_checkify_message_is_quoted():
    diag = diagnose([str(DATA / "checkify_check.log")], exit_code=1)
    assert "inputs must be positive" in diag.root_causes[0].summary
    assert "dataset" in top3(diag)
    nan = diagnose([str(DATA / "checkify_nan.log")], exit_code=1)
    assert "'log'" in nan.root_causes[0].summary
