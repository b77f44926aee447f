"""Large-scale training frameworks' own messages (21-megatron-catalogue.toml): Megatron-core's parallel-layout,
batch and dist-checkpointing checks, TransformerEngine's install checks, NVIDIA apex's compiled extensions and
FSDP2's fully_shard refusals, each harvested from the released sources and shown by a failure produced for real
on a CPU machine (tests/data/kb/megatron/labels.json keeps each run's code and command) or a train log."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_labelled_log, fired, ids_in_other_packs, pack_rules, top3, train_log_path

PACK_NAME = "21-megatron-catalogue.toml"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK_NAME
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "megatron"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
IDS = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}


def test_the_pack_loads_without_a_warning_and_its_ids_are_its_own():
    assert {r.id for r in pack_rules(PACK_NAME)} == IDS
    assert not IDS & ids_in_other_packs(PACK)


SHOWN_BY_A_TRAIN_LOG_ONLY = {"apex.build_cuda_mismatch"}


def test_every_family_has_a_real_log():
    assert {lab["rule"] for lab in LABELS} == IDS - SHOWN_BY_A_TRAIN_LOG_ONLY


def test_the_logs_name_no_machine_path():
    for log in DATA.glob("*.log"):
        text = log.read_text()
        assert "/work/" not in text and "/root/" not in text and "/tmp/" not in text, log.name


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: f"{lab['log'][:-4]}-{lab['rule']}")
def test_it_diagnoses_the_real_log(label):
    check_labelled_log(DATA, label)


def test_megatron_s_layout_checks_are_startup_config_not_the_generic_value_error():
    """Without the pack the ValueError/RuntimeError differential put the program's model first."""
    for log in (
        "mcore_world.log",
        "mcore_heads.log",
        "mcore_sp.log",
        "mcore_batch.log",
        "mcore_fp16_bf16.log",
        "titan_dims.log",
    ):
        diag = diagnose([str(DATA / log)], exit_code=1)
        assert top3(diag)[0] == "config", log
        assert diag.profile.stage == "startup", (log, diag.profile.stage)


def test_the_apex_setup_cuda_check_in_a_train_log():
    """apex's setup.py compares nvcc's CUDA with torch.version.cuda before building its extensions."""
    diag = diagnose([str(train_log_path("environment/apex_build_cuda_version_mismatch"))])
    assert fired(diag, "apex.build_cuda_mismatch")
    assert diag.profile.stage == "compile"
    assert top3(diag)[0] == "environment"


def test_generic_divisibility_messages_stay_with_the_generic_families():
    """The keywords are broad ("is not divisible by"); the patterns need Megatron's own wording."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "prog.py", line 3, in <module>\n'
        "    divide(7, 2)\n"
        "AssertionError: 7 is not divisible by 2\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert not any(rc.rule.startswith("megatron.") for rc in diag.root_causes)


def test_fully_shard_on_a_module_list_live(tmp_path):
    """torch's own FSDP2 refusal, run now on the CPU with gloo (one rank)."""
    pytest.importorskip("torch.distributed.fsdp")
    code = (DATA / "fsdp2_container.py").read_text().replace("29534", "29544")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    if "does not support containers" not in proc.stderr:
        pytest.skip(f"this torch does not raise FSDP2's refusal here: {proc.stderr[-300:]}")
    diag = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    assert diag.root_causes[0].rule == "fsdp2.container_without_forward"
    assert diag.root_causes[0].category == "model"
