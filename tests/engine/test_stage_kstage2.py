"""The stage of a failure, second pass (kstage2): a device runtime error raised in the compiler's frames is a
compile-time failure even where the rule's message family says runtime; a constructor's signature refusing its
call in a program (not a test) before any progress is start-up; a real file under a redacted folder
(``<path>/pkg/mod.py``) is the program's file, not a pseudo-file like ``<stdin>``. Train logs of the thread
corpus and real runs of Python here."""

from __future__ import annotations

from pathlib import Path

from tests.kb.kb_helpers import run_failing, train_log_with_rules


def test_a_backend_error_in_the_compilers_frames_is_compile():
    # triton's loading of a kernel inductor built (_init_handles) fails on the device: a rule says runtime
    diag, label = train_log_with_rules(
        "pytorch/pt_inductor_triton_kernel_image_invalid_bundled_ptxas_newer_than_driver_470"
    )
    assert label["stage"] == "compile"
    assert diag.profile.type == "backend"
    assert diag.profile.stage == "compile"


def test_a_constructors_signature_refusing_its_call_before_progress_is_startup():
    diag, label = train_log_with_rules("pytorch/medicalgpt_grpo_processing_class_old_transformers")
    assert label["stage"] == "startup"
    assert diag.profile.stage == "startup"


def test_a_constructors_signature_error_in_a_real_program_is_startup(tmp_path: Path):
    body = (
        "class Trainer:\n    def __init__(self, model):\n        self.model = model\n\nTrainer(model=1, tokenizer=2)\n"
    )
    diag, err = run_failing(tmp_path, body, as_file=True)
    assert "__init__() got an unexpected keyword argument" in err
    assert diag.profile.stage == "startup"


def test_the_same_signature_error_of_a_function_is_not_startup(tmp_path: Path):
    body = "def train(model):\n    return model\n\ntrain(model=1, tokenizer=2)\n"
    diag, err = run_failing(tmp_path, body, as_file=True)
    assert "got an unexpected keyword argument" in err
    assert diag.profile.stage != "startup"


def test_a_constructor_in_a_file_under_a_redacted_folder_is_the_programs():
    # ``<path>/…/waveplus_bridge.py``: its ReadConfiguration.__init__ under the module's top level, no progress
    diag, label = train_log_with_rules(
        "pytest_python/py_g8_waveplus_bridge_keyerror_retries_default_config_not_applied"
    )
    assert label["stage"] == "startup"
    assert diag.profile.stage == "startup"
