"""A native library's own version check, and JAX's backend that could not start (issue 13, kjax5).

- ``cue:build_version``: a binary's check of the runtime library it loaded against the release it was built for
  (XLA's "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0", JAX's "Found cuDNN version X,
  but JAX was built against version Y", jax's jaxlib check, NumPy 2's "modules must be compiled with NumPy 2.0"),
  read in the message and wherever the log prints it (the hint rule ``reason.build_version``): the installed
  versions lead, the operator and the device runtime recede.
- ``cue:backend_init``: JAX's backend factory (xla_bridge) could not start a platform ("Unable to initialize backend
  'tpu'", "Requested backend tpu_driver, but it failed to initialize", "Jax plugin configuration error"): the
  installed native stack and the device runtime lead, the program's code and data recede; the failure is a device
  runtime's (``type:backend``) where no rule typed it.

Each train log is diagnosed as ``bench/confusion.py`` does: with every rule, and with the findings of the rules
whose causes that diagnosis listed dropped (``--without-rules``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb.kb_helpers import context_facts, run_failing, top3, train_log_with_rules, train_log_without_rules

# ---------------------------------------------------------------------------------------------------------------
# cue:build_version
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        # "Unimplemented: DNN library is not found." after XLA's cuDNN check (8.0.5 loaded, built with 8.1.0)
        "jax/jax_cudnn_805_older_than_810_dnn_not_found",
        # an XlaRuntimeError at the first operation after the same check (8.5.0 loaded, built with 8.6.0)
        "jax/jax_dnn_library_init_failed_cudnn_85_runtime_older_than_86_build",
    ],
)
def test_train_log_a_version_check_above_the_failure_puts_the_installation_first(name: str) -> None:
    """Before, the operator (the "Unimplemented" words) or the device runtime was first and the installed versions
    second: the check's line is a glog error line that names no error word, above the exception; now it is read."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == "environment"
    assert "cue:build_version" in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)


def test_train_log_numpy2_check_puts_the_installation_first() -> None:
    """NumPy 2's check of a module built against NumPy 1.x ("modules must be compiled with NumPy 2.0"): before, the
    program's code was first without the rules; now the installed versions are."""
    diag, label = train_log_without_rules(
        "environment/env_numpy2_released_module_compiled_against_numpy1_unpinned_requirements"
    )
    assert label["category"] == "environment"
    assert "cue:build_version" in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)


def test_a_version_word_alone_is_not_a_version_check(tmp_path: Path) -> None:
    """A deprecation warning names a release without pairing a built and a loaded one: no check was made (a real
    Python run: the warning, then the program's own error)."""
    diag, err = run_failing(
        tmp_path,
        """
        import warnings
        warnings.warn("jax.tree_structure is deprecated, and will be removed in a future release.", FutureWarning)
        raise ValueError("batch size must be positive")
        """,
    )
    assert "FutureWarning" in err
    assert "cue:build_version" not in context_facts(diag)


# ---------------------------------------------------------------------------------------------------------------
# cue:backend_init
# ---------------------------------------------------------------------------------------------------------------


def test_train_log_a_backend_that_did_not_start_is_a_device_runtime_failure() -> None:
    """Colab's remote TPU driver did not answer ("Requested backend tpu_driver, but it failed to initialize:
    DEADLINE_EXCEEDED"): before, the device runtime was outside the three with and without the rules; now it is in
    them, and the failure is typed as the device runtime's."""
    name = "jax/jax_colab_tpu_nightly_driver_deadline_exceeded"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "backend"
    assert "cue:backend_init" in context_facts(diag), context_facts(diag)
    assert diag.profile.type == "backend"
    assert "backend" in top3(diag), top3(diag)
    assert "model" not in top3(diag), top3(diag)
    diag, _label = train_log_with_rules(name)
    assert "backend" in top3(diag), top3(diag)


def test_train_log_a_plugin_that_did_not_initialize_puts_the_installation_first() -> None:
    """jax-cuda12-plugin newer than jaxlib ("Jax plugin configuration error: Exception when calling
    jax_plugins.xla_cuda12.initialize()"): before, the plugin's library was first without the rules; now the
    installed versions are, and the plugin's exception keeps its type (it names no device)."""
    diag, label = train_log_without_rules("jax/jax_cuda_plugin_newer_than_jaxlib_custom_type_id_handler")
    assert label["category"] == "environment"
    assert "cue:backend_init" in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)
    assert diag.profile.type != "backend"


def test_an_application_that_failed_to_initialize_is_not_a_backend(tmp_path: Path) -> None:
    """Words about some other component failing to start (a database, a service) are not JAX's backend factory
    (a real Python run)."""
    diag, err = run_failing(
        tmp_path,
        'def connect():\n    raise RuntimeError("Database failed to initialize: connection refused")\n\nconnect()\n',
    )
    assert "Database failed to initialize" in err
    assert "cue:backend_init" not in context_facts(diag)
    assert diag.profile.type != "backend"
