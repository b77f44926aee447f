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
    ("name", "rule", "stage"),
    [
        ("environment/flash_attn3_build_nvcc_12_1_below_required_12_3", "flash_attn.toolkit_too_old", "compile"),
        ("environment/flash_attn_build_rejects_old_system_nvcc", "flash_attn.toolkit_too_old", "compile"),
        (
            "environment/speechbrain_tests_soundfile_not_installed_no_backend",
            "torchaudio.backend_not_available",
            "startup",
        ),
        ("pytorch/torchaudio_soundfile_backend_not_installed", "torchaudio.backend_not_available", "startup"),
    ],
)
def test_the_tools_own_words_about_the_installation(name: str, rule: str, stage: str) -> None:
    diag, label = train_log_with_rules(name)
    assert fired(diag, rule)
    assert diag.profile.stage == stage == label["stage"]
    assert top3(diag)[0] == "environment" == label["category"]
