"""The TensorFlow / Keras catalogue pack (76-tensorflow-catalogue.toml).

It loads without warnings and replaces no earlier rule; it diagnoses real failures: logs produced for real on a
CPU machine by tensorflow-cpu 2.21.0 / keras 3.15.1 (the code that produced each log is kept beside it in
tests/data/kb/tensorflow_catalogue/labels.json; gpu_not_found.log by the GPU-enabled `tensorflow` wheel on a
machine without a GPU) and the TensorFlow train logs of the thread corpus (a TF1 OOM; keras and tensorflow
releases that do not belong together). Every such log reads as the tensorflow stack. When tensorflow is
importable the test also produces failures live and diagnoses their output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import load_ruleset
from tests.engine.corpus_logs import train_log
from tests.kb.kb_helpers import (
    check_labelled_log,
    check_text_alone,
    fired,
    ids_in_other_packs,
    pack_rules,
    summaries,
    top3,
)

PACK_NAME = "76-tensorflow-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "tensorflow_catalogue"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK_NAME
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
# rules of the pack without a log here: the GPU build's cuDNN messages (no GPU or cuDNN on the machine that
# produced the logs: checked on the catalogue's own texts below), the "Graph execution error" wrapper (a stack
# hint, noise = true) and the keras/tensorflow pairing (train logs below)
NO_CAPTURED_LOG = {
    "tf.data_batch_shapes",  # a train log below
    "tf.dnn_unavailable",
    "tf.cudnn_launch_failure",
    "tf.graph_execution_wrapper",
    "keras.tf_version_skew",
}


# --------------------------------------------------------------------------------------------- the pack


def test_the_pack_loads_without_warnings():
    mine = pack_rules(PACK_NAME)
    assert len(mine) >= 29
    assert {r.id.split(".")[0] for r in mine} <= {"tf", "keras"}
    for r in mine:
        assert r.causes and all(c.fix_hints for c in r.causes), r.id
        cats = [c.category for c in r.causes]
        assert len(cats) == len(set(cats)), (r.id, cats)  # distinct alternatives
        assert r.stack == "tensorflow", r.id


def test_the_pack_replaces_no_earlier_rule():
    here = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}
    assert not here & ids_in_other_packs(PACK)


def test_every_rule_of_the_pack_has_a_real_log():
    here = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}
    assert here - {lab["rule"] for lab in LABELS} == NO_CAPTURED_LOG


def test_tensorflow_errors_and_keras_packages_are_known_to_the_reasoning():
    reasoning = load_ruleset().reasoning
    assert reasoning.package_stacks["tf_keras"] == "tensorflow"
    assert "tf_keras" in reasoning.libraries
    entry = reasoning.exceptions["tensorflow.python.framework.errors_impl.UnimplementedError"]
    assert (entry["family"], entry["type"]) == ("not_implemented", "unsupported_op")
    assert reasoning.exceptions["OutOfRangeError"]["family"] == "iteration"
    assert reasoning.exceptions["tensorflow.python.framework.errors_impl.ResourceExhaustedError"]["family"] == "oom"


# ------------------------------------------------------------------------------- real output of TF 2.21


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_diagnoses_the_real_log(label):
    diag = check_labelled_log(DATA, label)
    assert label["category"] in top3(diag)
    assert diag.profile.stack == "tensorflow", diag.profile.stack


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_diagnoses_the_real_log_from_its_text_alone(label):
    """A scorer may hand over the log only (no exit status): the signature must carry it."""
    check_text_alone(DATA, label)


def test_a_keras_loss_shape_error_is_not_read_as_jax():
    """Keras 3's "`target` and `output` must have the same shape" holds JAX's words "must have the same shape":
    the Keras rule silences jax.shape, so the stack and the rule are TensorFlow's."""
    diag = diagnose([str(DATA / "keras_target_shape.log")], exit_code=1)
    rules = [c.rule for c in diag.root_causes]
    assert "jax.shape" not in rules and diag.profile.stack == "tensorflow"


def test_a_tensorflow_oom_is_not_read_as_xla():
    """TF's op kernel log line "RESOURCE_EXHAUSTED: OOM when allocating tensor" holds XLA's status word."""
    diag = diagnose([str(DATA / "oom_cpu.log")], exit_code=1)
    rules = [c.rule for c in diag.root_causes]
    assert "jax.oom" not in rules and rules[0] == "tf.oom"
    assert diag.profile.stack == "tensorflow"
    assert "1099511627776" in diag.root_causes[0].summary


def test_the_generic_unimplemented_rule_yields_to_the_specific_ones():
    for log, rule in (("fs_scheme_s3.log", "tf.filesystem_scheme"), ("cast_unimplemented.log", "tf.cast_string")):
        rules = [c.rule for c in diagnose([str(DATA / log)], exit_code=1).root_causes]
        assert rule in rules and "tf.unimplemented" not in rules, rules


def test_a_gzip_reader_error_is_tensorflows_not_hdf5s():
    rules = [c.rule for c in diagnose([str(DATA / "gzip_data_loss.log")], exit_code=1).root_causes]
    assert "tf.data_loss" in rules and "hdf5.corrupt" not in rules, rules


# ------------------------------------------------------------------------------------ train logs


def test_a_tf1_oom_is_the_batch_size():
    """Deeplab-v2: "ResourceExhaustedError (see above for traceback): OOM when allocating tensor with shape[…]";
    reducing the batch size fixed it."""
    diag, label = train_log("pytest_python/py_tf1_resource_exhausted_oom_deeplab_resnet101_batch_size_too_large")
    assert diag.profile.type == "oom" == label["type"]
    assert diag.profile.stack == "tensorflow" == label["stack"]
    assert diag.root_causes[0].rule == "tf.oom"
    assert diag.root_causes[0].category == label["category"] == "resource"
    without_pack, _ = train_log(
        "pytest_python/py_tf1_resource_exhausted_oom_deeplab_resnet101_batch_size_too_large", PACK_NAME
    )
    assert without_pack.profile.stack != "tensorflow"  # the rule is what names the framework here


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        (
            "pytest_python/py_tf_collection_keras243_import_fails_tf25_internal_tf2_version_mismatch",
            "keras.tf_version_skew",
        ),
        ("pytest_python/py_tf_keras_src_legacy_missing_tf214_keras2_package_needs_keras3", "keras.tf_version_skew"),
        # Keras 3's words as pasted: the backticks lost to Markdown ("V3 .keras files", "instances of keras.Layer"),
        # or the paste starting inside the message ("filepath=… Keras 3 only supports V3 …")
        ("environment/keras3_savedmodel_load_unsupported_lstm_segmentation", "keras.keras2_api_under_keras3"),
        ("environment/keras3_sequential_rejects_tensorflow_hub_keraslayer", "keras.keras2_api_under_keras3"),
        ("environment/pyccl_baccoemu_keras3_cannot_load_legacy_savedmodel_emulator", "keras.keras2_api_under_keras3"),
    ],
)
def test_keras_and_tensorflow_releases_that_do_not_belong_together(name, rule):
    diag, label = train_log(name)
    assert diag.root_causes[0].rule == rule
    assert diag.root_causes[0].category == label["category"] == "environment"
    assert diag.profile.stack == "tensorflow"


# ------------------------------------------------------- the GPU build's catalogue texts (no GPU here)

# the messages as TensorFlow's GPU build holds them (strings of libtensorflow_framework.so.2 /
# libtensorflow_cc.so.2 in tensorflow 2.21.0; the convolution-algorithm and "DNN library is not found" texts
# of earlier releases' conv_ops.cc / cuda_dnn.cc), each ending the status line TensorFlow raises
CATALOGUE = [
    (
        "tf.dnn_unavailable",
        "tensorflow.python.framework.errors_impl.UnknownError: Failed to get convolution algorithm. This is probably "
        "because cuDNN failed to initialize, so try looking to see if a warning log message was printed above.",
    ),
    # XLA's stream executor's words (jaxlib prints them too): the rule names no framework, the exception's module does
    (
        "cudnn.dnn_library_not_found",
        "tensorflow.python.framework.errors_impl.UnimplementedError: DNN library is not found.",
    ),
    (
        "tf.dnn_unavailable",
        "tensorflow.python.framework.errors_impl.NotFoundError: No algorithm worked!  Error messages:",
    ),
    (
        "tf.cudnn_launch_failure",
        "tensorflow.python.framework.errors_impl.InternalError: cuDNN launch failure : input shape ([1,64,512,512])",
    ),
]


@pytest.mark.parametrize("rule,line", CATALOGUE)
def test_the_gpu_builds_cudnn_messages(rule, line):
    diag = diagnose(
        texts={"stderr": 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n' + line}
    )
    assert diag.root_causes[0].rule == rule
    assert diag.profile.type == "backend" and diag.profile.stack == "tensorflow"
    assert "environment" in top3(diag)
    assert "tf.unimplemented" not in [c.rule for c in diag.root_causes]


def test_tf_data_batching_elements_of_two_shapes_is_the_data_not_mindspore_s():
    # a greyscale (512,512,1) array among (512,512,3) images in the dataset (segmentation_gym's thread)
    diag, label = train_log("pytest_python/tf_data_batch_mixed_grayscale_rgb_images")
    assert diag.root_causes[0].rule == "tf.data_batch_shapes"
    assert "ms.cat.batch_shapes" not in [c.rule for c in diag.root_causes]
    assert "[512,512,3]" in diag.root_causes[0].summary and "[512,512,1]" in diag.root_causes[0].summary
    assert (diag.profile.stack, diag.profile.stage) == ("tensorflow", "data")
    assert top3(diag)[0] == label["category"] == "dataset"


def test_xla_s_dnn_words_in_a_jax_log_name_no_tensorflow():
    # jaxlib's XLA prints the stream executor's words too (cuDNN 8.0.5 loaded, jaxlib built with 8.1.0)
    # (the glog path "external/org_tensorflow/..." is jaxlib's build of XLA from TensorFlow's tree)
    diag = train_log("jax/jax_cudnn_805_older_than_810_dnn_not_found")[0]
    assert diag.root_causes[0].rule == "cudnn.runtime_build_mismatch"  # the loaded-vs-built check, no framework named
    assert fired(diag, "cudnn.dnn_library_not_found")
    assert diag.profile.stack == "jax"
    assert top3(diag)[0] == "environment"
    assert "this TensorFlow build" not in summaries(diag)


# ---------------------------------------------------------------------------------- live, when TF is here


def _has_tensorflow() -> bool:
    p = subprocess.run([sys.executable, "-c", "import tensorflow, keras"], capture_output=True, timeout=300)
    return p.returncode == 0


LIVE = [lab for lab in LABELS if lab["log"] in {"reshape_invalid.log", "keras_no_gradients.log", "graph_bool.log"}]


@pytest.mark.parametrize("label", LIVE, ids=lambda lab: lab["log"][:-4])
def test_it_diagnoses_a_live_failure(label, tmp_path):
    if not _has_tensorflow():
        pytest.skip("tensorflow and keras are not installed in this interpreter")
    p = subprocess.run([sys.executable, "-c", label["code"]], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode != 0
    diag = diagnose(texts={"stderr": p.stdout + p.stderr}, exit_code=p.returncode)
    assert label["rule"] in [c.rule for c in diag.root_causes]
    assert label["category"] in top3(diag)
