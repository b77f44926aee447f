"""Native builds, GPU containers and GPU system states, keyed to the tool that printed the message.

* gcc/clang "fatal error: H: No such file or directory": Python's headers and the CUDA toolkit's are the
  installation; a header the package's own source (in pip's temporary build tree) asks for and no toolchain or
  framework provides is the package's build (its sdist / include dirs).
* GNU ld "cannot find F.o: No such file or directory": an object the build did not produce where it links.
* torch.utils.cpp_extension's "Error compiling objects / building extension": stage compile, ahead of pip.
* Docker "could not select device driver": no NVIDIA Container Toolkit for `--gpus`.
* cudaErrorSystemNotReady (802) and NCCL's NVLS transport: the GPU's own system software (Fabric Manager).

Real output produced here (gcc, g++, GNU ld run live; a torch C++ extension built with
``torch.utils.cpp_extension.load`` and ``pip install`` of an sdist kept as fixtures, paths redacted) and train
logs of the thread corpus.
"""

from __future__ import annotations

import ctypes
import glob
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, top3, train_log_path

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "build_families"

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="gcc/g++ missing")


def _run(cmd: list[str], cwd: Path) -> tuple[object, str]:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0, p.stdout + p.stderr
    out = p.stdout + p.stderr
    return diagnose(texts={"stderr": out}, exit_code=p.returncode), out


def _train(name: str):
    import json

    path = train_log_path(name)
    label = json.loads(path.with_suffix(".json").read_text())
    return diagnose([str(path)], exit_code=label.get("exit_code")), label


def _first(diag) -> tuple[str, str]:
    return diag.root_causes[0].rule, diag.root_causes[0].category


# --- gcc: who provides the missing header ---------------------------------------------------------------------


@needs_gcc
def test_pythons_own_header_missing_is_the_installation(tmp_path: Path):
    """gcc without Python's include folder: `Python.h: No such file or directory`. The interpreter's
    development files (python3.X-dev) are the installation; a bare C build is no torch.compile run."""
    (tmp_path / "ext.c").write_text("#include <Python.h>\nint f(void) { return 0; }\n")
    diag, out = _run(["gcc", "-c", "ext.c", "-o", "ext.o"], tmp_path)
    assert "fatal error: Python.h: No such file or directory" in out
    assert _first(diag) == ("build.python_headers_missing", "environment")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")
    assert not fired(diag, "build.missing_header") and not fired(diag, "torch.compile_toolchain")
    assert diag.profile.stack != "pytorch"
    assert "Python.h" in diag.root_causes[0].summary


@needs_gcc
def test_a_cuda_toolkit_header_missing_is_the_installation(tmp_path: Path):
    """g++ without the CUDA toolkit's include folder on its path: cuda_runtime.h is the toolkit's."""
    (tmp_path / "k.cpp").write_text("#include <cuda_runtime.h>\nint main() { return 0; }\n")
    diag, out = _run(["g++", "-c", "k.cpp", "-o", "k.o"], tmp_path)
    assert "cuda_runtime.h: No such file or directory" in out
    assert _first(diag) == ("build.cuda_headers_missing", "environment")
    assert diag.profile.stage == "compile"
    assert not fired(diag, "py.file_not_found")


def test_a_cuda_library_header_missing_in_a_train_log():
    """DeepSpeed's op build asking for curand_kernel.h (the toolkit's cuRAND headers) — the environment."""
    diag, label = _train("environment/ds_cpu_adam_curand_header_missing")
    assert label["category"] == "environment"
    assert _first(diag) == ("build.cuda_headers_missing", "environment")
    assert diag.profile.stage == label["stage"] == "compile"


def test_a_header_the_packages_sdist_does_not_ship():
    """Real `pip install` of an sdist whose setup.py points its include dirs at a vendored folder the sdist
    does not contain: gcc, run by setuptools in pip's build tree (pip-req-build-*), cannot find the vendored
    header. The package's build is at fault, pip only reports it (pip.build_failed steps back)."""
    text = (DATA / "pip_sdist_vendored_header_missing.log").read_text()
    assert "/pip-req-build-" in text and "fatal error: fastlib/fastlib.h: No such file or directory" in text
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert _first(diag) == ("build.package_header_missing", "library")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")
    assert not fired(diag, "pip.build_failed") and not fired(diag, "build.missing_header")
    assert "environment" in top3(diag)


def test_a_submodule_header_the_binding_build_does_not_point_at():
    """tiny-cuda-nn's torch binding built by pip: its own header includes cutlass/cutlass.h, which its setup.py
    include dirs did not reach (the thread's fix was in the package's build files)."""
    diag, label = _train("environment/tcnn_torch_binding_cutlass_include_missing")
    assert label["category"] == "library"
    assert _first(diag) == ("build.package_header_missing", "library")
    assert diag.profile.stage == "compile"
    assert not fired(diag, "py.file_not_found")


@needs_gcc
def test_a_missing_header_outside_pips_build_tree_stays_the_generic_rule(tmp_path: Path):
    """The same gcc message from a build not run by pip (relative paths, no pip-req-build-*) says nothing about
    whose build it is: the generic rule, the installation first."""
    inc = tmp_path / "include" / "mylib"
    inc.mkdir(parents=True)
    (inc / "api.h").write_text("#pragma once\n#include <vendored_dep/core.h>\n")
    (tmp_path / "main.cpp").write_text("#include <mylib/api.h>\nint main() { return 0; }\n")
    diag, out = _run(["g++", "-Iinclude", "-c", "main.cpp", "-o", "main.o"], tmp_path)
    assert "fatal error: vendored_dep/core.h: No such file or directory" in out
    assert fired(diag, "build.missing_header") and not fired(diag, "build.package_header_missing")
    assert diag.root_causes[0].category == "environment"
    assert not fired(diag, "py.file_not_found")


def test_a_frameworks_header_missing_stays_the_installation():
    """vllm-ascend's CMake build asking for torch_npu's headers: an installed framework's headers."""
    diag, label = _train("ascend/pta_build_vllm_ascend_C_missing_torch_npu_header")
    assert label["category"] == "environment"
    assert not fired(diag, "build.package_header_missing")
    assert diag.root_causes[0].category == "environment"


# --- GNU ld: an input object that is not there ----------------------------------------------------------------


@needs_gcc
def test_the_linker_missing_an_object_file(tmp_path: Path):
    """GNU ld asked to link objects that were never produced: `cannot find build/temp/a.o: No such file or
    directory` (not `-lNAME`), then collect2. The build's own steps, not a path the program opened."""
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-c", "m.c", "-o", "m.o"], cwd=tmp_path, check=True, timeout=60)
    diag, out = _run(["g++", "-shared", "m.o", "build/temp/a.o", "build/temp/b.o", "-o", "x.so"], tmp_path)
    assert "ld: cannot find build/temp/a.o: No such file or directory" in out
    assert _first(diag) == ("build.linker_missing_input", "library")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")
    assert not fired(diag, "py.file_not_found") and not fired(diag, "build.linker_missing_library")
    assert "build/temp/a.o" in diag.root_causes[0].summary


def test_prebuilt_ops_whose_objects_the_build_did_not_produce():
    """DeepSpeed's op pre-build linking objects its ninja switch left unbuilt (fixed in DeepSpeed's build)."""
    diag, label = _train("environment/deepspeed_prebuild_fused_adam_ld_missing_objects")
    assert label["category"] == "library"
    assert _first(diag) == ("build.linker_missing_input", "library")
    assert (diag.profile.type, diag.profile.stage) == (label["type"], label["stage"]) == ("runtime_error", "compile")


# --- torch.utils.cpp_extension and pip: the stage of a build --------------------------------------------------


def test_a_torch_extension_built_with_cpp_extension_load_fails_at_compile():
    """Real torch.utils.cpp_extension.load (CPU, ninja) of a source including a header that is not there:
    ninja's FAILED line, g++'s fatal error, ninja's `build stopped`, then `RuntimeError: Error building
    extension`. The stage is the compile step."""
    text = (DATA / "torch_cpp_extension_load_missing_header.log").read_text()
    assert "Error building extension 'faildiag_ext'" in text and "ninja: build stopped" in text
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, "build.extension_compile_failed") and fired(diag, "build.missing_header")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")
    assert "environment" in top3(diag)


def test_an_extension_build_under_pip_is_the_compile_stage():
    """flash-attn built by pip with a CUDA toolkit too old for it: torch's `Error compiling objects for
    extension` is the compile step; pip's `Failed building wheel` is its report (stage startup) and must not
    decide the stage."""
    diag, label = _train("environment/flash_attn_build_cuda115_too_old")
    assert fired(diag, "build.extension_compile_failed") and fired(diag, "pip.build_failed")
    assert diag.profile.stage == label["stage"] == "compile"
    assert diag.root_causes[0].category == label["category"] == "environment"


# --- Docker's GPU request ----------------------------------------------------------------------------------------


def test_docker_gpus_without_the_nvidia_container_toolkit():
    diag, label = _train("environment/docker_gpu_no_nvidia_container_toolkit")
    assert (
        'could not select device driver ""'
        in train_log_path("environment/docker_gpu_no_nvidia_container_toolkit").read_text()
    )
    assert _first(diag) == ("docker.gpu_driver_unavailable", "environment")
    assert (diag.profile.type, diag.profile.stage) == (label["type"], label["stage"]) == ("runtime_error", "startup")
    assert any("nvidia-ctk" in h for h in diag.root_causes[0].fix_hints)


# --- CUDA's system state and NCCL's NVLS ---------------------------------------------------------------------------


def _cudart() -> ctypes.CDLL | None:
    for path in sorted(glob.glob("/usr/local/cuda*/lib64/libcudart.so*")):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def test_cudart_names_802_as_the_rule_reads_it():
    """The CUDA runtime's own strings for 802 (read from libcudart where a toolkit is installed)."""
    lib = _cudart()
    if lib is None:
        pytest.skip("no libcudart here")
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    lib.cudaGetErrorName.restype = ctypes.c_char_p
    text = f"test: Test CUDA failure common.cu:1 '{lib.cudaGetErrorString(802).decode()}'\n"
    assert lib.cudaGetErrorName(802) == b"cudaErrorSystemNotReady"
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert _first(diag) == ("cuda.err.system_not_ready", "backend")


def test_system_not_yet_initialized_is_the_fabric_manager_not_running():
    """nccl-tests on an 8-GPU NVSwitch server: 'system not yet initialized' (cudaErrorSystemNotReady); the
    driver daemon it needs (nvidia-fabricmanager) was not running: the GPU's system software, the backend."""
    diag, label = _train("distributed/nccl_tests_system_not_yet_initialized_fabricmanager")
    assert label["category"] == "backend"
    assert diag.root_causes[0].id == "backend.driver_daemon_not_running"
    assert (diag.profile.type, diag.profile.stage) == ("backend", "startup")
    assert "environment" in top3(diag)  # a Fabric Manager of another version than the driver stays a hypothesis


@pytest.mark.parametrize(
    "name",
    [
        "distributed/nccl_nvls_invalid_argument_fabricmanager",
        "distributed/nccl_nvls_invalid_argument_fabricmanager_restart",
    ],
)
def test_a_cuda_failure_in_ncclsnvls_transport_is_the_fabric_state(name: str):
    """Two threads, one NCCL message family: `transport/nvls.cc:N NCCL WARN Cuda failure 'invalid argument'`
    after the Fabric Manager was restarted without a GPU reset. NVLS multicast set-up, the backend."""
    diag, label = _train(name)
    assert label["category"] == "backend"
    assert _first(diag) == ("nccl.nvls_setup_failed", "backend")
    assert (diag.profile.type, diag.profile.stage) == ("communication", "startup")
    assert any("NCCL_NVLS_ENABLE=0" in h for h in diag.root_causes[0].fix_hints)


# --- setuptools' compiler driver under pip ------------------------------------------------------------------------


def test_a_source_build_without_a_c_compiler():
    """Real `pip install` of an sdist with a C extension on a PATH without gcc: setuptools' spawn raises
    `[Errno 2] No such file or directory: 'gcc'`. The missing file is the compiler: the installation, not a
    path of the program, and the compile step."""
    text = (DATA / "pip_sdist_no_c_compiler.log").read_text()
    assert "No such file or directory: 'gcc'" in text
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert _first(diag) == ("build.compiler_not_found", "environment")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")
    assert not fired(diag, "py.file_not_found") and not fired(diag, "pip.build_failed")
    assert any("build-essential" in h for h in diag.root_causes[0].fix_hints)


def test_a_file_that_is_not_a_compiler_stays_a_missing_file():
    """The same errno for a data file is the program's path, not a compiler."""
    text = "FileNotFoundError: [Errno 2] No such file or directory: 'data/train-cc.json'\n"
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, "py.file_not_found") and not fired(diag, "build.compiler_not_found")


def test_a_c_compile_error_under_pip_is_the_compile_stage():
    """Real `pip install` of an sdist whose C source does not compile: gcc's `error:`, then setuptools'
    `error: Command '['gcc', ...]' returned non-zero exit status 1.`, then pip's report. The compile step
    decides the stage; pip's causes stay the leading ones (the compiler's first error is the detail)."""
    text = (DATA / "pip_sdist_c_compile_error.log").read_text()
    assert "returned non-zero exit status 1." in text and "error: subprocess-exited-with-error" in text
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(diag, "build.compiler_command_failed") and fired(diag, "pip.build_failed")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")
    assert set(top3(diag)[:2]) == {"environment", "library"}
