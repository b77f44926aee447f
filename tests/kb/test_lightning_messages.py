"""PyTorch Lightning's and torchmetrics' own messages (48-lightning-catalogue.toml).

Each rule is shown on output produced for real by lightning 2.6 / torchmetrics 1.9 on a CPU-only machine.
The script that produced each log is kept beside it in tests/data/kb/lightning_messages/labels.json; only the
environment's directories were renamed.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids
from tests.kb.kb_helpers import check_labelled_log, check_text_alone, ids_in_other_packs

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "lightning_messages"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "48-lightning-catalogue.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
RULES = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}


def test_the_rules_load_and_each_has_a_real_log():
    assert len(RULES) == 20
    assert RULES <= loaded_rule_ids()
    assert {lab["rule"] for lab in LABELS} == RULES
    assert {p.name for p in DATA.glob("*.log")} == {lab["log"] for lab in LABELS}


def test_no_other_pack_has_the_same_ids():
    assert not RULES & ids_in_other_packs(PACK)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_puts_the_message_where_the_library_says_it_belongs(label):
    check_labelled_log(DATA, label)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_reads_the_log_from_its_text_alone(label):
    diag = check_text_alone(DATA, label)
    assert diag.root_causes[0].category == label["category"]


def test_the_trainer_argument_checks_fail_at_startup():
    for log in (
        "lightning_devices_value_invalid",
        "lightning_precision_value_invalid",
        "lightning_strategy_ddp_interactive",
    ):
        assert diagnose([str(DATA / f"{log}.log")]).profile.stage == "startup", log


def test_an_unavailable_accelerator_keeps_the_trainer_argument_and_the_machine_as_differentials():
    for log in ("lightning_accelerator_cuda_not_available", "lightning_accelerator_gpu_not_available"):
        diag = diagnose([str(DATA / f"{log}.log")])
        assert [c.category for c in diag.root_causes[:3]] == ["environment", "config", "hardware"], log


def test_a_monitored_key_nobody_logged_names_the_key_and_keeps_the_module_second():
    for log in ("lightning_modelcheckpoint_monitor_not_logged", "lightning_earlystopping_monitor_not_logged"):
        diag = diagnose([str(DATA / f"{log}.log")])
        assert "'val_loss'" in diag.root_causes[0].summary
        assert [c.category for c in diag.root_causes[:2]] == ["config", "model"], log


def test_a_hook_removed_in_lightning_2_is_code_for_another_release():
    diag = diagnose([str(DATA / "lightning_training_epoch_end_removed_in_2.log")])
    assert "training_epoch_end" in diag.root_causes[0].summary
    # the NotImplementedError is a removed API, not an operator the backend lacks
    assert diag.profile.type == "runtime_error"
    assert "model" in [c.category for c in diag.root_causes[:2]]


def test_a_plain_module_names_the_mixed_lightning_packages_as_the_alternative():
    diag = diagnose([str(DATA / "lightning_fit_plain_nn_module.log")])
    assert "Linear" in diag.root_causes[0].summary
    assert diag.root_causes[1].rule == "lightning.model_not_lightningmodule"
    assert diag.root_causes[1].category == "environment"


def test_a_missing_checkpoint_path_keeps_the_checkpoint_itself_in_the_top_three():
    diag = diagnose([str(DATA / "lightning_fit_ckpt_path_missing.log")])
    assert diag.profile.stage == "checkpoint"
    assert "checkpoints/last.ckpt" in diag.root_causes[0].summary
    assert "checkpoint" in [c.category for c in diag.root_causes[:3]]


def test_checkpoints_through_lightning_are_read_at_the_checkpoint_stage_with_both_homes():
    for log, first in (
        ("lightning_test_ckpt_best_without_modelcheckpoint", "config"),
        ("lightning_resume_from_weights_only_checkpoint", "config"),
        ("lightning_load_from_checkpoint_plain_state_dict", "checkpoint"),
    ):
        diag = diagnose([str(DATA / f"{log}.log")])
        assert diag.profile.stage == "checkpoint", log
        cats = [c.category for c in diag.root_causes[:2]]
        assert cats[0] == first and "library" not in cats, (log, cats)


def test_a_state_dict_loaded_as_a_lightning_checkpoint_is_not_read_as_a_library_bug():
    # a KeyError raised deep inside Lightning would otherwise read as Lightning's own invariant failing
    diag = diagnose([str(DATA / "lightning_load_from_checkpoint_plain_state_dict.log")])
    assert diag.root_causes[0].rule == "lightning.not_a_lightning_checkpoint"
    assert "load_state_dict" in " ".join(diag.root_causes[0].fix_hints)
