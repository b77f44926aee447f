"""Export and deployment runtimes of konnx (78-export-runtime-catalogue.toml): ONNX's checker and shape
inference, ONNX Runtime's status codes and OpenVINO's runtime errors.

Real failures produced on a CPU machine with onnx 1.23.2 / onnxruntime 1.32.0 / openvino 2026.4.1 by the scripts
kept in tests/data/kb/konnx (each case named in labels.json), and controls that must stay with other rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    check_labelled_log,
    check_pack_rules,
    check_text_alone,
    fired,
    ids_in_other_packs,
    pack_rules,
    top3,
    train_log_path,
)

PACK_NAME = "78-export-runtime-catalogue.toml"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK_NAME
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "konnx"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]


def test_the_pack_loads_and_its_ids_are_its_own():
    rules = pack_rules(PACK_NAME)
    assert len(rules) == 23
    assert not {r.id for r in rules} & ids_in_other_packs(PACK)
    check_pack_rules(rules)


def test_every_rule_of_the_pack_has_a_real_log():
    logged = {label["rule"] for label in LABELS} | {"ort.provider_not_available"}  # cuda.log below
    assert {r.id for r in pack_rules(PACK_NAME)} <= logged


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"])
def test_it_diagnoses_the_real_failure(label):
    diag = check_labelled_log(DATA, label)
    if not label.get("first", True):
        assert label["category"] in top3(diag), top3(diag)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"])
def test_it_diagnoses_the_real_failure_from_its_text_alone(label):
    check_text_alone(DATA, label)


def test_a_gpu_provider_missing_from_the_cpu_package_is_the_installation():
    # onnxruntime (CPU) warns and falls back; the provider the program asked for is not in this build
    diag = diagnose(texts={"stderr": (DATA / "cuda.log").read_text()}, exit_code=1)
    assert fired(diag, "ort.provider_not_available")
    assert diag.root_causes[0].category == "environment", [(c.rule, c.category) for c in diag.root_causes]
    assert "CUDAExecutionProvider" in diag.root_causes[0].summary


def test_an_unknown_provider_name_is_the_setting_ahead_of_the_installation():
    diag = diagnose([str(DATA / "badprov.log")], exit_code=1)
    assert [c.rule for c in diag.root_causes][:1] == ["ort.unknown_provider_type"]


def test_the_opset_ceiling_is_read_into_the_summary():
    diag = diagnose([str(DATA / "opsetnew.log")], exit_code=1)
    top = diag.root_causes[0]
    assert top.rule == "ort.model_version_unsupported"
    assert "opset 40" in top.summary and "opset 28" in top.summary, top.summary


def test_a_plain_missing_file_is_not_onnx_runtimes():
    # control: Python's own FileNotFoundError stays with its rule, not the runtime's NO_SUCHFILE
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/work/prog.py", line 1, in <module>\n'
        "    open('model.onnx', 'rb')\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'model.onnx'\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert not any(c.rule.startswith(("ort.", "onnx.", "openvino.")) for c in diag.root_causes)


def test_a_node_failure_that_carries_the_providers_own_error_is_left_to_that_layer():
    # a train log: ONNX Runtime's CANN provider fails a Conv node (CANN failure 500001); the status message is the
    # device runtime's error, so the generic node-failure rule stays out and the backend reading stands
    diag = diagnose([str(train_log_path("ascend/other_g7_onnxruntime_cann_conv_compile_500001_broken_opp_install"))])
    assert not fired(diag, "ort.node_run_failed")
    assert diag.profile.type == "backend"
    assert "environment" in top3(diag)


def test_the_provider_warning_gives_way_to_a_later_error_of_the_run():
    # the session falls back to the CPU and runs on: an unrelated error after the warning is the failure, the
    # missing provider stays among the causes (downstream = true; without it the warning led)
    tail = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/work/prog.py", line 9, in <module>\n'
        "    label = labels[name]\n"
        "KeyError: 'cat'\n"
    )
    diag = diagnose(texts={"stderr": (DATA / "cuda.log").read_text() + tail}, exit_code=1)
    assert diag.root_causes[0].rule != "ort.provider_not_available", [c.rule for c in diag.root_causes]
    assert fired(diag, "ort.provider_not_available")
