"""The stage of a failure, third pass (kstage3): where a tool says it was. pytest's report of a collection error,
a build tool's or a compiler's error lines, a data loader's report of its workers, an installer that cannot resolve
a requirement, words that say the run had not started (argparse, a port in use, the dynamic loader, a build's
configuration checked at start, transformers' from_pretrained) and a collective library's error before any progress.
Train logs of the thread corpus with the explaining rules left out (the reasoning alone), and real runs of pytest,
argparse, pip and make here."""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from bench.ablate_rules import OWN, dropping
from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import train_log_with_rules, train_log_without_rules


def _without_rules(text: str, exit_code: int):
    """Real output diagnosed with the rules that explained it left out (as ``bench/ablate_rules.py`` does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = diagnose(texts={"stderr": text}, exit_code=exit_code)
        rules = {c.rule for c in first.root_causes if not c.rule.startswith(OWN)}
        with dropping(rules):
            return diagnose(texts={"stderr": text}, exit_code=exit_code)


def _run(argv: list[str], cwd: Path) -> tuple[str, int]:
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=240)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stdout + p.stderr, p.returncode


@pytest.mark.parametrize(
    ("name", "stage"),
    [
        # pytest's "ERROR collecting x.py" header beside a plugin's AttributeError
        ("pytest_python/py_pr6_pytest_sphinx_getini_attributeerror_pytest8_plugin_incompat", "collection"),
        # "ERROR: file or directory not found: tests/" (the session resolving what to collect)
        ("pytest_python/pytest_tests_dir_missing_from_public_release", "collection"),
        # "import file mismatch:" (two test modules with one basename)
        ("pytest_python/pt_import_mismatch_dup_basename_ttnn", "collection"),
        # pip building flash-attn: "Error compiling objects for extension", "Failed building wheel for"
        ("environment/flash_attn_build_cuda115_too_old", "compile"),
        # CMake's "CMake Error at …"
        ("mindspore/ms_build_gpu_cmake_cudnn_not_found_cudnn_home_wrong", "compile"),
        # dynamo's "backend='inductor' raised:" and inductor's "Failed to find C compiler"
        ("pytorch/gc2_facet_docker_runtime_image_no_c_compiler_inductor", "compile"),
        # lax.scan's check of the traced carry types
        ("jax/mjx_scan_carry_sparse_qm_fields_change_size_after_step", "compile"),
        # torch's DataLoader worker signal handler: "Unexpected bus error encountered in worker"
        ("pytorch/pt_dataloader_worker_bus_error_hub_container_small_dev_shm", "data"),
        # datasets' "An error occurred while generating the dataset"
        ("pytorch/py_datasets_cast_error_extra_columns_in_some_jsonl_files", "data"),
        # pip's resolver: ResolutionImpossible
        ("environment/pip_resolution_impossible_project_pins", "startup"),
        # "Address already in use" (a port bound at start)
        ("distributed/cdialgpt_master_port_in_use", "startup"),
        # Windows' loader: "[WinError 126] … Error loading \"…fbgemm.dll\""
        ("environment/pt_win_fbgemm_dll_torch240_regression", "startup"),
        # "undefined symbol:" of an extension built against another torch
        ("environment/fa_undefined_symbol_wheel_torch_mismatch", "startup"),
        # NumPy's import check: "A module that was compiled using NumPy 1.x cannot be run in NumPy 2"
        ("environment/hf_datasets_ci_numpy2_abi", "startup"),
        # jax's own version check at import
        ("jax/jax_jaxlib_newer_than_jax_version", "startup"),
        # transformers' from_pretrained: "Can't load tokenizer for"
        ("environment/hf_cant_load_tokenizer_old_transformers", "startup"),
        # a collective library's error before any progress: caffe's "Check failed: result == ncclSuccess"
        ("distributed/caffe_nccl_unhandled_cuda_m2090_regression", "startup"),
        # vLLM's pynccl "NCCL error: unhandled cuda error" in its workers' init_device
        ("distributed/vllm_ray_multinode_nccl_unhandled_cuda_bad_node", "startup"),
        # HCCL's own error lines (type communication, set after the stage was chosen) before any progress
        ("ascend/pta_hccl_listen_port_conflict_pd_same_host", "startup"),
    ],
)
def test_where_the_tool_says_it_was_without_the_rules(name: str, stage: str):
    diag, label = train_log_without_rules(name)
    assert label["stage"] == stage
    assert diag.profile.stage == stage


def test_a_build_scripts_words_place_a_rule_without_a_stage_in_compile():
    # apex's setup.py: "Cuda extensions are being compiled with a version of Cuda that does not match": the rule
    # names no stage, the build's words do
    diag, label = train_log_with_rules("environment/apex_build_cuda_version_mismatch")
    assert label["stage"] == "compile"
    assert diag.profile.stage == "compile"


def test_pytests_collection_report_without_frames_is_collection(tmp_path: Path):
    (tmp_path / "test_a.py").write_text('import json\njson.loads("{")\n\n\ndef test_x():\n    pass\n')
    out, rc = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=no", "-q"], tmp_path)
    assert "during collection" in out and 'File "' not in out
    assert _without_rules(out, rc).profile.stage == "collection"


def test_a_failing_test_is_not_collection(tmp_path: Path):
    (tmp_path / "test_b.py").write_text("def test_x():\n    assert 1 == 2\n")
    out, rc = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=short", "-q"], tmp_path)
    assert "FAILED test_b.py::test_x" in out
    assert _without_rules(out, rc).profile.stage != "collection"


def test_argparse_refusing_the_command_line_is_startup(tmp_path: Path):
    code = (
        "import argparse\n"
        "p = argparse.ArgumentParser(prog='train')\n"
        "p.add_argument('--mode', choices=['a', 'b'])\n"
        "p.parse_args(['--mode', 'c'])\n"
    )
    out, rc = _run([sys.executable, "-c", code], tmp_path)
    assert "error: argument --mode: invalid choice" in out
    assert _without_rules(out, rc).profile.stage == "startup"


def test_pip_that_cannot_find_a_requirement_is_startup(tmp_path: Path):
    argv = [sys.executable, "-m", "pip", "install", "--no-index", "--disable-pip-version-check", "kstage3-absent==1.0"]
    out, rc = _run(argv, tmp_path)
    assert "No matching distribution found" in out
    assert _without_rules(out, rc).profile.stage == "startup"


def test_make_and_the_compilers_error_lines_are_compile(tmp_path: Path):
    (tmp_path / "x.c").write_text('#include "kstage3_missing.h"\nint f(void) { return 0; }\n')
    (tmp_path / "Makefile").write_text("x.o: x.c\n\tcc -c x.c -o x.o\n")
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("make or a C compiler (cc) is not installed")
    out, rc = _run(["make"], tmp_path)
    assert "fatal error:" in out and "***" in out
    assert _without_rules(out, rc).profile.stage == "compile"


def test_a_collective_error_after_progress_stays_runtime(tmp_path: Path):
    # the words of vLLM's pynccl error, after steps that advanced (a real Python run printing its steps, then
    # raising): the communicators were made long before
    code = (
        "import sys\n"
        "for step in range(1, 5):\n"
        "    print(f'step {step} loss {2.5 - step / 10:.2f}', file=sys.stderr)\n"
        "raise RuntimeError('NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)')\n"
    )
    out, rc = _run([sys.executable, "-c", code], tmp_path)
    assert "step 4 loss" in out and "NCCL error" in out
    assert _without_rules(out, rc).profile.stage != "startup"
