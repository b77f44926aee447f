"""Hugging Face libraries' own messages, round 2 (47-hf-dynamo-catalogue.toml, section "round 2").

Each rule is shown on output produced for real by transformers 5.24 / accelerate 1.15 / huggingface_hub 2.4 /
safetensors 0.8 on a CPU-only machine
(offline; small models built from configs). The code that produced each log is kept beside it in
tests/data/kb/hf_messages/labels.json; only the environment's directories were renamed.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids
from tests.kb.kb_helpers import check_labelled_log, check_text_alone, ids_in_other_packs

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "hf_messages"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "47-hf-dynamo-catalogue.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
ROUND2 = {
    "hf.require_version",
    "hf.torch_load_cve_gate",
    "hf.trainingargs_bf16_unsupported",
    "hf.trainingargs_incompatible_flags",
    "hf.flash_attention_unavailable",
    "hf.chat_template_missing",
    "hf.auto_class_mismatch",
    "accelerate.unknown_mixed_precision",
    "accelerate.state_already_initialized",
    "hub.path_read_as_repo_id",
    "hf.argparser_unused_args",
    "safetensors.not_a_safetensors_file",
}


def test_the_rules_load_and_each_has_a_real_log():
    in_pack = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}
    assert ROUND2 <= in_pack
    assert ROUND2 <= loaded_rule_ids()
    # plus one earlier rule's log: a truncated safetensors file stays the corrupt-checkpoint reading
    assert {lab["rule"] for lab in LABELS} == ROUND2 | {"torch.checkpoint.corrupt"}


def test_no_other_pack_has_the_same_ids():
    assert not ROUND2 & ids_in_other_packs(PACK)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_puts_the_message_where_the_library_says_it_belongs(label):
    check_labelled_log(DATA, label)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_reads_the_log_from_its_text_alone(label):
    diag = check_text_alone(DATA, label)
    assert diag.root_causes[0].category == label["category"]


def test_the_torch_load_gate_replaces_the_weights_only_reading():
    # the message says weights_only=True, but the cause is torch's version, not torch 2.6's new default
    diag = diagnose([str(DATA / "hf_torch_load_needs_torch_2_6.log")])
    rules = [c.rule for c in diag.root_causes]
    assert "torch.checkpoint.weights_only" not in rules
    assert "2.6" in diag.root_causes[0].summary
    assert "checkpoint" in [c.category for c in diag.root_causes[:3]]


def test_the_auto_class_rule_replaces_the_generic_config_key_rule():
    diag = diagnose([str(DATA / "hf_auto_class_wrong_task.log")])
    assert "py.config_key" not in [c.rule for c in diag.root_causes]
    assert "AutoModelForSeq2SeqLM" in diag.root_causes[0].summary
    assert "BertConfig" in diag.root_causes[0].summary


def test_bf16_without_a_capable_gpu_keeps_the_device_and_the_torch_build_as_differentials():
    diag = diagnose([str(DATA / "hf_trainingargs_bf16_without_gpu.log")])
    assert {"hardware", "environment"} <= {c.category for c in diag.root_causes[:3]}


def test_the_version_check_names_the_requirement_and_what_was_found():
    summary = diagnose([str(DATA / "hf_require_version_too_old.log")]).root_causes[0].summary
    assert "tokenizers>=99.0" in summary and "tokenizers==0.23.3" in summary


def test_a_file_that_is_not_safetensors_names_lfs_pointers_but_a_truncated_one_stays_corrupt():
    other = diagnose([str(DATA / "safetensors_not_a_safetensors_file.log")])
    assert "torch.checkpoint.corrupt" not in [c.rule for c in other.root_causes]
    assert "environment" in [c.category for c in other.root_causes[:2]]
    cut = diagnose([str(DATA / "safetensors_truncated_file.log")])
    assert cut.root_causes[0].rule == "torch.checkpoint.corrupt"
