"""The LLM fine-tuning stack's own messages (49-llm-stack-catalogue.toml): DeepSpeed, accelerate, peft, trl and
bitsandbytes, each family harvested from the library's released sources and shown by a failure produced for real
on a CPU machine with the released library (tests/data/kb/llm_stack/labels.json keeps each run's code and
command), plus the train logs whose threads show DeepSpeed's no_sync refusal under ZeRO 2 and the Trainer's
ds_config check."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_labelled_log, fired, ids_in_other_packs, pack_rules, top3, train_log_path

PACK_NAME = "49-llm-stack-catalogue.toml"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK_NAME
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "llm_stack"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
IDS = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}


def test_the_pack_loads_without_a_warning_and_its_ids_are_its_own():
    assert {r.id for r in pack_rules(PACK_NAME)} == IDS
    assert not IDS & ids_in_other_packs(PACK)


SHOWN_BY_A_TRAIN_LOG_ONLY = {"hf.deepspeed_config_vs_trainingargs"}


def test_every_family_has_a_real_log():
    shown = {lab["rule"] for lab in LABELS}
    assert shown >= IDS - SHOWN_BY_A_TRAIN_LOG_ONLY, IDS - SHOWN_BY_A_TRAIN_LOG_ONLY - shown


def test_the_logs_name_no_machine_path():
    for log in DATA.glob("*.log"):
        text = log.read_text()
        assert "/work/" not in text and "/root/" not in text and "/tmp/kllm" not in text, log.name


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: f"{lab['log'][:-4]}-{lab['rule']}")
def test_it_diagnoses_the_real_log(label):
    check_labelled_log(DATA, label)


def test_the_libraries_own_config_checks_lead_over_the_generic_assertion():
    """DeepSpeed's config asserts are AssertionErrors: without the pack the generic assertion family read them as
    a library's invariant or the program's check; the message names the ds_config's setting."""
    for log in ("ds_batch.log", "ds_fp16_bf16.log", "ds_no_batch.log", "ds_untested_opt.log"):
        diag = diagnose([str(DATA / log)], exit_code=1)
        assert diag.root_causes[0].category == "config", log
        assert diag.profile.stage == "startup", (log, diag.profile.stage)


def test_the_bitsandbytes_cpu_build_is_read_beside_torch_s_cuda_check():
    diag = diagnose([str(DATA / "bnb041_adam8bit.log")], exit_code=1)
    assert fired(diag, "bnb.native_library_unavailable")
    assert diag.root_causes[0].category == "environment"


def test_a_zero2_no_sync_refusal_in_a_trainer_run_reads_as_the_release_pairing():
    """DeepSpeed 0.16 added the assertion to engine.no_sync; transformers' Trainer/accelerate of that time called it
    during gradient accumulation (the thread's fix: a transformers release, or deepspeed<=0.15.4)."""
    diag = diagnose([str(train_log_path("distributed/deepspeed_016_no_sync_zero2_grad_accumulation"))])
    assert fired(diag, "ds.no_sync_with_zero_partitioning")
    assert top3(diag)[0] == "environment"
    assert "model" in top3(diag)


def test_the_program_s_own_no_sync_call_keeps_its_code_a_home():
    diag = diagnose([str(DATA / "ds_no_sync.log")], exit_code=1)
    assert fired(diag, "ds.no_sync_with_zero_partitioning")
    assert top3(diag)[:2] in (["environment", "model"], ["model", "environment"])


def test_the_trainer_s_deepspeed_mismatch_check_names_the_configuration():
    """transformers' HfTrainerDeepSpeedConfig lists each ds_config value that disagrees with TrainingArguments
    (the thread: fp16 turned off in the arguments, left on in the ds_config)."""
    diag = diagnose([str(train_log_path("distributed/belle_deepspeed_fp16_config_mismatch_training_args"))])
    top = diag.root_causes[0]
    assert (top.rule, top.category) == ("hf.deepspeed_config_vs_trainingargs", "config")
    assert diag.profile.stage == "startup"
