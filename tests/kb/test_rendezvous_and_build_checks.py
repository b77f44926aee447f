"""Three facts stated by the libraries' own checks, read where a neighbouring reading put another cause first:

* the stream executor's check of the cuDNN it loaded (stream_executor/cuda/cuda_dnn.cc, shared by TensorFlow and
  XLA): "Loaded runtime CuDNN library: X but source was compiled with: Y", TensorFlow 1.x's form with its
  "(compatibility version N)" too, is the installation whichever framework printed it
  (``cudnn.runtime_build_mismatch``), not JAX's backend when TensorFlow says it;
* Horovod's Gloo rendezvous store throws "Wait timeout for key(s): ..." when the other workers' keys did not
  appear within HOROVOD_GLOO_TIMEOUT_SECONDS, 30 s by default (``horovod.gloo_store_wait_timeout``): the setting
  leads, and the pairs' connect reading yields;
* Lightning 2.0's strategy registry refuses the strategies it removed ("You selected an invalid strategy name:
  `strategy='dp'`"): the installed Lightning is newer than the code (``removed.lightning``).

Train logs as their users pasted them."""

from __future__ import annotations

import pytest

from .kb_helpers import fired, top3, train_log_led_by, train_log_with_rules


@pytest.mark.parametrize(
    ("name", "stack"),
    [
        ("environment/segmentation_keras_tf_cudnn_runtime_6_vs_compiled_5_mismatch", "tensorflow"),
        ("environment/tf_object_detection_colab_cudnn_805_older_than_compiled_810", "tensorflow"),
        ("environment/conda_forge_jaxlib_cudnn_9_10_runtime_vs_9_13_build_mismatch", "jax"),
    ],
)
def test_cudnn_version_check_is_the_installation_whichever_framework(name: str, stack: str) -> None:
    diag, label = train_log_led_by(name, "cudnn.runtime_build_mismatch")
    assert label["category"] == "environment"
    assert diag.profile.type == "backend" == label["type"]
    assert diag.profile.stack == stack
    first = diag.root_causes[0]
    if stack == "tensorflow":  # TensorFlow's check is not read as JAX's backend
        assert not fired(diag, "jax.cuda_backend")
        assert "jaxlib" not in first.summary


@pytest.mark.parametrize(
    "name",
    [
        "distributed/horovod_gloo_rendezvous_http_store_wait_timeout_at_50_nodes",
        "distributed/ray_horovod_gloo_http_store_wait_timeout_after_30_seconds",
    ],
)
def test_horovod_gloo_store_wait_is_its_timeout_setting(name: str) -> None:
    diag, label = train_log_with_rules(name)
    assert fired(diag, "horovod.gloo_store_wait_timeout")
    assert not fired(diag, "gloo.connect_full_mesh")  # the store's wait, not a pair's connect
    assert top3(diag)[0] == "config" == label["category"]
    assert "communication" in top3(diag)
    assert diag.profile.type == "communication" == label["type"]
    assert "HOROVOD_GLOO_TIMEOUT_SECONDS" in diag.root_causes[0].summary


def test_lightning_removed_strategy_is_a_newer_lightning() -> None:
    diag, label = train_log_with_rules("pytorch/chordmixer_lightning2_strategy_dp_removed_invalid_strategy")
    assert fired(diag, "removed.lightning")
    assert top3(diag)[0] == "environment" == label["category"]
