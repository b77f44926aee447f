"""The dynamic loader's line for a CUDA library (libcudart, libcublas, libcudnn, libnccl, ...) names no framework.

Every CUDA build of a framework links against the CUDA libraries by soname, and the loader prints the same
"cannot open shared object file" whichever build asked: the diagnosis reads it as the missing release of that
library for any stack, and says nothing of torch where no torch ran (a real dlopen of such a soname:
test_contract_types.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, run_failing, summaries, top3, train_log_path

RULE = "cuda.runtime_library_unloadable"


@pytest.mark.parametrize(
    "name",
    [
        "environment/onnxruntime_gpu_cudnn8_missing_wrong_cuda_cudnn",
        "environment/tf_import_libcublas80_missing_cuda91_installed",
        "environment/env_trtpy_import_libcudnn_so8_missing_ld_library_path",
    ],
)
def test_other_frameworks_cuda_builds_are_not_read_as_torch(name: str):
    diag = diagnose([str(train_log_path(name))])
    assert fired(diag, RULE)
    assert not fired(diag, "torch.cuda_build_mismatch")
    assert "torch" not in summaries(diag)
    assert top3(diag)[0] == "environment"


def test_torch_own_build_messages_stay_torch_s(tmp_path: Path):
    # the CPU wheel asked for CUDA: torch's own words about its build still name torch; no loader line
    pytest.importorskip("torch")
    diag, err = run_failing(tmp_path, "import torch\ntorch.zeros(1).cuda()\n")
    assert "Torch not compiled with CUDA enabled" in err
    assert fired(diag, "torch.cuda_build_mismatch")
    assert not fired(diag, RULE)
