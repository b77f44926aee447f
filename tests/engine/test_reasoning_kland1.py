"""What this session's new PyTorch, distributed and Ascend train logs lacked (issue 13, kland1).

- ``ggml.backend_error_abort`` (rules/57-ggml-catalogue.toml): ggml's device back ends (llama.cpp, whisper.cpp)
  send every failed runtime call to one error handler that prints "<BACKEND> error: …", "current device: N, in
  function F at file:line" and aborts: a crash.
- ``cue:ggml_backend_misuse`` (engine/reason.py ``ggml_backend_misuse``, rules/05-reasoning.toml): where the runtime
  refused ggml's call as a misuse of a stream, context or handle (CANN's 107002-107005, CUDA's invalid resource
  handle) and nothing faulted beside it, the back end's code is the home; a kernel's fault is not read.
- ``cann.rt.stream_context`` (55-cann-catalogue.toml) also reads the runtime's own spellings of 107003.
- ``download.html_page_saved_as_file`` (58-download-catalogue.toml): pickle's "invalid load key, '<'" and torch's
  weights-only "Unsupported operand 60" are a web page saved in place of the file: the downloader or the URL.
- ``vllm.bf16_needs_sm80`` (44-serving-catalogue.toml): vLLM's dtype gate on a pre-Ampere GPU: the dtype setting, a
  framework that builds the engine second.

Train logs are diagnosed with every rule and with the explaining rules left out (``bench/confusion.py``); the
download family is also shown by real runs of pickle and torch.load on the CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb.kb_helpers import (
    context_facts,
    fired,
    run_failing,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

CANN_GGML = "ascend/llamacpp_cann_multidevice_stream_destroy_107003"
CUDA_GGML = "pytorch/pt_llamacpp_server_unspecified_launch_failure_mul_mat_kernel_bug_fixed_pr8123"
HTML_PAGE = "pytorch/robustbench_gdrive_html_download_unpickling"
VLLM_BF16 = "pytorch/nemo_rl_vllm_bf16_default_on_v100"
PAGE = "<!DOCTYPE html><html><head><title>Google Drive - Virus scan warning</title></head><body>x</body></html>\n"


# --- ggml's back-end error handler ---------------------------------------------------------------------------


def test_ggml_abort_on_a_refused_cann_call_is_a_crash_of_the_back_end() -> None:
    diag, label = train_log_with_rules(CANN_GGML)
    assert fired(diag, "ggml.backend_error_abort")
    assert fired(diag, "cann.rt.stream_context")  # "runtime result = 107003", "stream not in current context"
    assert diag.profile.type == "crash" == label["type"]
    assert top3(diag)[0] == "library" == label["category"]
    assert "cue:ggml_backend_misuse" in context_facts(diag)


def test_ggml_misuse_reads_without_the_rules() -> None:
    diag, label = train_log_without_rules(CANN_GGML)
    assert "cue:ggml_backend_misuse" in context_facts(diag)
    assert top3(diag)[0] == "library" == label["category"]


def test_a_kernel_fault_under_ggml_stays_the_operator() -> None:
    # CUDA's "unspecified launch failure" under ggml's handler: a kernel faulted on the device, not a refused call
    diag, label = train_log_with_rules(CUDA_GGML)
    assert fired(diag, "ggml.backend_error_abort")
    assert "cue:ggml_backend_misuse" not in context_facts(diag)
    assert diag.profile.type == "crash"
    assert top3(diag)[0] == "operator" == label["category"]


# --- a web page saved as the file ----------------------------------------------------------------------------


def test_html_page_saved_as_a_checkpoint_names_the_downloader() -> None:
    diag, label = train_log_with_rules(HTML_PAGE)
    assert fired(diag, "download.html_page_saved_as_file")
    assert label["category"] == "library" and "library" in top3(diag)


@pytest.mark.parametrize(
    "load",
    [
        "import pickle\npickle.load(open('w.pth', 'rb'))",
        "import torch\ntorch.load('w.pth', weights_only=False)",
        "import torch\ntorch.load('w.pth', weights_only=True)",  # torch's unpickler: "Unsupported operand 60"
    ],
)
def test_real_loads_of_a_saved_web_page(tmp_path: Path, load: str) -> None:
    if "torch" in load:
        pytest.importorskip("torch")
    diag, err = run_failing(tmp_path, f"open('w.pth', 'w').write({PAGE!r})\n{load}\n")
    assert "invalid load key, '<'" in err or "Unsupported operand 60" in err
    assert fired(diag, "download.html_page_saved_as_file")
    assert "library" in top3(diag)


def test_a_git_lfs_pointer_is_not_a_web_page(tmp_path: Path) -> None:
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n"
    diag, err = run_failing(
        tmp_path, f"import pickle\nopen('w.pth', 'w').write({pointer!r})\npickle.load(open('w.pth', 'rb'))\n"
    )
    assert "invalid load key, 'v'" in err
    assert fired(diag, "torch.msg.not_a_checkpoint_file")
    assert not fired(diag, "download.html_page_saved_as_file")


# --- vLLM's dtype gate -----------------------------------------------------------------------------------------


def test_vllm_bf16_on_a_pre_ampere_gpu_is_the_dtype_setting() -> None:
    diag, label = train_log_with_rules(VLLM_BF16)
    assert fired(diag, "vllm.bf16_needs_sm80")
    assert top3(diag)[0] == "config"
    assert label["category"] == "library" and "library" in top3(diag)[:2]
    assert diag.profile.stage == "startup" == label["stage"]
