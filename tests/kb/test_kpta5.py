"""torch_npu's NPU graph capture guards (kpta5, #13; rules/56-ascend-sources.toml, pta.src.graph_capture_*).

The texts are torch_npu's own (libtorch_npu.so strings of the torch_npu 2.5.1 wheel). The logs under
tests/data/kb/kpta5 are excerpts of real runs posted in public GitHub threads (README.md there names each);
their labels (``.json``) are also checked by tests/kb/test_real_logs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3, train_log_path

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kpta5"
# the same family's log from vllm-ascend#3960, held by the ERR-code pass (test_catalogue_round2.py)
ROUND2 = DATA.parent / "catalogue_round2"
PACK = "56-ascend-sources.toml"
RULES = {"pta.src.graph_capture_aclop", "pta.src.graph_capture_forbidden_call"}

# fixture, rule, expected type, expected first category
CASES = [
    ("vllm_ascend_capture_aclop_matmul.log", "pta.src.graph_capture_aclop", "unsupported_op", "config"),
    ("vllm_ascend_offload_nz_capture_identity.log", "pta.src.graph_capture_aclop", "unsupported_op", "config"),
    ("sgl_npu_capture_generator.log", "pta.src.graph_capture_forbidden_call", "runtime_error", "library"),
]


def test_pack_holds_the_rules():
    assert RULES <= {r.id for r in pack_rules(PACK)}


@pytest.mark.parametrize("exit_code", [1, None])
@pytest.mark.parametrize(("log", "rule", "typ", "category"), CASES, ids=[c[0] for c in CASES])
def test_real_thread_log(log, rule, typ, category, exit_code):
    label = json.loads((DATA / log).with_suffix(".json").read_text())
    assert (label["type"], label["category"]) == (typ, category)
    diag = diagnose([str(DATA / log)], exit_code=exit_code)
    assert diag.root_causes[0].rule == rule, [(rc.rule, rc.category) for rc in diag.root_causes[:4]]
    assert diag.profile.type == typ
    assert top3(diag)[0] == category


@pytest.mark.parametrize(
    ("log", "op"),
    [
        (ROUND2 / "vllm_ascend_aclop_during_graph_capture.log", "Fill"),
        (DATA / "vllm_ascend_capture_aclop_matmul.log", "MatMul"),
    ],
)
def test_aclop_rule_names_the_operator_and_the_settings(log, op):
    diag = diagnose([str(log)], exit_code=1)
    top = diag.root_causes[0]
    assert op in top.summary
    assert any("allow_internal_format" in h for h in top.fix_hints)
    assert any("--enforce-eager" in h for h in top.fix_hints)
    # the operator is the second home; the bare ERR00007 family yields to the specific text
    assert top3(diag)[:2] == ["config", "operator"]
    assert not fired(diag, "pta.err.feature_not_supported")


def test_forbidden_call_names_what_was_called():
    diag = diagnose([str(DATA / "sgl_npu_capture_generator.log")], exit_code=1)
    top = diag.root_causes[0]
    assert "Not support Generator while in capture mode" in top.summary
    assert "RuntimeError" not in top.summary
    assert top3(diag)[:2] == ["library", "config"]


@pytest.mark.parametrize(("log", "rule", "typ", "category"), CASES, ids=[c[0] for c in CASES])
def test_each_text_fires_its_own_rule_only(log, rule, typ, category):
    """The aclop text also asks for the call to be captured; it must not read as the generic guard."""
    diag = diagnose([str(DATA / log)], exit_code=1)
    assert {rc.rule for rc in diag.root_causes} & RULES == {rule}


def test_silent_on_the_ascend_train_logs():
    """Real Ascend train logs (torch_npu's own error output of other kinds) do not trip the new rules."""
    split = json.loads((DATA.parents[1] / "corpus" / "threads" / "split.json").read_text())["split"]
    names = sorted(n for n, s in split.items() if s == "train" and n.startswith("ascend/"))
    assert names
    for name in names:
        diag = diagnose([str(train_log_path(name))])
        assert not any(rc.rule in RULES for rc in diag.root_causes), name
