"""Three distinct homes per PyTorch symptom family, in the catalogue's order (issue #13, task pttop3).

Each family's causes are checked on a real log: PyTorch-on-CPU programs run here in a child process, train
logs of the thread corpus (real logs from public threads), and the H200 capture of a device-side assert.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, build_ruleset
from tests.kb.kb_helpers import pack_rules, top3, train_log_path

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests/data/corpus/gpu"


def _without(*rule_ids: str):
    """The built-in rule set with ``rule_ids`` replaced by rules that never match: an unseen failure whose
    message no rule knows, left to the reasoning and the symptom families."""
    toml = "".join(
        f'[[rule]]\nid = "{r}"\ntitle = "left out"\nkeywords = ["left-out-rule-{n}-never-in-a-log"]\ntype = "runtime_error"\n\n'
        for n, r in enumerate(rule_ids)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_ruleset([*_builtin_packs(), ("99-left-out.toml", toml)])


def test_the_packs_load_without_a_warning():
    for pack in ("10-pytorch.toml", "15-cuda-nccl-catalogue.toml"):
        assert pack_rules(pack)


def test_a_catalogued_library_status_silences_the_family_guess():
    # cuBLAS's CUBLAS_STATUS_NOT_INITIALIZED at cublasCreate(): the handle is created at the first matmul,
    # when the model already holds the GPU memory; the family-level "a CUDA library refused" rule is silent
    d = diagnose([train_log_path("pytorch/pt_lmeval_cublas_not_initialized_near_oom")])
    assert d.profile.type == "backend" and d.profile.stage == "runtime"
    assert not any(rc.rule == "cuda.library_status" for rc in d.root_causes)
    assert any(rc.rule == "cublas.status.not_initialized" for rc in d.root_causes)
    assert top3(d)[0] == "resource"


def test_a_library_handle_failure_points_at_memory_without_its_rule():
    d = diagnose(
        [train_log_path("pytorch/pt_lmeval_cublas_not_initialized_near_oom")],
        ruleset=_without("cublas.status.not_initialized", "cuda.library_status"),
    )
    assert "resource" in top3(d)


def test_cudnn_execution_failed_names_the_build_then_the_kernel_then_cudnn():
    # cudnnStatus_t EXECUTION_FAILED: "failure to launch some cuDNN kernel ... check that the hardware, an
    # appropriate version of the driver, and the cuDNN library are correctly installed"
    d = diagnose([train_log_path("pytorch/pt_dualdmp_cudnn_execution_failed_old_cuda")])
    assert d.profile.type == "backend" and d.profile.stage == "runtime"
    assert top3(d) == ["environment", "operator", "backend"]


def test_device_side_assert_points_at_the_data_without_its_rule():
    # a real H200 capture: token ids beyond the embedding table; with the device-side-assert rule left out
    # the kernel's bounds assertion still names the data first
    stderr = GPU / "device_side_assert" / "stderr.txt"
    with_rule = diagnose([stderr])
    assert top3(with_rule)[0] == "dataset"
    without = diagnose([stderr], ruleset=_without("torch.cuda.device_side_assert"))
    assert top3(without)[0] == "dataset"
    assert "model" in top3(without)


def test_nccl_unhandled_cuda_error_puts_the_install_first_and_keeps_a_release_bug():
    d = diagnose([train_log_path("distributed/nccl_tests_unhandled_cuda_nccl1")])
    assert d.profile.type == "communication"
    assert top3(d)[:2] == ["environment", "backend"]
    assert any(rc.category == "library" and rc.rule == "nccl.result.unhandled_cuda" for rc in d.root_causes)


torch = pytest.importorskip("torch")


def _run(tmp_path: Path, program: str) -> tuple[str, int]:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(program))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    return proc.stderr, proc.returncode


def test_state_dict_size_mismatch_checkpoint_then_config_then_model(tmp_path):
    stderr, rc = _run(
        tmp_path,
        """
        import torch
        torch.nn.Linear(4, 3).load_state_dict(torch.nn.Linear(4, 5).state_dict())
        """,
    )
    assert "size mismatch for weight" in stderr
    d = diagnose(texts={"stderr": stderr}, exit_code=rc)
    assert d.profile.stage == "checkpoint"
    assert top3(d) == ["checkpoint", "config", "model"]


def test_device_mismatch_model_code_then_a_library_that_places_modules(tmp_path):
    stderr, rc = _run(
        tmp_path,
        """
        import torch
        torch.ones(2, device="meta") + torch.ones(2)
        """,
    )
    assert "is not on the expected device" in stderr
    d = diagnose(texts={"stderr": stderr}, exit_code=rc)
    assert any(rc.rule == "torch.device_mismatch" for rc in d.root_causes)
    assert top3(d)[0] == "model"
    assert "library" in top3(d)


def test_same_dtype_check_is_a_dtype_mismatch_with_a_library_home(tmp_path):
    stderr, rc = _run(
        tmp_path,
        """
        import torch
        q = torch.randn(1, 2, 4, 8)
        torch.nn.functional.scaled_dot_product_attention(q, q.double(), q)
        """,
    )
    assert "to have the same dtype" in stderr
    d = diagnose(texts={"stderr": stderr}, exit_code=rc)
    assert any(rc.rule == "torch.dtype_mismatch" for rc in d.root_causes)
    assert top3(d)[0] == "model"
    assert any(rc.category == "library" for rc in d.root_causes[:4])


def test_dataloader_worker_killed_memory_then_the_data_and_the_datasets_code(tmp_path):
    stderr, rc = _run(
        tmp_path,
        """
        import os, signal, traceback, torch

        class Data(torch.utils.data.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does to a worker

        try:
            for _ in torch.utils.data.DataLoader(Data(), num_workers=1):
                pass
        except RuntimeError:
            # reported as the interpreter reports it, then gone at once: torch's own worker shutdown can wait
            # forever on a queue lock its SIGCHLD handler interrupted (a torch hang, seen in a loaded CI run)
            traceback.print_exc()
            os._exit(1)
        """,
    )
    assert "DataLoader worker" in stderr
    d = diagnose(texts={"stderr": stderr}, exit_code=rc)
    assert d.profile.type == "crash"
    top = top3(d)
    assert top[0] == "resource"
    assert "dataset" in top
    # the Dataset's own code that every worker copies stays a listed hypothesis
    assert any(rc.category == "model" and rc.rule == "torch.dataloader.worker_killed" for rc in d.root_causes)


def test_truncated_checkpoint_file_then_the_save_cut_short_then_concurrent_writers(tmp_path):
    stderr, rc = _run(
        tmp_path,
        """
        import torch
        torch.save({"w": torch.ones(1000)}, "ckpt.pt")
        data = open("ckpt.pt", "rb").read()
        open("ckpt.pt", "wb").write(data[: len(data) // 2])  # a save cut short
        torch.load("ckpt.pt")
        """,
    )
    assert "failed finding central directory" in stderr
    d = diagnose(texts={"stderr": stderr}, exit_code=rc)
    assert d.profile.stage == "checkpoint"
    assert top3(d) == ["checkpoint", "resource", "model"]


def test_checkpoint_of_a_gpu_machine_loaded_where_no_gpu_is_visible(tmp_path):
    # a checkpoint whose storages were saved on cuda:0 (the location tag torch.save records), loaded by a
    # CPU-only torch: map_location first (a setting of the load: the file is sound, kpt6's
    # 23-torch-ownership.toml), then the install, then the file's own home
    stderr, rc = _run(
        tmp_path,
        """
        import io, zipfile, torch
        buf = io.BytesIO()
        torch.save({"w": torch.ones(2)}, buf)
        src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
        with zipfile.ZipFile("ckpt.pt", "w", zipfile.ZIP_STORED) as out:
            for info in src.infolist():
                data = src.read(info)
                if info.filename.endswith("data.pkl"):
                    data = data.replace(b"X\\x03\\x00\\x00\\x00cpu", b"X\\x06\\x00\\x00\\x00cuda:0")
                out.writestr(info, data)
        torch.load("ckpt.pt")
        """,
    )
    assert "Attempting to deserialize object on a CUDA device" in stderr
    d = diagnose(texts={"stderr": stderr}, exit_code=rc)
    assert d.profile.stage == "checkpoint"
    assert top3(d) == ["config", "environment", "checkpoint"]
