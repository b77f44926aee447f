"""torch.utils.cpp_extension refusing to build a CUDA extension with a toolkit of another major release than
torch's CUDA (``torch.cpp_extension_cuda_mismatch``): its message holds a line break after "compile" in the
releases most pasted, so a pattern that needs "compile PyTorch" on one line never saw it; the check runs in
``BuildExtension.build_extensions``, so the stage is compile. Three train logs as their users pasted them, and
the message as the installed torch formats it."""

from __future__ import annotations

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, top3, train_log_with_rules

RULE = "torch.cpp_extension_cuda_mismatch"


@pytest.mark.parametrize(
    "name",
    [
        "environment/autogptq_build_cuda_12_1_toolkit_vs_torch_cu117_mismatch",
        "environment/cpp_extension_system_cuda_mismatches_torch_cuda",
        "environment/extension_build_system_cuda_12_1_vs_torch_cu118",
    ],
)
def test_an_extension_build_refused_for_the_toolkits_cuda_is_a_compile_failure(name: str) -> None:
    diag, label = train_log_with_rules(name)
    assert fired(diag, RULE)
    assert not fired(diag, "torch.cuda_build_mismatch")  # not the start-up reading of a torch build
    assert diag.profile.stage == "compile"
    assert diag.profile.type == "runtime_error"
    assert top3(diag)[0] == "environment" == label["category"]


def test_the_installed_torchs_own_wording_is_read() -> None:
    cpp_extension = pytest.importorskip("torch.utils.cpp_extension")
    text = "RuntimeError: " + cpp_extension.CUDA_MISMATCH_MESSAGE % ("12.1", "11.8")
    diag = diagnose(texts={"stderr": "building 'ext' extension\n" + text + "\n"}, exit_code=1)
    assert fired(diag, RULE)
    assert diag.profile.stage == "compile"
