"""Catalogue words that other rules used to claim:

* cudaErrorNoDevice / CUDA_ERROR_NO_DEVICE ("no CUDA-capable device is detected") means the driver runs and
  sees no device: not a driver too old for the runtime (cudaErrorInsufficientDriver), and not JAX's backend
  when TensorFlow's stream executor says it;
* Cython's "numpy.dtype size changed" as a RuntimeWarning lets the import go on: the error after it is the
  failure; as a ValueError it is still the installed-versions reading;
* torch before 2.0 said "Trying to convert Double to the MPS backend but there is no mapping for it" where
  later releases say the MPS framework does not support float64: the same missing double precision;
* a fixture pytest itself provides (tmp_path since 3.9, caplog since 3.3) that pytest says does not exist
  means a pytest older than that release, not a misspelt name;
* Windows system error 1455 ("The paging file is too small for this operation to complete") is the commit
  limit, RAM plus the paging file, used up: memory that ran out, not the installation;
* a saved graph holding tf.py_function / tf.numpy_function's ops (EagerPyFunc, PyFunc, PyFuncStateless) loaded
  where no Python process defines their body (``tf.py_func_in_saved_graph``): TensorFlow's API docs say that body
  is not serialized with the graph, so TF Serving's op registry says the op is not registered; the model's code
  has to change, not the installed op libraries (``tf.op_not_registered``, which it silences);
* xFormers' dispatcher saying "xFormers wasn't build with CUDA support" / "operator wasn't built - see `python -m
  xformers.info`" (``xformers.kernels_not_built``): the installed xFormers has no compiled kernels for this torch,
  whatever the inputs, so the installed versions come first and the dispatcher's generic not-implemented reading
  (``torch.not_implemented_for_device``) stays silent.

Train logs as their users pasted them."""

from __future__ import annotations

import pytest

from .kb_helpers import fired, top3, train_log_with_rules


def test_no_device_visible_is_not_a_driver_too_old() -> None:
    diag, label = train_log_with_rules("pytorch/reward_learning_rl_ray_trial_no_gpu_cuinit_no_device")
    assert fired(diag, "cuda.err.no_device_visible")
    assert not fired(diag, "cuda.driver_too_old")
    assert not fired(diag, "jax.cuda_backend")
    assert diag.profile.type == "backend"
    assert "environment" not in top3(diag)[:1]
    assert label["category"] in top3(diag)


def test_the_numpy_size_warning_is_not_the_failure() -> None:
    diag, label = train_log_with_rules("pytorch/stgcn_mmskeleton_default_gpus_on_single_gpu_invalid_device_ordinal")
    assert not fired(diag, "py.numpy_abi")
    assert not fired(diag, "numpy.abi_packaging")
    assert fired(diag, "torch.invalid_device")
    assert top3(diag)[0] == "config" == label["category"]


@pytest.mark.parametrize(
    "name",
    [
        "environment/pyepr_wheel_built_with_old_numpy_dtype_size_changed_numpy2",
        "pytest_python/sklearn_bench_numpy2_dtype_size_changed",
    ],
)
def test_the_numpy_size_error_still_reads_as_the_installed_versions(name: str) -> None:
    diag, _ = train_log_with_rules(name)
    assert fired(diag, "py.numpy_abi")


def test_the_older_mps_wording_of_missing_double_precision() -> None:
    diag, _ = train_log_with_rules("pytorch/pytorch_mps_torch_ones_float64_no_mps_dtype_mapping")
    assert fired(diag, "mps.float64_unsupported")
    assert diag.profile.type == "unsupported_op"


def test_a_fixture_of_pytest_itself_not_found_is_an_older_pytest() -> None:
    diag, label = train_log_with_rules("pytest_python/heudiconv_pytest_3_0_lacks_tmp_path_fixture")
    first = diag.root_causes[0]
    assert first.rule == "pytest.fixture_not_found"
    assert first.category == "environment" == label["category"]
    assert any("pytest>=3.9" in hint for hint in first.fix_hints)


def test_the_paging_file_too_small_is_memory_that_ran_out() -> None:
    # Windows system error 1455 (ERROR_COMMITMENT_LIMIT): RAM plus the paging file are committed
    diag, label = train_log_with_rules("environment/windows_paging_file_too_small_checkpoint_load")
    assert fired(diag, "py.windows_commit_limit")
    assert diag.profile.type == "oom" == label["type"]
    assert top3(diag)[0] == "resource" == label["category"]


@pytest.mark.parametrize(
    ("name", "rule", "silenced", "category", "hint"),
    [
        (  # TF Serving loading a model that holds a Python-function op
            "environment/savedmodel_uses_pyfunc_op_unsupported_by_model_server",
            "tf.py_func_in_saved_graph",
            "tf.op_not_registered",
            "model",
            None,
        ),
        (  # a CPU-only xFormers build under a CUDA torch
            "environment/xformers_no_operator_not_built_with_cuda_rtx5090",
            "xformers.kernels_not_built",
            "torch.not_implemented_for_device",
            "environment",
            "xformers.info",
        ),
    ],
)
def test_an_op_the_build_or_the_model_lacks_is_not_the_generic_reading(
    name: str, rule: str, silenced: str, category: str, hint: str | None
) -> None:
    diag, label = train_log_with_rules(name)
    assert fired(diag, rule)
    assert not fired(diag, silenced)
    assert diag.profile.type == "unsupported_op"
    assert top3(diag)[0] == category == label["category"]
    if hint is not None:
        assert any(hint in h for h in diag.root_causes[0].fix_hints)
