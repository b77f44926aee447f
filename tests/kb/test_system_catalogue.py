"""The system-catalogue pack (35-system-catalogue.toml): it loads cleanly, and its rules recognise failures
produced for real on this machine — errno values raised by the kernel through Python, messages of glibc's
dynamic loader (ld.so) for libraries built here with the C/C++ compiler, a signal reported by the shell,
pip's own resolver/build/PEP 668 errors run offline against local wheels, and libgomp's thread-creation
and environment errors from PyTorch's bundled OpenMP runtime."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, build_ruleset
from tests.engine.corpus_logs import train_log
from tests.kb.kb_helpers import pack_rules

PACK = "35-system-catalogue.toml"
OFFLINE_PIP = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_NO_INDEX": "1"}


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 180):
    full_env = {**os.environ, **(env or {})}
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=full_env, timeout=timeout)
    assert p.returncode != 0, p.stdout + p.stderr
    diag = diagnose(
        texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode, command=" ".join(cmd[:3])
    )
    return diag, p


def _python(tmp_path: Path, body: str, env: dict[str, str] | None = None, timeout: float = 180):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    return _run([sys.executable, str(script)], tmp_path, env, timeout)


def _fired(diag, rule_id: str) -> bool:
    return any(c.rule == rule_id for c in diag.root_causes)


def _assert(diag, rule_id: str, type_: str, category: str) -> None:
    cats = [c.category for c in diag.root_causes]
    rules = [c.rule for c in diag.root_causes]
    assert _fired(diag, rule_id), (rule_id, rules)
    assert diag.profile.type == type_, (diag.profile.type, rules)
    assert category in cats[:3], (category, cats, rules)


# --------------------------------------------------------------------------------------------- the pack


def test_it_loads_the_pack_without_a_warning():
    mine = pack_rules(PACK)
    assert len(mine) >= 40
    for r in mine:
        assert r.causes and all(c.fix_hints for c in r.causes), r.id
        assert all(len(k) >= 4 for k in r.keywords), r.id


def test_it_keeps_its_keywords_off_ordinary_log_lines():
    rs = build_ruleset(_builtin_packs())
    words = {k for r in rs.rules if r.pack == PACK for k in r.keywords}
    ordinary = [
        "Epoch 3/10: 100%|##########| 500/500 [01:02<00:00, loss=0.231, lr=3e-4]",
        "INFO:root:Saving checkpoint to /tmp/out/checkpoint-500",
        "Downloading (…)lve/main/config.json: 100%|██████████| 1.2k/1.2k",
        "Successfully installed accelerate-0.30.1 tokenizers-0.19.1",
        "Requirement already satisfied: numpy>=1.17 in ./.venv/lib/python3.11/site-packages",
        "OMP_NUM_THREADS=8 torchrun --nproc_per_node 4 train.py",
        "Building wheel for flash-attn (setup.py) ... done",
    ]
    assert not [(ln, w) for ln in ordinary for w in words if w in ln]


# --------------------------------------------------------------------------------------------- errno


def test_it_reads_a_rename_across_file_systems_as_exdev(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK) or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the temporary folder")
    diag, _ = _python(
        tmp_path,
        f"""
        import os, tempfile
        fd, src = tempfile.mkstemp(dir="/dev/shm"); os.close(fd)
        try:
            os.rename(src, {str(tmp_path / "moved")!r})
        finally:
            os.path.exists(src) and os.unlink(src)
    """,
    )
    _assert(diag, "errno.cross_device_link", "runtime_error", "model")


def test_it_reads_an_overlong_generated_file_name(tmp_path):
    diag, _ = _python(
        tmp_path,
        """
        params = {f"param_{i}": i * 0.001 for i in range(40)}
        name = "_".join(f"{k}={v}" for k, v in params.items()) + ".ckpt"
        open(name, "w")
    """,
    )
    _assert(diag, "errno.name_too_long", "runtime_error", "model")


def test_it_reads_removing_a_non_empty_folder(tmp_path):
    diag, _ = _python(
        tmp_path,
        """
        import os
        os.makedirs("out/run1/logs")
        os.rmdir("out/run1")
    """,
    )
    _assert(diag, "errno.dir_not_empty", "runtime_error", "model")


# --------------------------------------------------------------------------------------------- loader


def test_it_reads_a_missing_shared_library(tmp_path):
    diag, _ = _python(
        tmp_path,
        """
        import ctypes
        ctypes.CDLL("libfaildiag_not_installed.so.3")
    """,
    )
    _assert(diag, "loader.missing_shared_library", "runtime_error", "environment")


def test_it_reads_a_32_bit_library_loaded_into_a_64_bit_process(tmp_path):
    import struct

    if struct.calcsize("P") != 8 or not sys.platform.startswith("linux"):
        pytest.skip("needs a 64-bit Linux interpreter")
    # a minimal ELF header of class ELFCLASS32: glibc's loader checks the class before anything else
    ident = b"\x7fELF" + bytes([1, 1, 1]) + bytes(9)
    (tmp_path / "libold32.so").write_bytes(ident + struct.pack("<HHI", 3, 3, 1) + bytes(48))
    diag, p = _python(
        tmp_path,
        """
        import ctypes
        ctypes.CDLL("./libold32.so")
    """,
    )
    assert "wrong ELF class: ELFCLASS32" in p.stderr
    _assert(diag, "loader.wrong_elf_class", "runtime_error", "environment")


def test_it_reads_a_library_file_that_is_not_an_elf_object(tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc loader message")
    (tmp_path / "libpointer.so").write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 73400320\n"
    )
    diag, p = _python(
        tmp_path,
        """
        import ctypes
        ctypes.CDLL("./libpointer.so")
    """,
    )
    assert "invalid ELF header" in p.stderr
    _assert(diag, "loader.not_an_elf", "runtime_error", "environment")


def _compile(tmp_path: Path, compiler: str, name: str, source: str, suffix: str) -> Path:
    exe = shutil.which(compiler)
    if exe is None:
        pytest.skip(f"needs {compiler}")
    src = tmp_path / f"{name}{suffix}"
    src.write_text(source)
    lib = tmp_path / f"lib{name}.so"
    subprocess.run([exe, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, capture_output=True, timeout=120)
    return lib


def test_it_reads_an_extension_built_against_another_library_version(tmp_path):
    # an "extension" calling a function its host library (in another version) does not export
    _compile(
        tmp_path, "gcc", "ext", "extern int host_api_v2(int);\nint ext_entry(int x){return host_api_v2(x);}\n", ".c"
    )
    diag, p = _python(
        tmp_path,
        """
        import ctypes
        ctypes.CDLL("./libext.so")
    """,
    )
    assert "undefined symbol: host_api_v2" in p.stderr
    _assert(diag, "loader.undefined_symbol", "runtime_error", "environment")


def test_it_reads_a_cxx11_abi_mismatch_from_the_mangled_symbol(tmp_path):
    _compile(
        tmp_path,
        "g++",
        "abi",
        "#include <string>\nstd::string host_name();\nint abi_entry(){return (int)host_name().size();}\n",
        ".cc",
    )
    diag, p = _python(
        tmp_path,
        """
        import ctypes
        ctypes.CDLL("./libabi.so")
    """,
    )
    assert "B5cxx11" in p.stderr
    _assert(diag, "loader.cxx11_abi", "runtime_error", "environment")


def test_it_reads_an_illegal_instruction_reported_by_the_shell(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("needs bash")
    script = tmp_path / "job.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n")
    diag, p = _run([bash, "-c", f"'{sys.executable}' '{script}'; exit $?"], tmp_path)
    assert p.returncode == 132 and "Illegal instruction" in p.stderr
    _assert(diag, "proc.illegal_instruction", "crash", "environment")


# --------------------------------------------------------------------------------------------- pip


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as z:
        z.writestr(f"{dist}/METADATA", meta)
        z.writestr(
            f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: faildiag-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        z.writestr(f"{dist}/RECORD", "")


def _pip(tmp_path: Path, *args: str):
    # --dry-run and --no-index: nothing is installed and no network is used
    return _run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", *args], tmp_path, OFFLINE_PIP)


def test_it_reads_a_requirement_pip_cannot_find(tmp_path):
    diag, p = _pip(tmp_path, "faildiag-no-such-package==1.0")
    assert "No matching distribution found for" in p.stdout + p.stderr
    _assert(diag, "pip.no_matching_distribution", "runtime_error", "config")


def test_it_reads_conflicting_pins_as_resolution_impossible(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "fdalpha", "1.0", ("fdshared==1.0",))
    _wheel(wheels, "fdbeta", "1.0", ("fdshared==2.0",))
    _wheel(wheels, "fdshared", "1.0")
    _wheel(wheels, "fdshared", "2.0")
    diag, p = _pip(tmp_path, "--find-links", str(wheels), "fdalpha", "fdbeta")
    assert "ResolutionImpossible" in p.stdout + p.stderr
    _assert(diag, "pip.resolution_impossible", "runtime_error", "config")


def test_it_reads_a_package_that_requires_another_python(tmp_path):
    pytest.importorskip("setuptools")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "faildiag-future"
        version = "1.0"
        requires-python = ">=3.99"
    """)
    )
    diag, p = _pip(tmp_path, "--no-build-isolation", str(proj))
    assert "requires a different Python" in p.stdout + p.stderr
    _assert(diag, "pip.requires_python", "runtime_error", "environment")


def test_it_reads_a_failed_source_build(tmp_path):
    pytest.importorskip("setuptools")
    proj = tmp_path / "native"
    proj.mkdir()
    (proj / "setup.py").write_text("raise RuntimeError('this extension needs a CUDA toolkit and none was found')\n")
    diag, p = _pip(tmp_path, "--no-build-isolation", str(proj))
    assert "subprocess-exited-with-error" in p.stdout + p.stderr
    _assert(diag, "pip.build_failed", "runtime_error", "environment")


def test_it_reads_pip_refusing_an_externally_managed_python(tmp_path):
    system = Path("/usr/bin/python3")
    if not system.is_file():
        pytest.skip("no system Python")
    marker = subprocess.run(
        [
            str(system),
            "-c",
            "import sysconfig, os; print(os.path.isfile(os.path.join("
            "sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))",
        ],
        capture_output=True,
        text=True,
    )
    has_pip = subprocess.run([str(system), "-m", "pip", "--version"], capture_output=True).returncode == 0
    if marker.stdout.strip() != "True" or not has_pip:
        pytest.skip("the system Python is not marked EXTERNALLY-MANAGED (PEP 668) or has no pip")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PIP_BREAK_SYSTEM_PACKAGES")}
    env.update(OFFLINE_PIP)
    p = subprocess.run(
        [str(system), "-m", "pip", "install", "faildiag-no-such-package"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert p.returncode != 0 and "externally-managed-environment" in p.stdout + p.stderr
    diag = diagnose(texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode)
    _assert(diag, "pip.externally_managed", "runtime_error", "environment")


# --------------------------------------------------------------------------------------------- OpenMP


def _torch_gomp():
    torch = pytest.importorskip("torch")
    lib = Path(torch.__file__).parent / "lib"
    if not sys.platform.startswith("linux") or not any(p.name.startswith("libgomp") for p in lib.glob("*")):
        pytest.skip("needs a Linux torch build with its bundled libgomp")


def test_it_reads_libgomp_failing_to_create_its_threads(tmp_path):
    _torch_gomp()
    # thread stacks of 200 GiB cannot be mapped: libgomp's pool cannot start, as when a limit is reached
    script = tmp_path / "job.py"
    script.write_text(
        "import torch\ntorch.set_num_threads(4)\na = torch.randn(1024, 1024)\nprint(float((a @ a).sum()))\n"
    )
    p = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=180,
        env={**os.environ, "OMP_NUM_THREADS": "4", "OMP_STACKSIZE": "200G"},
    )
    if p.returncode == 0:
        pytest.skip("this kernel maps 200 GiB thread stacks (memory overcommit always on)")
    assert "libgomp: Thread creation failed" in p.stderr
    diag = diagnose(texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode)
    _assert(diag, "threads.creation_failed", "runtime_error", "resource")


def test_it_reads_an_invalid_openmp_setting_when_the_run_fails(tmp_path):
    _torch_gomp()
    diag, p = _python(
        tmp_path,
        """
        import torch
        a = torch.randn(256, 256)
        print(float((a @ a).sum()))
        raise SystemExit(3)
    """,
        env={"OMP_NUM_THREADS": "eight"},
    )
    assert "Invalid value for environment variable OMP_NUM_THREADS" in p.stderr
    assert _fired(diag, "omp.invalid_env_value")
    assert "config" in [c.category for c in diag.root_causes][:3]


def test_it_keeps_the_openmp_warning_quiet_when_the_run_succeeds():
    out = "libgomp: Invalid value for environment variable OMP_NUM_THREADS\nstep 100 loss 0.12\n"
    diag = diagnose(texts={"stderr.txt": out}, exit_code=0)
    assert not _fired(diag, "omp.invalid_env_value")


# --------------------------------------------------------------------------------------------- catalogue texts

# For the rules this machine cannot trigger (other OSes, GPUs, packages not installed), the message texts as the
# catalogues define them (glibc, Windows, dyld, pip, conda, nvcc, the OpenMP/OpenBLAS/MKL runtimes,
# huggingface_hub, transformers, datasets, protobuf), with their format arguments filled in.
CATALOGUE_TEXTS = {
    "errno.io_error": "OSError: [Errno 5] Input/output error: '/mnt/gcs/data/shard-0001.tar'",
    "errno.connection_timed_out": "TimeoutError: [Errno 110] Connection timed out",
    "errno.host_unreachable": "OSError: [Errno 113] No route to host",
    "errno.stale_file_handle": "OSError: [Errno 116] Stale file handle: '/nfs/ckpt/latest.pt'",
    "errno.exec_format": "OSError: [Errno 8] Exec format error: './bin/tool'",
    "errno.arg_list_too_long": "/bin/sh: 1: g++: Argument list too long",
    "loader.glibc_too_old": "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found "
    "(required by /venv/site-packages/tokenizers/tokenizers.abi3.so)",
    "loader.libstdcxx_too_old": "ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' "
    "not found (required by /opt/conda/lib/libicuuc.so.73)",
    "loader.libgl_missing": "ImportError: libGL.so.1: cannot open shared object file: No such file or directory",
    "loader.libcuda_missing": "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
    "loader.static_tls": "ImportError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static TLS block",
    "loader.windows_dll_load": "ImportError: DLL load failed while importing _C: The specified module could not be found.",
    "loader.windows_bad_exe_format": "OSError: [WinError 193] %1 is not a valid Win32 application",
    "loader.macos_dyld": "ImportError: dlopen(/x/_rinterface.so, 2): Library not loaded: @rpath/libicuuc.54.dylib",
    "loader.macos_arch": "ImportError: dlopen(/x/_C.so, 0x0002): tried: '/x/_C.so' (mach-o file, but is an "
    "incompatible architecture (have (x86_64), need (arm64e)))",
    "proc.illegal_instruction": "The TensorFlow library was compiled to use AVX instructions, but these aren't "
    "available on your machine.",
    "pip.installed_conflict_warning": "tensorflow 2.12.0 requires numpy<1.24,>=1.22, but you have numpy 1.26.4 which "
    "is incompatible.",
    "conda.unsatisfiable": "UnsatisfiableError: The following specifications were found to be incompatible with your system:",
    "conda.packages_not_found": "PackagesNotFoundError: The following packages are not available from current channels:",
    "build.nvcc_unsupported_arch": "nvcc fatal   : Unsupported gpu architecture 'compute_90'",
    "build.host_compiler_unsupported": "/usr/local/cuda/include/crt/host_config.h:132:2: error: #error -- unsupported "
    "GNU version! gcc versions later than 11 are not supported!",
    "build.msvc_missing": 'error: Microsoft Visual C++ 14.0 or greater is required. Get it with "Microsoft C++ Build Tools"',
    "build.ninja_missing": "RuntimeError: Ninja is required to load C++ extensions (pip install ninja to get it)",
    "build.extension_compile_failed": "RuntimeError: Error building extension 'fused_adam'",
    "omp.duplicate_runtime": "OMP: Error #15: Initializing libiomp5.dylib, but found libomp.dylib already initialized.",
    "omp.runtime_error": "OMP: Error #131: Thread identifier invalid.",
    "blas.openblas_memory_regions": "BLAS : Program is Terminated. Because you tried to allocate too many memory regions.",
    "mkl.runtime_load": "Intel MKL FATAL ERROR: Cannot load libmkl_avx2.so or libmkl_def.so.",
    "hub.offline_cache_miss": "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the "
    "disk cache and outgoing traffic has been disabled.",
    "hub.file_not_in_repo": "OSError: my-org/my-lora does not appear to have a file named config.json.",
    "hub.revision_or_entry_missing": "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. Revision Not "
    "Found for url: https://huggingface.co/api/models/gpt2/revision/v9.",
    "hub.rate_limited": "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/api/models/x",
    "hub.trust_remote_code": "ValueError: The repository for org/model contains custom code which must be executed to "
    "correctly load the model.",
    "datasets.scripts_removed": "RuntimeError: Dataset scripts are no longer supported, but found hover.py",
    "datasets.not_found": "FileNotFoundError: Couldn't find a dataset script at /work/my_data/my_data.py or any data "
    "file in the same directory.",
    "datasets.generation_error": "datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
    "tokenizer.class_unknown": "ValueError: Tokenizer class LLaMATokenizer does not exist or is not currently imported.",
    "hub.accelerate_required": "ValueError: Using a `device_map` or `tp_plan` requires `accelerate`. You can install it "
    "with `pip install accelerate`",
    "protobuf.descriptors_direct": "TypeError: Descriptors cannot be created directly.",
    "protobuf.runtime_older_than_gencode": "google.protobuf.runtime_version.VersionError: Detected incompatible "
    "Protobuf Gencode/Runtime versions when loading x.proto: gencode 5.28.1 "
    "runtime 5.27.2.",
}


@pytest.mark.parametrize("rule_id", sorted(CATALOGUE_TEXTS))
def test_it_matches_the_catalogue_text_of(rule_id):
    diag = diagnose(texts={"stderr.txt": CATALOGUE_TEXTS[rule_id] + "\n"}, exit_code=1)
    assert _fired(diag, rule_id), [c.rule for c in diag.root_causes]
    assert diag.root_causes[0].fix_hints


@pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH's client is not installed")
def test_it_reads_a_host_name_ssh_cannot_resolve(tmp_path):
    """A launcher reaching a node over ssh by a name that does not resolve (the .invalid top-level domain never
    does, RFC 6761), as DeepSpeed's runner does with its hostfile: the name the job gave leads, this machine's
    resolver follows; not the hub or a network outage (py.offline_hub yields to ssh's own words)."""
    diag, p = _python(
        tmp_path,
        """
        import subprocess
        subprocess.check_output("ssh -o BatchMode=yes -o ConnectTimeout=5 node-0.invalid hostname -I", shell=True)
        """,
        timeout=60,
    )
    assert "Could not resolve hostname node-0.invalid" in p.stderr, p.stderr
    first = diag.root_causes[0]
    assert first.rule == "net.ssh_host_unresolved" and "node-0.invalid" in first.summary, first
    assert [c.category for c in diag.root_causes[:2]] == ["config", "environment"]
    assert all(c.rule != "py.offline_hub" for c in diag.root_causes)


def test_train_log_a_hostfile_placeholder_ssh_cannot_resolve():
    """DeepSpeed's runner ran `ssh node-0 hostname -I` for the hostfile's placeholder name (the developers: node-0
    stands for the machine's address): the configuration."""
    diag, label = train_log("distributed/deepspeed_hostfile_placeholder_node0_ssh_unresolvable")
    assert label["category"] == "config"
    assert diag.root_causes[0].rule == "net.ssh_host_unresolved"
    assert [c.category for c in diag.root_causes[:2]] == ["config", "environment"]
