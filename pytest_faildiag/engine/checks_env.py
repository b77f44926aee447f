"""Validation checks that read the environment lock (``ctx.lock``, see ``capture/envlock.py``).

Why checks and not rules: a rule sees the log ("CUDA driver version is insufficient"); only the lock can
say *which* versions clashed (torch built for CUDA 12.8, driver for 12.2), and that turns a hypothesis into
``direct`` evidence. Each check follows ``validate.py``'s contract: ``passed`` supports the cause,
``failed`` contradicts it, ``skipped`` says why it could not run (first of all: no lock). They read only
the lock and the finding's text, never the live machine, so a stored lock from another host works too.

``CHECKS`` at the end names them (data the engine reads); importing this module imports nothing heavy.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import RootCause, ValidationCheck
from .validate import CheckContext, CheckFn, listed

GIB = 1024**3
SHM_MIN_BYTES = 1 * GIB  # below this, DataLoader workers passing batches through /dev/shm run out
SHM_FREE_MIN_BYTES = 256 * 1024**2
DISK_FREE_MIN_BYTES = 2 * GIB
DISK_FREE_MIN_FRACTION = 0.03
# CANN's documented defaults (seconds): connect 120, exec 1836.
HCCL_DEFAULTS = {"HCCL_CONNECT_TIMEOUT": 120, "HCCL_EXEC_TIMEOUT": 1836}
# torch 1.x -> (torchvision, torchaudio) minor versions; torch 2.x follows a rule (see _expected_companions).
_TORCH1_COMPANIONS = {
    (1, 13): ("0.14", "0.13"),
    (1, 12): ("0.13", "0.12"),
    (1, 11): ("0.12", "0.11"),
    (1, 10): ("0.11", "0.10"),
    (1, 9): ("0.10", "0.9"),
    (1, 8): ("0.9", "0.8"),
    (1, 7): ("0.8", "0.7"),
}
_NUMPY_ABI = re.compile(
    r"compiled using NumPy 1\.x|cannot be run in\s+NumPy 2|_ARRAY_API not found|numpy\.core\.multiarray failed to import"
    r"|numpy\.dtype size changed, may indicate binary incompatibility|module compiled against ABI version",
    re.I,
)
_WORKERS = re.compile(
    r"DataLoader worker|num_workers|shared memory|/dev/shm|Bus error|unable to write to file </torch_|"
    r"torch_shm_manager|insufficient shared memory",
    re.I,
)


def _no_lock(name: str, ctx: CheckContext) -> ValidationCheck | None:
    if not isinstance(ctx.lock, dict) or not ctx.lock:
        return ValidationCheck(name, "skipped", "no environment lock was given (run `faildiag lock`)")
    return None


def _text(finding: dict[str, Any]) -> str:
    """The failure text a check may match on: the finding's text, excerpt and matched lines."""
    parts: list[str] = []
    for key in ("text", "excerpt", "message"):
        v = finding.get(key) if isinstance(finding, dict) else None
        if isinstance(v, str):
            parts.append(v)
    lines = finding.get("lines") if isinstance(finding, dict) else None
    if isinstance(lines, list):
        parts += [x if isinstance(x, str) else str(x.get("text", "")) if isinstance(x, dict) else str(x) for x in lines]
    return "\n".join(parts)


def _ver(text: Any) -> tuple[int, ...] | None:
    m = re.match(r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(text or ""))
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def _packages(lock: dict[str, Any]) -> dict[str, str]:
    p = lock.get("packages")
    return p if isinstance(p, dict) else {}


def _section(lock: dict[str, Any], *path: str) -> dict[str, Any]:
    d: Any = lock
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None
    return d if isinstance(d, dict) else {}


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB / 10 else f"{n / 1024**2:.0f} MiB"


# ----------------------------------------------------------------------------------------------- checks


def torch_cuda_build(lock: dict[str, Any]) -> str | None:
    """The CUDA version torch was built for: from the imported module when the lock has it, else from the
    wheel's local tag (``+cu121``) or the bundled ``nvidia-cuda-runtime`` wheel."""
    torch = _section(lock, "ml", "torch")
    return torch.get("cuda") or torch.get("cuda_from_wheel") or None


def check_cuda_driver(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Passed when torch's CUDA build is newer than the CUDA version the driver supports."""
    name = "lock-cuda-driver"
    if (skip := _no_lock(name, ctx)) is not None:
        return skip
    lock = ctx.lock or {}
    built = torch_cuda_build(lock)
    if "torch" not in _section(lock, "ml") and "torch" not in _packages(lock):
        return ValidationCheck(name, "skipped", "torch is not installed in the locked environment")
    if not built:
        return ValidationCheck(name, "skipped", "the lock does not say which CUDA torch was built for (CPU build?)")
    gpu = _section(lock, "gpu")
    if gpu.get("status") != "ok" or not gpu.get("cuda_version"):
        why = (
            "nvidia-smi was not found" if gpu.get("status") == "missing" else f"nvidia-smi status {gpu.get('status')!r}"
        )
        return ValidationCheck(name, "skipped", f"driver CUDA version unknown: {why} on the locked machine")
    b, d = _ver(built), _ver(gpu["cuda_version"])
    if b is None or d is None:
        return ValidationCheck(
            name, "skipped", f"unparsable versions: torch CUDA {built!r}, driver {gpu['cuda_version']!r}"
        )
    drv = f"driver {gpu.get('driver_version') or '?'} supports CUDA {gpu['cuda_version']}"
    if b[:2] > d[:2]:
        return ValidationCheck(name, "passed", f"torch is built for CUDA {built} but the {drv} (lock)")
    return ValidationCheck(name, "failed", f"torch is built for CUDA {built} and the {drv}: compatible")


def _expected_companions(torch_version: str) -> tuple[str, str] | None:
    """(torchvision, torchaudio) major.minor released with a torch major.minor, or None when unknown."""
    v = _ver(torch_version)
    if v is None or len(v) < 2:
        return None
    if v[0] == 2:
        return f"0.{v[1] + 15}", f"2.{v[1]}"
    return _TORCH1_COMPANIONS.get((v[0], v[1]))


def _local_tag(version: str) -> str | None:
    m = re.search(r"\+(\w+)", version or "")
    return m[1] if m else None


def check_torchvision_match(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Passed when torchvision/torchaudio belong to another torch release (or another CUDA build)."""
    name = "lock-torchvision-match"
    if (skip := _no_lock(name, ctx)) is not None:
        return skip
    pk = _packages(ctx.lock or {})
    torch = pk.get("torch")
    if not torch:
        return ValidationCheck(name, "skipped", "torch is not installed in the locked environment")
    companions = {k: pk[k] for k in ("torchvision", "torchaudio") if pk.get(k)}
    if not companions:
        return ValidationCheck(name, "skipped", "neither torchvision nor torchaudio is installed")
    expected = _expected_companions(torch)
    if expected is None:
        return ValidationCheck(name, "skipped", f"no known companion versions for torch {torch}")
    want = dict(zip(("torchvision", "torchaudio"), expected, strict=True))
    bad: list[str] = []
    for pkg, version in companions.items():
        have = _ver(version)
        if have is None or ".".join(str(x) for x in have[:2]) != want[pkg]:
            bad.append(f"{pkg} {version} (torch {torch} needs {want[pkg]}.x)")
        elif _local_tag(torch) and _local_tag(version) and _local_tag(torch) != _local_tag(version):
            bad.append(f"{pkg} {version} is a +{_local_tag(version)} build, torch {torch} a +{_local_tag(torch)} one")
    if bad:
        return ValidationCheck(name, "passed", "mismatch in the lock: " + "; ".join(bad))
    found = ", ".join(f"{k} {v}" for k, v in companions.items())
    return ValidationCheck(name, "failed", f"{found} match torch {torch}")


def check_numpy_abi(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Passed when numpy 2 is installed and the failure says an extension was compiled for NumPy 1.x."""
    name = "lock-numpy-abi"
    if (skip := _no_lock(name, ctx)) is not None:
        return skip
    numpy = _packages(ctx.lock or {}).get("numpy")
    said = _NUMPY_ABI.search(_text(finding))
    if not numpy:
        return ValidationCheck(
            name, "failed" if said else "skipped", "numpy is not installed in the locked environment"
        )
    v = _ver(numpy) or (0,)
    if v[0] >= 2 and said:
        return ValidationCheck(name, "passed", f"numpy {numpy} in the lock, and the failure says: {said[0]!r}")
    if v[0] >= 2:
        return ValidationCheck(
            name, "skipped", f"numpy {numpy} is installed but the failure text shows no NumPy ABI error"
        )
    if said and "dtype size changed" in said[0]:
        return ValidationCheck(name, "passed", f"numpy {numpy} in the lock, and an extension reports {said[0]!r}")
    return ValidationCheck(name, "failed", f"numpy {numpy} (1.x) is installed: not a NumPy-2 ABI break")


def check_hccl_timeouts(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Passed when HCCL_CONNECT_TIMEOUT / HCCL_EXEC_TIMEOUT are set below CANN's defaults."""
    name = "lock-hccl-timeouts"
    if (skip := _no_lock(name, ctx)) is not None:
        return skip
    env = _section(ctx.lock or {}, "env")
    short, seen = [], []
    for var, default in HCCL_DEFAULTS.items():
        raw = env.get(var)
        if raw is None:
            continue
        try:
            value = int(float(str(raw).strip()))
        except ValueError:
            short.append(f"{var}={raw!r} is not a number")
            continue
        seen.append(f"{var}={value}")
        if value < default:
            short.append(f"{var}={value} s is below the default {default} s")
    if short:
        return ValidationCheck(name, "passed", "; ".join(short) + " (lock env)")
    if seen:
        return ValidationCheck(name, "failed", ", ".join(seen) + ": at or above the defaults")
    defaults = ", ".join(f"{k}={v}" for k, v in HCCL_DEFAULTS.items())
    return ValidationCheck(name, "failed", f"HCCL timeouts unset in the lock: defaults ({defaults}) apply")


def check_shm_size(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Passed when /dev/shm is under 1 GiB (or nearly full) and the failure involves DataLoader workers."""
    name = "lock-shm-size"
    if (skip := _no_lock(name, ctx)) is not None:
        return skip
    shm = _section(ctx.lock or {}, "resources", "shm")
    total, free = shm.get("total"), shm.get("free")
    if not isinstance(total, int | float):
        return ValidationCheck(name, "skipped", "the lock has no /dev/shm size (not Linux, or the probe failed)")
    workers = _WORKERS.search(_text(finding))
    small = total < SHM_MIN_BYTES or (isinstance(free, int | float) and free < SHM_FREE_MIN_BYTES)
    size = f"/dev/shm is {_gib(total)}" + (f" with {_gib(free)} free" if isinstance(free, int | float) else "")
    if small and workers:
        return ValidationCheck(name, "passed", f"{size} and the failure involves DataLoader workers ({workers[0]!r})")
    if small:
        return ValidationCheck(name, "passed", f"{size}: too small for DataLoader workers (num_workers > 0)")
    return ValidationCheck(name, "failed", f"{size}: enough for DataLoader workers")


def check_disk_free(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Passed when the working directory's disk had under 2 GiB or 3% free when the lock was taken."""
    name = "lock-disk-free"
    if (skip := _no_lock(name, ctx)) is not None:
        return skip
    disk = _section(ctx.lock or {}, "resources", "disk")
    total, free = disk.get("total"), disk.get("free")
    if not isinstance(total, int | float) or not isinstance(free, int | float) or total <= 0:
        return ValidationCheck(name, "skipped", "the lock has no disk usage for the working directory")
    detail = (
        f"{_gib(free)} of {_gib(total)} free ({100 * free / total:.1f}%) on {disk.get('path', 'the working directory')}"
    )
    if free < DISK_FREE_MIN_BYTES or free / total < DISK_FREE_MIN_FRACTION:
        return ValidationCheck(name, "passed", detail + ": almost full")
    return ValidationCheck(name, "failed", detail)


def check_changed_since_green(ctx: CheckContext, cause: RootCause, finding: dict[str, Any]) -> ValidationCheck | None:
    """Passed, naming the changes, when the environment differs from the lock of the last passing run.

    Code revisions are left out (code changes every commit; this check is about the environment). Changes
    whose name appears in the cause or the failure text are listed first."""
    name = "lock-changed-since-green"
    if (skip := _no_lock(name, ctx)) is not None:
        return skip
    green = (ctx.context or {}).get("last_green_lock")
    if not isinstance(green, dict) or not green:
        return ValidationCheck(name, "skipped", "no lock of a last green run to compare with")
    # imported here: envlock (platform, subprocess, threads, the store) is needed only with a green lock
    from ..capture.envlock import diff_locks, format_change

    changes = [c for c in diff_locks(green, ctx.lock or {}) if c.get("kind") != "git"]
    if not changes:
        return ValidationCheck(name, "failed", "the environment is unchanged since the last green run")
    context = " ".join([cause.id, cause.summary, _text(finding)]).lower()
    changes.sort(key=lambda c: str(c.get("name", "")).lower() not in context)  # stable: relevant first
    shown = listed([format_change(c) for c in changes], 6, "; ")
    return ValidationCheck(name, "passed", "since the last green run: " + shown)


CHECKS: dict[str, CheckFn] = {
    "lock-cuda-driver": check_cuda_driver,
    "lock-torchvision-match": check_torchvision_match,
    "lock-numpy-abi": check_numpy_abi,
    "lock-hccl-timeouts": check_hccl_timeouts,
    "lock-shm-size": check_shm_size,
    "lock-disk-free": check_disk_free,
    "lock-changed-since-green": check_changed_since_green,
}
CHECK_NAMES = tuple(CHECKS)
