"""The environment lock (``env.lock.json``): what was installed and set when a run failed.

Why a lock: half of real training failures are environment mismatches (torch built for a newer CUDA than the
driver, torchvision from another torch release, numpy 2 under an extension built for numpy 1). A diagnosis can
only call those ``direct`` evidence when it can read what the machine held, and it can only say "torch
2.5.1 → 2.6.0 since the last green run" when the lock of that run was kept. So:

* ``build_lock`` gathers the facts. Every probe is optional, bounded in time and guarded: a missing tool is
  recorded as ``{"status": "missing"}``, a slow one as ``{"status": "timeout"}``, a broken one as
  ``{"status": "error", "error": ...}``; ``build_lock`` itself never raises. Subprocess probes (``git``,
  ``nvidia-smi``, ``npu-smi``) run in parallel so the lock costs the slowest probe, not their sum.
* Heavy ML packages are never imported just to be listed (``import torch`` costs 1-2 s): versions come from
  package metadata, and a package is imported only when this process already imported it or when
  ``include`` asks for it (then the lock also holds its CUDA/cuDNN/NCCL build facts).
* Everything that leaves the machine goes through :mod:`pytest_faildiag.redact`.
* ``diff_locks`` / ``format_diff`` say what changed between two locks; ``read_readiness`` reads the
  snapshot of the public readiness-agent (MindSpore / PTA) when a workspace holds one.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..fsio import atomic_write
from ..redact import redact_env, redact_obj, redact_text
from ..store import LAST_GREEN_LOCK, read_last_green, write_last_green

SCHEMA = "faildiag.lock/1"
LOCK_FILENAME = "env.lock.json"

# import name -> distribution name (normalised) of the ML stack the lock reports on.
ML_PACKAGES: dict[str, str] = {
    "torch": "torch",
    "torch_npu": "torch-npu",
    "torchvision": "torchvision",
    "torchaudio": "torchaudio",
    "mindspore": "mindspore",
    "jax": "jax",
    "jaxlib": "jaxlib",
    "numpy": "numpy",
}

# Environment variables worth keeping: the ML runtimes' knobs, the launcher's topology, CI identity.
ENV_PREFIXES = (
    "CUDA_",
    "CUDNN_",
    "NCCL_",
    "NVIDIA_",
    "HCCL_",
    "ASCEND_",
    "TORCH_",
    "PYTORCH_",
    "TORCHINDUCTOR_",
    "MS_",
    "XLA_",
    "JAX_",
    "TPU_",
    "HF_",
    "HUGGINGFACE_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "OMP_",
    "MKL_",
    "GLOO_",
    "MASTER_",
    "SLURM_",
    "CUBLAS_",
    "TF_",
    "ACCELERATE_",
    "DS_",
    "NPU_",
    "ACL_",
    "GE_",
    "RANK_",
    "GITHUB_",
    "CI_",
    "BUILDKITE_",
    "RUNNER_",
    "PYTHON",
    "CONDA_",
    "KMP_",
    "OPENBLAS_",
    "TE_",
    "NVTE_",
    "WANDB_",
)
ENV_NAMES = frozenset(
    {
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "NODE_RANK",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "PATH",
        "VIRTUAL_ENV",
        "CI",
        "GITLAB_CI",
        "JENKINS_URL",
        "TRAVIS",
        "CIRCLECI",
        "TF_BUILD",
        "LANG",
        "LC_ALL",
        "TZ",
        "HOME",
        "USER",
        "SHELL",
        "DEVICE_ID",
        "VISIBLE_DEVICES",
    }
)
# Values that change on every run by design: kept in the lock, never reported as a change.
VOLATILE_ENV = frozenset(
    {
        "GITHUB_RUN_ID",
        "GITHUB_RUN_NUMBER",
        "GITHUB_RUN_ATTEMPT",
        "GITHUB_SHA",
        "GITHUB_JOB",
        "GITHUB_ACTION",
        "GITHUB_ENV",
        "GITHUB_OUTPUT",
        "GITHUB_STATE",
        "GITHUB_PATH",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_TRIGGERING_ACTOR",
        "CI_JOB_ID",
        "CI_PIPELINE_ID",
        "CI_COMMIT_SHA",
        "CI_COMMIT_SHORT_SHA",
        "CI_JOB_URL",
        "CI_PIPELINE_URL",
        "CI_JOB_STARTED_AT",
        "CI_PIPELINE_IID",
        "BUILDKITE_BUILD_ID",
        "BUILDKITE_JOB_ID",
        "BUILDKITE_BUILD_NUMBER",
        "BUILDKITE_COMMIT",
        "RUNNER_TRACKING_ID",
        "MASTER_PORT",
        "TORCHELASTIC_RUN_ID",
        "SLURM_JOB_ID",
        "SLURM_JOBID",
        "SLURM_STEP_ID",
        "SLURM_TASK_PID",
        "SLURM_SUBMIT_DIR",
    }
)
MAX_ENV_VALUE = 2000
ASCEND_ROOTS = ("/usr/local/Ascend", "/usr/local/Ascend/ascend-toolkit")


class LockError(ValueError):
    """An env lock file that cannot be read: missing, not JSON, or not a faildiag lock."""


# ----------------------------------------------------------------------------------------------- probes


def _probe(probes: dict[str, Any], name: str, fn: Callable[[], Any], default: Any = None) -> Any:
    """Run one probe, recording its outcome and time in ``probes``; never raises."""
    start = time.perf_counter()
    try:
        value = fn()
        status = value.get("status", "ok") if isinstance(value, dict) else "ok"
        probes[name] = {"status": status, "seconds": round(time.perf_counter() - start, 4)}
        return value
    except Exception as exc:  # a probe must never cost the lock
        probes[name] = {
            "status": "error",
            "error": f"{type(exc).__name__}: {exc}"[:300],
            "seconds": round(time.perf_counter() - start, 4),
        }
        return default if default is not None else {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:300]}


def _run_cmd(argv: list[str], timeout: float, cwd: str | None = None) -> dict[str, Any]:
    """Run a command bounded by ``timeout``: ``{"status": ok|missing|timeout|error, "stdout", ...}``.

    On timeout the child is killed and, if it does not die within half a second (``nvidia-smi`` stuck in
    uninterruptible sleep on a broken GPU does exactly that), abandoned: the lock must not hang with it."""
    exe = shutil.which(argv[0])
    if exe is None:
        return {"status": "missing", "tool": argv[0]}
    env = dict(os.environ, LC_ALL="C", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    try:
        proc = subprocess.Popen(
            [exe, *argv[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            cwd=cwd,
            env=env,
        )
    except OSError as exc:
        return {"status": "error", "tool": argv[0], "error": str(exc)[:300]}
    try:
        stdout, stderr = proc.communicate(timeout=max(0.05, timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.communicate(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass  # unkillable for now; leave it rather than block the lock
        return {"status": "timeout", "tool": argv[0], "timeout_s": timeout}
    if proc.returncode != 0:
        return {
            "status": "error",
            "tool": argv[0],
            "returncode": proc.returncode,
            "error": redact_text((stderr or stdout).strip()[-500:]),
        }
    return {"status": "ok", "stdout": stdout}


def normalize_name(name: str) -> str:
    """PEP 503 normalised distribution name, so ``Torch_NPU`` and ``torch-npu`` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def probe_packages() -> dict[str, str]:
    """Installed distributions -> version, from metadata only (no pip subprocess: that costs seconds).

    The first distribution found on ``sys.path`` wins, as it does for ``import``."""
    from importlib import metadata

    out: dict[str, str] = {}
    for dist in metadata.distributions():
        try:
            name, version = _name_and_version(dist)
            if not name:
                continue
            key = normalize_name(name)
            if key not in out:
                out[key] = str(version)
        except Exception:  # one broken .dist-info must not hide the others
            continue
    return dict(sorted(out.items()))


_HEADER_NAME = re.compile(r"[\x21-\x39\x3b-\x7e]+")  # what email's parser takes for a header's name
_LINE_END = re.compile(r"\r\n|\r|\n")  # email's line ends (not str.splitlines's longer list)
_MAX_HEADER_LINES = 1000


def _name_and_version(dist: Any) -> tuple[str | None, str | None]:
    """``dist.metadata["Name"]`` and ``dist.version``, read from the metadata file's header lines. Why: those
    two parse the whole file with the ``email`` package, description included, each time (twice per
    distribution): most of the lock's cost in every cold ``faildiag run``. The file is the one
    ``Distribution.metadata`` reads; a header block this does not read as plainly as ``email`` would (a
    folded line, no Name) is left to ``email``."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or dist.read_text("")
    found: dict[str, str] = {}
    lines = _LINE_END.split(text or "", maxsplit=_MAX_HEADER_LINES)
    for line in lines[:-1]:  # the last item is the rest of the file
        if not line:
            break  # the end of the headers
        key, sep, value = line.partition(":")
        if line[0] in " \t" or not sep or not _HEADER_NAME.fullmatch(key):
            return dist.metadata["Name"], dist.version  # a folded header, or a line email reads otherwise
        key = key.lower()
        if key in ("name", "version") and key not in found:
            found[key] = value.lstrip(" \t")
    else:
        return dist.metadata["Name"], dist.version  # no end of the headers in sight
    if "name" not in found or "version" not in found:
        return dist.metadata["Name"], dist.version
    return found["name"], found["version"]


def probe_python() -> dict[str, Any]:
    """The interpreter: version, implementation, where it lives and whether it is a virtual environment."""
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
    }


def probe_platform() -> dict[str, Any]:
    """The OS and machine, plus the C library (wheels are built against a glibc floor)."""
    libc = platform.libc_ver()
    return {
        "system": platform.system(),
        "release": platform.release(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "libc": f"{libc[0]} {libc[1]}".strip() or None,
    }


def _torch_cuda_from_tag(version: str | None) -> str | None:
    """``2.5.1+cu121`` -> ``12.1``: the CUDA a torch wheel was built for, without importing torch."""
    m = re.search(r"\+cu(\d+)(\d)\b", version or "")
    return f"{m[1]}.{m[2]}" if m else None


def _major_minor(version: str | None) -> str | None:
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return f"{m[1]}.{m[2]}" if m else None


def _wanted(include: Iterable[str] | str | bool | None) -> set[str]:
    if include is True or include == "*" or include == "all":
        return set(ML_PACKAGES)
    if not include or isinstance(include, bool):
        return set()
    if isinstance(include, str):
        include = [include]
    return {str(x).replace("-", "_").lower() for x in include}


def probe_ml(packages: dict[str, str], include: Iterable[str] | str | bool | None = None) -> dict[str, Any]:
    """The ML stack: metadata versions always; build facts (CUDA, cuDNN, NCCL, devices) only for packages
    this process already imported or ``include`` names, because importing torch costs seconds."""
    wanted = _wanted(include)
    out: dict[str, Any] = {}
    for module, dist in ML_PACKAGES.items():
        version = packages.get(dist)
        if version is None:
            continue
        info: dict[str, Any] = {"version": version, "source": "metadata"}
        if module == "torch":
            info["cuda_from_wheel"] = _torch_cuda_from_tag(version) or _major_minor(
                packages.get("nvidia-cuda-runtime-cu12")
                or packages.get("nvidia-cuda-runtime-cu11")
                or packages.get("nvidia-cuda-runtime")
            )
        if module in sys.modules or module in wanted:
            try:
                info.update(_import_facts(module))
                info["source"] = "import"
            except (Exception, SystemExit) as exc:  # a broken install (ImportError, OSError on .so) is a fact
                info["import_error"] = redact_text(f"{type(exc).__name__}: {exc}")[:500]
        out[module] = info
    if "torch" in out and "cuda_from_wheel" in out["torch"] and out["torch"]["cuda_from_wheel"] is None:
        del out["torch"]["cuda_from_wheel"]
    return out


def _import_facts(module: str) -> dict[str, Any]:
    """Facts that need the package imported. Each attribute is guarded: builds differ in what they have."""
    import importlib
    import warnings

    with warnings.catch_warnings():  # "Failed to initialize NumPy" and friends are not the lock's business
        warnings.simplefilter("ignore")
        mod = importlib.import_module(module)
    facts: dict[str, Any] = {
        "imported_version": str(getattr(mod, "__version__", "") or "") or None,
        "path": getattr(mod, "__file__", None),
    }

    def grab(key: str, fn: Callable[[], Any]) -> None:
        try:
            value = fn()
            facts[key] = value if isinstance(value, str | int | float | bool | type(None)) else str(value)
        except Exception as exc:
            facts[key + "_error"] = f"{type(exc).__name__}: {exc}"[:200]

    if module == "torch":
        grab("cuda", lambda: mod.version.cuda)
        grab("hip", lambda: getattr(mod.version, "hip", None))
        grab("git_version", lambda: getattr(mod.version, "git_version", None))
        grab("cudnn", lambda: mod.backends.cudnn.version() if mod.backends.cudnn.is_available() else None)
        grab("nccl", lambda: _nccl_version(mod))
        grab("cuda_available", lambda: bool(mod.cuda.is_available()))
        grab("cuda_device_count", lambda: int(mod.cuda.device_count()) if mod.version.cuda else 0)
        grab("cxx11_abi", lambda: bool(mod.compiled_with_cxx11_abi()))
    elif module == "torch_npu":
        grab("cann", lambda: getattr(getattr(mod, "version", None), "cann", None))
        grab("npu_available", lambda: bool(sys.modules["torch"].npu.is_available()))
        grab("npu_device_count", lambda: int(sys.modules["torch"].npu.device_count()))
    elif module in ("torchvision", "torchaudio"):
        grab("cuda", lambda: getattr(getattr(mod, "version", None), "cuda", None))
    elif module == "mindspore":
        grab("device_target", lambda: mod.get_context("device_target"))
    return facts


def _nccl_version(torch: Any) -> str | None:
    if not torch.version.cuda:
        return None
    v = torch.cuda.nccl.version()
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


_GPU_FIELDS = ("index", "name", "driver_version", "memory.total", "memory.used", "pci.bus_id")


def probe_nvidia(timeout: float) -> dict[str, Any]:
    """Driver, the CUDA version the driver supports, and devices, from ``nvidia-smi``."""
    if shutil.which("nvidia-smi") is None:
        return {"status": "missing", "tool": "nvidia-smi"}
    q = _run_cmd(["nvidia-smi", f"--query-gpu={','.join(_GPU_FIELDS)}", "--format=csv,noheader,nounits"], timeout)
    if q["status"] != "ok":
        return q
    devices = []
    for line in q["stdout"].splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < len(_GPU_FIELDS):
            continue
        devices.append(
            {
                "index": _to_int(parts[0]),
                "name": parts[1],
                "driver_version": parts[2],
                "memory_total_mib": _to_int(parts[3]),
                "memory_used_mib": _to_int(parts[4]),
                "pci_bus_id": parts[5],
            }
        )
    out: dict[str, Any] = {
        "status": "ok",
        "driver_version": devices[0]["driver_version"] if devices else None,
        "cuda_version": None,
        "device_count": len(devices),
        "devices": devices,
    }
    head = _run_cmd(["nvidia-smi"], timeout)  # the CUDA version only appears in the banner
    if head["status"] == "ok":
        m = re.search(r"CUDA Version:\s*([\d.]+)", head["stdout"])
        out["cuda_version"] = m[1] if m else None
    return out


def _to_int(text: str) -> int | None:
    try:
        return int(float(text))
    except ValueError:
        return None


def probe_cann(roots: Iterable[str] = ASCEND_ROOTS) -> dict[str, Any]:
    """The CANN toolkit version from its install files (no tool to run: the files are the truth)."""
    candidates: list[Path] = []
    home = os.environ.get("ASCEND_TOOLKIT_HOME") or os.environ.get("ASCEND_HOME_PATH")
    bases = [Path(home)] if home else []
    for root in roots:
        bases += [Path(root) / "ascend-toolkit" / "latest", Path(root) / "latest", Path(root)]
    for base in bases:
        if not base.is_dir():
            continue
        candidates += sorted(base.glob("*/ascend_toolkit_install.info")) + sorted(
            base.glob("ascend_toolkit_install.info")
        )
        candidates += sorted(base.glob("version.cfg")) + sorted(base.glob("*/version.cfg"))
        candidates += sorted(base.glob("*/version.info"))
    if not candidates:
        return {"status": "missing"}
    for path in candidates:
        try:
            text = path.read_text(errors="replace")[:20000]
        except OSError:
            continue
        m = re.search(r"(?im)^\s*(?:version|Version)\s*=\s*\[?([\w.\-]+)", text) or re.search(
            r"(?i)\[?(\d+\.\d+\.[\w.]+)\]?", text
        )
        if m:
            return {"status": "ok", "version": m[1], "source": str(path)}
    return {"status": "error", "error": "CANN install files hold no version", "source": str(candidates[0])}


def probe_npu_smi(timeout: float) -> dict[str, Any]:
    """``npu-smi info``: driver version and the NPU table, kept as a short text (its format varies)."""
    r = _run_cmd(["npu-smi", "info"], timeout)
    if r["status"] != "ok":
        return r
    text = r.pop("stdout")
    m = re.search(r"Version:\s*([\w.\-]+)", text)
    rows = re.findall(r"^\|\s*(\d+)\s+([\w\-]+)\s*\|\s*(\w+)", text, re.M)
    return {
        "status": "ok",
        "version": m[1] if m else None,
        "devices": [{"index": int(i), "name": n, "health": h} for i, n, h in rows],
        "text": redact_text(text[:4000]),
    }


def probe_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The relevant environment variables, redacted (secret-named ones masked, the rest scrubbed)."""
    environ = dict(os.environ if environ is None else environ)
    keep = {k: v for k, v in environ.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}
    keep = {k: (v if len(v) <= MAX_ENV_VALUE else v[:MAX_ENV_VALUE] + "…[trimmed]") for k, v in keep.items()}
    return dict(sorted(redact_env(keep).items()))


def probe_resources(cwd: str) -> dict[str, Any]:
    """CPU, memory, disk of ``cwd`` and ``/dev/shm`` (DataLoader workers pass tensors through it)."""
    out: dict[str, Any] = {"cpu_count": os.cpu_count()}
    try:
        out["cpu_affinity"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    try:
        import psutil

        vm = psutil.virtual_memory()
        out["memory"] = {"total": vm.total, "available": vm.available}
    except Exception as exc:
        out["memory"] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:200]}
    out["disk"] = _disk(cwd)
    out["shm"] = _disk("/dev/shm") if os.path.isdir("/dev/shm") else {"status": "missing"}
    return out


def _disk(path: str) -> dict[str, Any]:
    try:
        du = shutil.disk_usage(path)
    except OSError as exc:
        return {"status": "error", "path": path, "error": str(exc)[:200]}
    return {"path": path, "total": du.total, "free": du.free}


def probe_git(cwd: str, timeout: float) -> dict[str, Any]:
    """Revision, branch and dirty state of the working tree, in one bounded ``git status`` call.

    ``GIT_OPTIONAL_LOCKS=0`` keeps it from taking the index lock, so it never races a concurrent git."""
    r = _run_cmd(["git", "status", "--porcelain=v2", "--branch", "--untracked-files=normal"], timeout, cwd=cwd)
    if r["status"] != "ok":
        err = r.get("error", "")
        if "not a git repository" in err.lower():
            return {"status": "not_a_repo"}
        return r
    revision = branch = None
    changed: list[str] = []
    for line in r["stdout"].splitlines():
        if line.startswith("# branch.oid "):
            revision = line.split(" ", 2)[2].strip()
        elif line.startswith("# branch.head "):
            branch = line.split(" ", 2)[2].strip()
        elif line and not line.startswith("#"):
            changed.append(line.rsplit(" ", 1)[-1] if not line.startswith("?") else line[2:])
    return {
        "status": "ok",
        "revision": None if revision in (None, "(initial)") else revision,
        "branch": None if branch == "(detached)" else branch,
        "dirty": bool(changed),
        "changed_files": len(changed),
        "changed_sample": [redact_text(p) for p in changed[:20]],
    }


# ------------------------------------------------------------------------------------------------ lock


def build_lock(
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 2.0,
    include: Iterable[str] | str | bool | None = None,
) -> dict[str, Any]:
    """Build the ``env.lock.json`` content for this machine and process; never raises.

    ``timeout`` bounds each subprocess probe (they run in parallel). ``include`` names ML packages to
    import for their build facts (``"*"``/``True`` = all installed); otherwise only the ones already
    imported are inspected and the rest are described from metadata."""
    start = time.perf_counter()
    cwd_s = str(Path(cwd or os.getcwd()).resolve())
    probes: dict[str, Any] = {}
    lock: dict[str, Any] = {"schema": SCHEMA, "created": datetime.now(UTC).isoformat(timespec="seconds"), "cwd": cwd_s}
    pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="faildiag-lock")
    try:
        fut_git = pool.submit(_probe, probes, "git", lambda: probe_git(cwd_s, timeout))
        fut_gpu = pool.submit(_probe, probes, "nvidia_smi", lambda: probe_nvidia(timeout))
        fut_npu = pool.submit(_probe, probes, "npu_smi", lambda: probe_npu_smi(timeout))
        lock["python"] = _probe(probes, "python", probe_python)
        lock["platform"] = _probe(probes, "platform", probe_platform)
        packages = _probe(probes, "packages", probe_packages, default={})
        lock["packages"] = packages if isinstance(packages, dict) else {}
        lock["ml"] = _probe(probes, "ml", lambda: probe_ml(lock["packages"], include), default={})
        lock["env"] = _probe(probes, "env", probe_env, default={})
        lock["resources"] = _probe(probes, "resources", lambda: probe_resources(cwd_s))
        lock["ascend"] = {"cann": _probe(probes, "cann", probe_cann)}
        # nvidia-smi makes two bounded calls; allow both, plus the kill grace, before giving up on it
        lock["gpu"] = _result(fut_gpu, 2 * timeout + 1.5)
        lock["ascend"]["npu_smi"] = _result(fut_npu, timeout + 1.5)
        lock["git"] = _result(fut_git, timeout + 1.5)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # never wait on a probe past its bound
    lock["probes"] = probes
    lock["duration_s"] = round(time.perf_counter() - start, 3)
    try:
        return redact_lock(lock)
    except Exception:  # pragma: no cover - redact_obj is total on JSON data; belt and braces
        return lock


def redact_lock(lock: dict[str, Any]) -> dict[str, Any]:
    """Redact a lock for writing. Package names are names, not keys of secrets (``google-auth``,
    ``keyring``, ``tokenizers`` are distributions), so only their versions are scrubbed; the rest goes
    through ``redact_obj``."""
    packages = lock.get("packages")
    out = redact_obj({k: v for k, v in lock.items() if k != "packages"})
    if isinstance(packages, dict):
        out["packages"] = {str(k): redact_text(str(v)) for k, v in packages.items()}
    return {k: out[k] for k in lock if k in out}


def _result(fut: Any, timeout: float) -> Any:
    try:
        return fut.result(timeout=timeout)
    except Exception as exc:
        return {"status": "timeout" if "Timeout" in type(exc).__name__ else "error", "error": type(exc).__name__}


def save_lock(lock: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``lock`` as JSON atomically (temp file in the same folder + ``os.replace``), redacted again on
    the way out so a hand-built dict cannot leak a secret either. Returns the path written.

    ``path`` is a file the user named (``faildiag lock --out``): the temp file is created ``O_EXCL |
    O_NOFOLLOW`` and renamed over the name, so a symlink there is replaced, never written through."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, _lock_json(lock))
    return target


def _lock_json(lock: dict[str, Any]) -> str:
    return (
        json.dumps(redact_lock(lock) if isinstance(lock, dict) else lock, indent=2, sort_keys=False, default=str) + "\n"
    )


def load_lock(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a lock written by ``save_lock``. Raises ``LockError`` (one readable line) when the file is
    missing, is not JSON, is not an object, or carries another schema."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LockError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LockError(f"{p}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LockError(f"{p}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise LockError(f"{p}: not an environment lock (JSON nested too deep)") from None
    if not isinstance(data, dict):
        raise LockError(f"{p}: a lock is a JSON object, found {type(data).__name__}")
    schema = data.get("schema")
    if schema is not None and not str(schema).startswith("faildiag.lock/"):
        raise LockError(f"{p}: not an environment lock (schema {schema!r})")
    if schema is None and "packages" not in data:
        raise LockError(f"{p}: not an environment lock (no schema, no packages)")
    return data


GREEN_FILENAME = LAST_GREEN_LOCK  # the name is the output folder's: defined in store


def save_green(out_dir: str | os.PathLike[str], lock: dict[str, Any]) -> Path:
    """Keep ``lock`` as the lock of the last passing run in ``out_dir`` (what the plugin and the run
    wrapper call after a green run), so a later failure can say what changed since. ``out_dir`` is an output
    folder: refused (``fsio.OutputFolderRefused``) when it is a symlink or others can write into it."""
    return write_last_green(out_dir, _lock_json(lock))


def load_green(out_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The last green lock kept in ``out_dir``, or ``None`` when there is none or it is unreadable
    (a missing baseline is no evidence, not an error). Read through ``store`` (bounded)."""
    return read_last_green(out_dir)


# ------------------------------------------------------------------------------------------------ diff

# (kind, label, path in the lock): scalar facts compared one by one, most telling first.
_SCALARS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("ml", "torch CUDA build", ("ml", "torch", "cuda")),
    ("ml", "torch cuDNN", ("ml", "torch", "cudnn")),
    ("ml", "torch NCCL", ("ml", "torch", "nccl")),
    ("driver", "NVIDIA driver", ("gpu", "driver_version")),
    ("driver", "driver CUDA", ("gpu", "cuda_version")),
    ("driver", "GPU count", ("gpu", "device_count")),
    ("driver", "CANN", ("ascend", "cann", "version")),
    ("driver", "npu-smi", ("ascend", "npu_smi", "version")),
    ("python", "Python", ("python", "version")),
    ("python", "Python executable", ("python", "executable")),
    ("platform", "OS", ("platform", "platform")),
    ("platform", "libc", ("platform", "libc")),
    ("resources", "CPU count", ("resources", "cpu_count")),
    ("resources", "/dev/shm size", ("resources", "shm", "total")),
    ("git", "git revision", ("git", "revision")),
    ("git", "git dirty", ("git", "dirty")),
)
_ML_DISTS = frozenset(ML_PACKAGES.values())


def _get(d: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def diff_locks(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """What changed from ``old`` to ``new``, ML stack and drivers first, then packages, env and git.

    Each change is ``{"kind", "name", "old", "new", "change": "added|removed|changed"}``; ``old``/``new``
    is ``None`` when absent. Per-run values (free memory, CI run ids, timestamps) are not changes."""
    old = old if isinstance(old, dict) else {}
    new = new if isinstance(new, dict) else {}
    changes: list[dict[str, Any]] = []

    def add(kind: str, name: str, a: Any, b: Any) -> None:
        if a == b:
            return
        change = "added" if a is None else "removed" if b is None else "changed"
        changes.append({"kind": kind, "name": name, "old": a, "new": b, "change": change})

    old_pk = old.get("packages") if isinstance(old.get("packages"), dict) else {}
    new_pk = new.get("packages") if isinstance(new.get("packages"), dict) else {}
    names = sorted(set(old_pk) | set(new_pk), key=lambda n: (n not in _ML_DISTS, n))
    ml_changes = [n for n in names if n in _ML_DISTS]
    for n in ml_changes:
        add("package", n, old_pk.get(n), new_pk.get(n))
    for kind, label, path in _SCALARS:
        a, b = _get(old, path), _get(new, path)
        if kind == "git" and (a is None or b is None):
            continue  # a lock taken outside a repo says nothing about the code
        if kind in ("ml", "driver") and (a is None or b is None) and not _probed_both(old, new, path):
            continue  # build facts known only when torch was imported: absence is not a change
        add(kind, label, a, b)
    old_gpus = [d.get("name") for d in _get(old, ("gpu", "devices")) or [] if isinstance(d, dict)]
    new_gpus = [d.get("name") for d in _get(new, ("gpu", "devices")) or [] if isinstance(d, dict)]
    if old_gpus and new_gpus and sorted(old_gpus) != sorted(new_gpus):
        add("driver", "GPU models", ", ".join(old_gpus), ", ".join(new_gpus))
    for n in names:
        if n not in _ML_DISTS:
            add("package", n, old_pk.get(n), new_pk.get(n))
    old_env = old.get("env") if isinstance(old.get("env"), dict) else {}
    new_env = new.get("env") if isinstance(new.get("env"), dict) else {}
    for k in sorted(set(old_env) | set(new_env)):
        if k not in VOLATILE_ENV:
            add("env", k, old_env.get(k), new_env.get(k))
    return changes


def _probed_both(old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> bool:
    """True when both locks looked at the fact's source (so a None on one side really means absent)."""
    if path[0] == "ml":
        return all(_get(x, ("ml", path[1], "source")) == "import" for x in (old, new))
    if path[0] == "gpu":
        return all(_get(x, ("gpu", "status")) in ("ok", "missing") for x in (old, new))
    if path[0] == "ascend":
        return all(_get(x, (*path[:2], "status")) in ("ok", "missing") for x in (old, new))
    return True


def format_change(c: dict[str, Any]) -> str:
    """One human line: ``torch 2.5.1 → 2.6.0``, ``+ foo 1.0 (added)``, ``env NCCL_DEBUG: unset → INFO``."""
    name, a, b = c.get("name"), c.get("old"), c.get("new")
    if c.get("kind") == "env":
        return f"env {name}: {'unset' if a is None else a} → {'unset' if b is None else b}"
    if c.get("kind") == "package":
        if a is None:
            return f"+ {name} {b} (added)"
        if b is None:
            return f"- {name} {a} (removed)"
    if c.get("kind") == "git" and name == "git revision":
        a, b = (str(x)[:12] if x else x for x in (a, b))
    return f"{name} {'none' if a is None else a} → {'none' if b is None else b}"


def format_diff(changes: list[dict[str, Any]], *, limit: int | None = None) -> list[str]:
    """Human lines for ``diff_locks`` output; with ``limit``, the rest is summarised in one line."""
    lines = [format_change(c) for c in changes]
    if limit is not None and len(lines) > limit:
        lines = lines[:limit] + [f"… and {len(lines) - limit} more changes"]
    return lines


# ------------------------------------------------------------------------------------------- readiness

READINESS_FILES = ("meta/readiness-verdict.json", "report.json", "meta/env.json")
_READINESS_SUBDIRS = ("", "out", "readiness-output", "readiness", ".readiness", "readiness-agent")


def _read_json(path: Path) -> Any:
    try:
        if path.is_file() and path.stat().st_size < 20_000_000:
            return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return None
    return None


def read_readiness(directory: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read a readiness-agent snapshot (MindSpore / PTA pre-run certification) from ``directory`` or a
    usual output folder below it (``out/``, ``readiness-output/``). ``None`` when there is none.

    Shape assumed from the public readiness-agent skill: ``meta/readiness-verdict.json`` holds the verdict
    (``status`` READY|WARN|BLOCKED, ``can_run``, ``target``, ``summary``, ``blockers``/``warnings`` as text,
    ``blockers_detailed`` with ``id``/``category``/``summary``, ``checks`` with ``id`` and ``status``
    ok|warn|block|skipped, ``evidence_level``); ``report.json`` is a shared envelope (``skill``:
    ``readiness-agent``, ``status`` success|partial|failed, ``run_id``, ``env_ref``) that may also carry the
    verdict fields; ``meta/env.json`` is an environment snapshot of unknown shape. Unknown keys are kept out
    of the way; missing keys are no evidence (``None`` / empty lists), never an error."""
    base = Path(directory)
    for sub in _READINESS_SUBDIRS:
        root = base / sub if sub else base
        verdict = _read_json(root / "meta" / "readiness-verdict.json")
        report = _read_json(root / "report.json")
        is_readiness_report = isinstance(report, dict) and (
            str(report.get("skill", "")).startswith("readiness")
            or "can_run" in report
            or str(report.get("schema_version", "")).startswith("readiness-agent")
        )
        if not isinstance(verdict, dict) and not is_readiness_report:
            continue
        verdict = verdict if isinstance(verdict, dict) else {}
        report = report if is_readiness_report else {}
        env = _read_json(root / "meta" / "env.json")
        return redact_obj(_normalise_readiness(root, verdict, report, env if isinstance(env, dict) else None))
    return None


def _normalise_readiness(
    root: Path, verdict: dict[str, Any], report: dict[str, Any], env: dict[str, Any] | None
) -> dict[str, Any]:
    def pick(key: str) -> Any:
        v = verdict.get(key)
        return v if v is not None else report.get(key) if key != "status" else None

    status = verdict.get("status")
    if status is None and str(report.get("status", "")).upper() in ("READY", "WARN", "BLOCKED"):
        status = report.get("status")
    checks = [c for c in (pick("checks") or []) if isinstance(c, dict)] if isinstance(pick("checks"), list) else []
    norm_checks = [
        {
            "id": str(c.get("id") or c.get("name") or "?"),
            "status": str(c.get("status") or "unknown").lower(),
            "summary": str(c.get("summary") or c.get("message") or ""),
        }
        for c in checks
    ]
    detailed = pick("blockers_detailed") if isinstance(pick("blockers_detailed"), list) else []
    blockers = [
        {"id": str(b.get("id") or ""), "category": b.get("category"), "summary": str(b.get("summary") or "")}
        for b in detailed
        if isinstance(b, dict)
    ]
    if not blockers:
        blockers = [{"id": "", "category": None, "summary": str(b)} for b in _as_list(pick("blockers"))]
    return {
        "source": str(root),
        "status": str(status).upper() if status is not None else None,
        "can_run": pick("can_run") if isinstance(pick("can_run"), bool) else None,
        "target": pick("target") if isinstance(pick("target"), str) else None,
        "summary": pick("summary") if isinstance(pick("summary"), str) else None,
        "next_action": pick("next_action") if isinstance(pick("next_action"), str) else None,
        "evidence_level": pick("evidence_level") if isinstance(pick("evidence_level"), str) else None,
        "blockers": blockers,
        "warnings": [str(w) for w in _as_list(pick("warnings"))],
        "checks": norm_checks,
        "failed_checks": [c for c in norm_checks if c["status"] in ("block", "blocked", "fail", "failed", "error")],
        "run": {
            k: report.get(k)
            for k in ("run_id", "start_time", "end_time", "status", "schema_version")
            if report.get(k) is not None
        },
        "env": env,
    }


def _as_list(v: Any) -> list[Any]:
    if isinstance(v, list):
        return v
    return [] if v in (None, "", {}) else [v]


__all__ = [
    "GREEN_FILENAME",
    "LOCK_FILENAME",
    "SCHEMA",
    "LockError",
    "build_lock",
    "diff_locks",
    "format_change",
    "format_diff",
    "load_green",
    "load_lock",
    "read_readiness",
    "redact_lock",
    "save_green",
    "save_lock",
]
