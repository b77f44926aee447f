"""Two installation facts stated by the tools themselves, read where the generic RuntimeError reading put the
program's code or a library first:

* flash-attn's setup.py refuses a CUDA toolkit older than its kernels need ("FlashAttention is only supported
  on CUDA 11.6 and above", FlashAttention-3: 12.3) while building from source (``flash_attn.toolkit_too_old``:
  the installation, stage compile);
* torchaudio's list of available audio backends holds only those whose package or library this machine has
  ("Backend \\"soundfile\\" is not one of available backends: [...]": ``torchaudio.backend_not_available``).

Train logs as their users pasted them."""

from __future__ import annotations

import pytest

from .kb_helpers import fired, top3, train_log_with_rules


@pytest.mark.parametrize(
    "name",
    [
        "environment/flash_attn3_build_nvcc_12_1_below_required_12_3",
        "environment/flash_attn_build_rejects_old_system_nvcc",
    ],
)
def test_a_flash_attn_source_build_on_an_older_toolkit(name: str) -> None:
    diag, label = train_log_with_rules(name)
    assert fired(diag, "flash_attn.toolkit_too_old")
    assert diag.profile.stage == "compile" == label["stage"]
    assert top3(diag)[0] == "environment" == label["category"]


@pytest.mark.parametrize(
    "name",
    [
        "environment/speechbrain_tests_soundfile_not_installed_no_backend",
        "pytorch/torchaudio_soundfile_backend_not_installed",
    ],
)
def test_an_audio_backend_whose_package_is_missing(name: str) -> None:
    diag, label = train_log_with_rules(name)
    assert fired(diag, "torchaudio.backend_not_available")
    assert diag.profile.stage == "startup" == label["stage"]
    assert top3(diag)[0] == "environment" == label["category"]
