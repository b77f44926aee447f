"""TensorFlow / Keras families of ktf2 (77-tensorflow-catalogue-2.toml and two facts of engine/reason.py).

Real failures produced on a CPU machine with tensorflow-cpu 2.21.0 / keras 3.15.1 / tf_keras 2.21.0 (the code of
each is kept in tests/data/kb/ktf2/labels.json), the TensorFlow train logs of the thread corpus that show the same
families (an XLA op without a kernel, a TF 1.x "End of sequence", Keras's HDF5 loaders under h5py 3, a weights file
that is a Git LFS pointer), and Python's own output for the control cases.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    check_labelled_log,
    check_text_alone,
    fired,
    ids_in_other_packs,
    pack_rules,
    run_failing,
    top3,
    train_log_path,
)

PACK_NAME = "77-tensorflow-catalogue-2.toml"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK_NAME
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "ktf2"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]


def test_the_pack_loads_and_its_ids_are_its_own():
    rules = pack_rules(PACK_NAME)
    assert len(rules) == 17
    assert not {r.id for r in rules} & ids_in_other_packs(PACK)
    for r in rules:
        assert r.stack == "tensorflow" and r.causes and all(c.fix_hints for c in r.causes), r.id


def test_every_rule_of_the_pack_has_a_real_log():
    # train logs: below, and in test_catalogue_words_not_misread.py
    logged = {label["rule"] for label in LABELS} | {"tf.end_of_sequence_tf1", "tf.py_func_in_saved_graph"}
    assert {r.id for r in pack_rules(PACK_NAME)} <= logged


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"])
def test_it_diagnoses_the_real_failure(label):
    diag = check_labelled_log(DATA, label)
    assert diag.profile.stack == "tensorflow", diag.profile.stack
    if not label.get("first", True):
        assert label["category"] in top3(diag), top3(diag)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"])
def test_it_diagnoses_the_real_failure_from_its_text_alone(label):
    check_text_alone(DATA, label)


def _top(name: str):
    diag = diagnose([str(train_log_path(name))])
    return diag, top3(diag)


def test_an_op_without_an_xla_kernel_is_the_operator():
    diag, cats = _top("pytest_python/tf_xla_jit_compile_ragged_range_no_xla_kernel")
    assert fired(diag, "tf.xla_unsupported_op")
    assert (diag.profile.type, diag.profile.stage) == ("unsupported_op", "compile")
    assert cats[0] == "operator" and "model" in cats, cats


def test_a_tf1_end_of_sequence_line_is_a_raised_error_on_its_own():
    # the paste kept only TF 1.x's closing line: the error was raised, so the data-stage rule applies
    diag, cats = _top("pytest_python/tf_data_iterator_end_of_sequence_maxlen_filter")
    assert fired(diag, "tf.end_of_sequence_tf1")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "data")
    assert cats[0] == "config", cats


@pytest.mark.parametrize(
    "name",
    ["environment/keras_load_weights_h5py3_str_decode", "environment/tf21_h5py3_load_model_str_decode"],
)
def test_keras_hdf5_loader_decoding_a_str_is_h5py3_beside_an_old_keras(name):
    diag, cats = _top(name)
    assert any(
        v.name == "context:api:h5py3_str_attrs" and v.status == "passed"
        for rc in diag.root_causes
        for v in rc.validation_checks
    )
    assert diag.profile.stage == "checkpoint"
    assert cats[0] == "environment", cats


def test_a_str_decoded_by_the_programs_own_code_is_not_the_h5py_fact(tmp_path):
    diag, _stderr = run_failing(tmp_path, "name = 'model'\nprint(name.decode('utf8'))\n", as_file=True)
    checks = {v.name for rc in diag.root_causes for v in rc.validation_checks}
    assert "context:api:h5py3_str_attrs" not in checks


def test_a_weights_file_that_is_not_hdf5_is_the_checkpoint():
    # Keras's load_weights opened an LFS pointer (the thread's maintainer: the download is not the weights)
    diag, cats = _top("pytest_python/keras_load_weights_hdf5_file_signature_not_found_lfs")
    assert fired(diag, "hdf5.not_hdf5")
    assert cats[0] == "checkpoint", cats


def test_a_data_file_that_is_not_hdf5_stays_the_data(tmp_path):
    # the same h5py error opened by the program's own code (no weights loader among the frames)
    (tmp_path / "table.h5").write_text("id,value\n1,2\n")
    body = (
        "import h5py\n"
        "def read_table(path):\n"
        "    with h5py.File(path, 'r') as f:\n"
        "        return f['value'][()]\n"
        "read_table('table.h5')\n"
    )
    try:
        import h5py  # noqa: F401
    except ImportError:
        # without h5py the same frames and message, as h5py 3 prints them
        text = (
            "Traceback (most recent call last):\n"
            '  File "/home/user/work/prog.py", line 5, in <module>\n'
            "    read_table('table.h5')\n"
            '  File "/home/user/work/prog.py", line 3, in read_table\n'
            "    with h5py.File(path, 'r') as f:\n"
            '  File "/home/user/venv/lib/python3.11/site-packages/h5py/_hl/files.py", line 564, in __init__\n'
            "    fid = make_fid(name, mode, userblock_size, fapl, fcpl, swmr=swmr)\n"
            '  File "/home/user/venv/lib/python3.11/site-packages/h5py/_hl/files.py", line 238, in make_fid\n'
            "    fid = h5f.open(name, flags, fapl=fapl)\n"
            "OSError: Unable to synchronously open file (file signature not found)\n"
        )
        diag = diagnose(texts={"stderr": text}, exit_code=1)
    else:
        diag, _stderr = run_failing(tmp_path, body, as_file=True)
    assert fired(diag, "hdf5.not_hdf5")
    assert top3(diag)[0] == "dataset", top3(diag)


def test_tensorflows_no_kernel_words_name_the_unsupported_op_family_without_the_rules():
    # the reasoning alone (every rule pack but 05-reasoning's tables left out) reads the XLA bridge's words
    from pytest_faildiag.rules import _builtin_packs, build_ruleset

    packs = [
        (name, text) for name, text in _builtin_packs() if not name.startswith(("7", "1", "2", "3", "4", "5", "8"))
    ]
    rs = build_ruleset(packs)
    log = train_log_path("pytest_python/tf_xla_jit_compile_ragged_range_no_xla_kernel")
    diag = diagnose([str(log)], ruleset=rs)
    assert diag.profile.type == "unsupported_op"
    assert top3(diag)[0] == "operator", top3(diag)


def test_a_custom_layer_that_cannot_be_saved_is_the_program_s_class():
    """Keras 2's wording of the saving contract (a thread's log, train): the custom layer must override get_config;
    the NotImplementedError is the serializer's demand, not a missing kernel."""
    diag, cats = _top("pytest_python/keras_save_custom_layer_missing_get_config")
    assert fired(diag, "keras.get_config_not_overridden")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "checkpoint")
    assert cats[0] == "model", cats
