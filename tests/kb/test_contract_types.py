"""The contract's type of a failure, where a catalogue says what failed.

``backend``: device toolkit failures (ptxas refusing PTX newer than it supports, the driver's kernel module
reporting an API mismatch). ``unsupported_op``: an operation the runtime does not implement where it was asked to
run (PyTorch's dispatcher finding no kernel for the backend, TorchScript's compiler refusing a construct, the MPS
backend's float64, TensorFlow's op registry), as 78-export-runtime-catalogue
reads an op a runtime lacks. And the control: a toolkit library the loader cannot open is the program's import dying
of an OSError (``runtime_error``, as 9 of the 12 train logs with that line are labelled), whichever toolkit.

Real failures: train logs of the thread corpus (never a dev log: ``train_log_path`` checks the split), and real
processes here (the loader's own error for a soname no machine has; TorchScript compiling a function that uses
``global``).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from .kb_helpers import run_failing, summaries, train_log_with_rules


@pytest.mark.parametrize(
    ("name", "rule", "stage"),
    [
        ("environment/system_ptxas_older_than_triton_ptx_isa", "cuda.ptxas_older_than_ptx", "compile"),
        (
            "environment/nvdocker_nvrm_api_mismatch_kernel_module_not_reloaded",
            "cuda.err.system_driver_mismatch",
            "startup",
        ),
    ],
)
def test_train_logs_of_a_device_toolkit_failure(name, rule, stage):
    diag, label = train_log_with_rules(name)
    assert label["type"] == diag.profile.type == "backend"
    assert diag.profile.stage == stage
    assert diag.root_causes[0].rule == rule, [c.rule for c in diag.root_causes]
    assert diag.root_causes[0].category == "environment"


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("pytorch/pt_impactpack_torchvision_nms_cuda_version_mismatch", "torch.dispatch.vision_op_no_backend_kernel"),
        ("pytorch/torchscript_multi_dim_slicing_needs_pytorch_1_0", "torch.msg.torchscript_unsupported"),
        ("pytorch/microsplit_predict_mps_float64_unsupported", "mps.float64_unsupported"),
        ("environment/savedmodel_uses_pyfunc_op_unsupported_by_model_server", "tf.py_func_in_saved_graph"),
    ],
)
def test_train_logs_of_an_operation_the_runtime_lacks(name, rule):
    diag, label = train_log_with_rules(name)
    assert label["type"] == diag.profile.type == "unsupported_op"
    assert rule in [c.rule for c in diag.root_causes]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_torchscript_refusing_a_construct_is_an_unsupported_operation(tmp_path):
    diag, err = run_failing(
        tmp_path,
        "import torch\n\ndef step(x: torch.Tensor):\n    global scale\n    return x\n\ntorch.jit.script(step)\n",
        as_file=True,
        timeout=300,
    )
    assert "torch.jit.frontend.UnsupportedNodeError" in err, err[-2000:]
    assert diag.profile.type == "unsupported_op"
    assert diag.profile.stage == "compile"
    assert "torch.msg.torchscript_unsupported" in [c.rule for c in diag.root_causes]


def test_ptxas_names_both_isa_versions():
    diag, _ = train_log_with_rules("environment/system_ptxas_older_than_triton_ptx_isa")
    top = diag.root_causes[0]
    assert "up to 7.8" in top.summary and "the PTX is 8.4" in top.summary


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ELF loader's message")
@pytest.mark.parametrize("soname", ["libcudart.so.99", "libamdhip64.so.99", "libsndfile.so.99"])
def test_a_library_the_loader_cannot_open_is_a_runtime_error_of_the_environment(tmp_path, soname):
    # a real Python process that loads the soname with ctypes (as a framework's binding does at import) and dies
    # of the loader's OSError
    diag, err = run_failing(tmp_path, f"import ctypes\nctypes.CDLL({soname!r})\n")
    assert "cannot open shared object file" in err, err
    assert diag.profile.type == "runtime_error", (diag.profile.type, [c.rule for c in diag.root_causes])
    assert diag.root_causes[0].category == "environment"
    assert soname in " ".join(c.summary for c in diag.root_causes[:2])
    assert "torch" not in summaries(diag)  # no framework ran
