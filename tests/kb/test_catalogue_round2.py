"""Second round of catalogue rules for the weak stacks: JAX's and Flax's documented errors, the JAX CUDA
plugin check, torch_npu's own ERRxxxxx codes, CANN's AI Core compilation codes (E5..EB) and MindSpore's
argument checks; and the type conventions of the contract (a collective's timeout is `communication`).

Every log here is real: short excerpts from public threads and from MindSpore's CANN error page (cited in
each label, or in LOGS below for excerpts whose confirmed cause is a competing one and so are not kb
must-pass labels), or train logs of the thread corpus (never a dev log: the split is checked).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import pack_rules

DATA = Path(__file__).resolve().parents[1] / "data"
KB = DATA / "kb" / "catalogue_round2"
THREADS = DATA / "corpus" / "threads"
SPLIT = json.loads((THREADS / "split.json").read_text())["split"]

NEW_RULES = {
    "50-ascend.toml": {
        "pta.err.feature_not_supported",
        "pta.err.invalid_argument",
        "pta.err.dist_timeout",
        "pta.err.internal",
        "pta.err.resource_not_found",
        "pta.err.ge_call",
        "pta.err.permission",
    },
    "55-cann-catalogue.toml": {"cann.tbe.param_check", "cann.tbe.spec_unsupported"},
    "60-mindspore.toml": {"ms.cat.argument_check"},
    "70-jax.toml": {
        "jax.err.tracer_array_conversion",
        "jax.err.non_concrete_bool_index",
        "jax.err.unexpected_tracer",
        "jax.err.invalid_jax_type",
        "jax.err.plugin_incompatible",
        "flax.err.modify_immutable",
        "flax.err.frozen_module",
        "flax.err.param_not_found",
    },
}


@pytest.mark.parametrize("pack", sorted(NEW_RULES))
def test_the_pack_loads_without_a_warning_and_holds_the_new_rules(pack: str) -> None:
    ids = {r.id for r in pack_rules(pack)}
    assert NEW_RULES[pack] <= ids, NEW_RULES[pack] - ids


# (log, rule that must fire, type, categories that must be among the top 3, source)
LOGS = [
    # the JAX errors page: x[mask] inside jit has a data-dependent shape -> the user's code
    ("jax_bool_mask_inside_jit", "jax.err.non_concrete_bool_index", "runtime_error", {"model"}),
    # the plugin loader skips a jax-cuda12-plugin whose version differs from jaxlib's (ma-gilles/recovar#64)
    ("jax_cuda_plugin_newer_than_jaxlib", "jax.err.plugin_incompatible", "backend", {"environment"}),
    # https://github.com/google/evojax/issues/60: BatchNorm's batch_stats updated without mutable=
    ("flax_batchnorm_collection_immutable", "flax.err.modify_immutable", "runtime_error", {"model", "library"}),
    # https://github.com/matthias-wright/flaxmodels/issues/2: the package's module set an attribute outside
    # setup; the maintainer fixed it (library): the competing cause must be in the top 3
    ("flaxmodels_frozen_module_attribute", "flax.err.frozen_module", "runtime_error", {"library"}),
    # MindSpore's CANN error page: E80012 = ReduceSum given 10 dims (<= 8 supported): change the network
    ("ms_e80012_reduce_sum_dims", "cann.tbe.param_check", "runtime_error", {"model", "operator"}),
    # same page: EB0000 = TBE cannot compile this Transpose specification: report it (operator)
    ("ms_eb0000_transpose_exceeds_ub", "cann.tbe.spec_unsupported", "unsupported_op", {"operator"}),
    # https://github.com/vllm-project/vllm-ascend/issues/3960: aclop during NPU graph capture, ERR00007;
    # turning graph mode off was the way out (config), the op needing aclnn the reason (operator); torch_npu's
    # own text (kpta5, pta.src.graph_capture_aclop) reads it in place of the generic ERR00007 rule
    (
        "vllm_ascend_aclop_during_graph_capture",
        "pta.src.graph_capture_aclop",
        "unsupported_op",
        {"operator", "config"},
    ),
    # https://github.com/vllm-project/vllm-ascend/pull/1261: the CANN installed lacks aclmdlRICaptureBegin; torch_npu's
    # own text ("Failed to find function", kpta2) reads it in place of the generic ERR00008 rule
    ("vllm_ascend_capture_begin_missing_in_cann", "cann.pta.cann_function_missing", "runtime_error", {"environment"}),
]


@pytest.mark.parametrize(("name", "rule", "type_", "cats"), LOGS, ids=[x[0] for x in LOGS])
def test_the_catalogue_rule_reads_the_real_log(name: str, rule: str, type_: str, cats: set[str]) -> None:
    diag = diagnose([str(KB / f"{name}.log")])
    top3 = [c.category for c in diag.root_causes[:3]]
    assert any(c.rule == rule for c in diag.root_causes), [c.rule for c in diag.root_causes]
    assert diag.profile.type == type_, (diag.profile.type, top3)
    assert cats <= set(top3), top3
    # a summary never shows a placeholder its pattern did not fill
    assert all("?" not in c.summary.split(":")[0] for c in diag.root_causes if c.rule == rule)


def test_the_errors_page_gives_a_converted_tracer_a_library_hypothesis_beside_the_users_numpy_call() -> None:
    name = "jax/graphcast_xarray_jax_tracer_array_conversion"
    assert SPLIT.get(name) == "train", "dev logs are never tests"
    diag = diagnose([str(THREADS / f"{name}.log")])
    mine = [c for c in diag.root_causes if c.rule == "jax.err.tracer_array_conversion"]
    assert {c.category for c in mine} == {"model", "library"}
    # the lumped tracer rule is silenced by the specific one, so the two hypotheses are not diluted
    assert not any(c.rule == "jax.tracer" for c in diag.root_causes)
    assert [c.category for c in diag.root_causes[:2]] in (["model", "library"], ["library", "model"])


@pytest.mark.parametrize(
    ("text", "rule", "type_"),
    [
        # torch_npu formats its codes as ERR<sub-module:2><code:3> <SUB-MODULE> <meaning> (NPUException.cpp)
        (
            "[ERROR] 2025-06-17-14:07:56 (PID:1, Device:0, RankID:0) ERR02011 DIST timeout error",
            "pta.err.dist_timeout",
            "communication",
        ),
        (
            "[ERROR] 2025-06-17-14:07:56 (PID:1, Device:0, RankID:-1) ERR00001 PTA invalid parameter",
            "pta.err.invalid_argument",
            "runtime_error",
        ),
        (
            "[ERROR] 2025-06-17-14:07:56 (PID:1, Device:0, RankID:-1) ERR03300 GRAPH call ge api failed",
            "pta.err.ge_call",
            "backend",
        ),
    ],
)
def test_torch_npu_error_codes_name_the_layer_that_refused(text: str, rule: str, type_: str) -> None:
    diag = diagnose(texts={"stderr": f"RuntimeError: the call failed\n{text}\n"})
    assert any(c.rule == rule for c in diag.root_causes)
    assert diag.profile.type == type_


def test_a_specific_npu_message_outranks_the_err_code_family() -> None:
    """The ERR suffix is a family: a specific message before it (an aclnn code) decides the profile."""
    text = (
        "RuntimeError: call aclnnMoeDistributeDispatch failed, error code is 161002\n"
        "[ERROR] 2025-06-17-14:07:56 (PID:1, Device:0, RankID:-1) ERR01100 OPS call acl api failed\n"
        "[ERROR] 2025-06-17-14:07:56 (PID:1, Device:0, RankID:-1) ERR00001 PTA invalid parameter\n"
    )
    diag = diagnose(texts={"stderr": text})
    assert diag.root_causes[0].rule != "pta.err.invalid_argument"
