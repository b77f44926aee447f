"""MindSpore's own message families (the kms block of 60-mindspore.toml).

Each family is a message MindSpore 2.10.0 raises itself (a Python raise text under mindspore/ or a C++ text of
its shared libraries) that no earlier rule read: a checkpoint/MindIR file that does not parse or does not
exist, a dataset path that names nothing, JIT strict mode and graph-mode typing limits, an exception raised
while graph compilation evaluates construct(), an operator with no kernel on this backend, two Parameters of
one name, num_parallel_workers above the CPU count, an Assign of another rank and a reshape to another size.
Each has a real log under tests/data/kb/mindspore_families, produced on a CPU machine with the MindSpore 2.10.0
CPU wheel (the code beside each log in labels.json): its rule fires and the category where the cause usually
lives is among the first three. The MindSpore train logs of the thread corpus keep their homes (no rule of the
block claims them). When mindspore is importable a few failures are also produced live.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_text_alone, fired, ids_in_other_packs, pack_rules, top3, train_log_path

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "mindspore_families"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "60-mindspore.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
BLOCK = "ms.kms."


def _block_ids() -> set[str]:
    return {r["id"] for r in tomllib.loads(PACK.read_text())["rule"] if r["id"].startswith(BLOCK)}


def _causes(diag) -> list[tuple[str, str]]:
    return [(c.rule, c.category) for c in diag.root_causes]


def test_the_block_loads_without_warnings_and_replaces_no_rule():
    loaded = {r.id for r in pack_rules(PACK.name)}
    assert len(_block_ids()) >= 10 and _block_ids() <= loaded
    assert not _block_ids() & ids_in_other_packs(PACK)


def test_the_block_sits_under_its_marker():
    text = PACK.read_text()
    marker = text.index("# --- kms ---")
    assert all(text.index(f'id = "{rid}"') > marker for rid in _block_ids())


def test_every_rule_of_the_block_has_a_real_log():
    assert _block_ids() == {lab["rule"] for lab in LABELS}


def test_the_logs_are_redacted():
    for log in DATA.glob("*.log"):
        text = log.read_text()
        assert "/tmp/" not in text and "/work/" not in text and "/root/" not in text, log.name


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_reads_the_family_in_the_real_log(label):
    diag = diagnose([str(DATA / label["log"])], exit_code=label["exit_code"])
    assert diag.profile.type == label["type"], (diag.profile.type, _causes(diag))
    assert diag.profile.stage == label["stage"], (diag.profile.stage, _causes(diag))
    assert fired(diag, label["rule"]), _causes(diag)
    assert label["category"] in top3(diag), _causes(diag)
    cause = next(c for c in diag.root_causes if c.rule == label["rule"] and c.category == label["category"])
    assert cause.fix_hints
    # the family's home leads the diagnosis (a MindIR path: the file and the configured path share the lead)
    if label.get("first", True):
        assert top3(diag)[0] == label["category"], _causes(diag)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_reads_the_family_from_the_text_alone(label):
    """A scorer may hand over the log only (no exit status): the signature must carry it."""
    check_text_alone(DATA, label)


def test_a_family_with_several_causes_names_the_competing_ones():
    """An unparsable checkpoint leads with the file and keeps the configured path and another release; an
    operator without a kernel leads with the operator and keeps the device setting and the installed package."""
    diag = diagnose([str(DATA / "checkpoint_pickle_not_ckpt.log")], exit_code=1)
    mine = [c.category for c in diag.root_causes if c.rule == "ms.kms.checkpoint_unreadable"]
    assert mine == ["checkpoint", "config", "environment"]
    diag = diagnose([str(DATA / "kernel_unregistered_on_cpu.log")], exit_code=1)
    mine_causes = [c for c in diag.root_causes if c.rule == "ms.kms.kernel_unregistered"]
    assert [c.category for c in mine_causes] == ["operator", "config", "environment"]
    assert "FlashAttentionScore" in mine_causes[0].summary
    diag = diagnose([str(DATA / "num_parallel_workers_above_cpus.log")], exit_code=1)
    mine_causes = [c for c in diag.root_causes if c.rule == "ms.kms.num_parallel_workers"]
    assert [c.category for c in mine_causes] == ["config", "resource"]


def test_the_reshape_family_is_mindspores_not_torchs():
    """MindSpore's reshape message ("proposed_shape ... is invalid for input of size") was read as PyTorch's
    shape family; its own rule now leads and the stack is MindSpore."""
    diag = diagnose([str(DATA / "reshape_size.log")], exit_code=1)
    assert diag.root_causes[0].rule == "ms.kms.reshape_size"
    assert diag.profile.stack == "mindspore"


@pytest.mark.parametrize(
    ("name", "category"),
    [
        # the folder exists but holds another format: minddata's "no valid data" rule, not a missing path
        ("mindspore/ms_cifar10dataset_no_valid_data_wrong_files", "dataset"),
        # a model suite's own "does not exist" for its data list: the configuration, as before
        ("mindspore/ms_mindyolo_dataset_path_missing", "config"),
        # PyNative on the CPU refused by the device target check: still the operator's
        ("mindspore/ms_cpu_pynative_op_unsupported", "operator"),
        ("mindspore/ms_set_context_jit_config_not_recognized_mindspore_too_old", "environment"),
    ],
)
def test_the_train_logs_keep_their_homes(name, category):
    label = json.loads(train_log_path(name).with_suffix(".json").read_text())
    diag = diagnose([str(train_log_path(name))], exit_code=label["exit_code"])
    assert not [c.rule for c in diag.root_causes if c.rule.startswith(BLOCK)], _causes(diag)
    assert top3(diag)[0] == category, _causes(diag)


@pytest.mark.parametrize("log", ["dataset_folder_missing.log", "parameter_name_duplicate.log", "reshape_size.log"])
def test_it_reads_the_family_produced_live_when_mindspore_is_installed(tmp_path, log):
    pytest.importorskip("mindspore")
    label = next(lab for lab in LABELS if lab["log"] == log)
    proc = subprocess.run(
        [sys.executable, "-c", label["code"]], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode != 0
    diag = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    assert fired(diag, label["rule"]), _causes(diag)
    assert label["category"] in top3(diag)
