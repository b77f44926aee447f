"""The lock-based validation checks, run on locks built from this machine (plus real fake distributions
and tools where the machine lacks the situation under test)."""

from __future__ import annotations

import copy

import pytest

from pytest_faildiag.capture.envlock import build_lock
from pytest_faildiag.engine import checks_env
from pytest_faildiag.engine.checks_env import CHECKS
from pytest_faildiag.engine.validate import CheckContext, run_checks
from pytest_faildiag.model import RootCause

GIB = 1024**3


def _cause(summary: str = "environment mismatch", cid: str = "env.mismatch") -> RootCause:
    return RootCause(id=cid, category="environment", confidence=0.5, summary=summary)


def _run(name: str, lock, text: str = "", context=None):
    ctx = CheckContext(scan=None, profile=None, lock=lock, context=context or {})
    return CHECKS[name](ctx, _cause(), {"text": text})


@pytest.mark.parametrize("name", checks_env.CHECK_NAMES)
def test_every_check_is_registered_and_skips_without_a_lock(name):
    result = _run(name, None)
    assert result.name == name and result.status == "skipped" and "no environment lock" in result.detail


def test_cuda_driver_too_old_for_torch_build(site, fake_nvidia):
    site("torch", "2.6.0+cu128")
    result = _run("lock-cuda-driver", build_lock())
    assert result.status == "passed"
    assert "CUDA 12.8" in result.detail and "supports CUDA 12.2" in result.detail


def test_cuda_driver_new_enough(site, fake_nvidia):
    site("torch", "2.4.1+cu121")
    assert _run("lock-cuda-driver", build_lock()).status == "failed"


def test_cuda_driver_check_skips_without_nvidia_smi(site, tmp_path, monkeypatch):
    site("torch", "2.6.0+cu128")
    monkeypatch.setenv("PATH", str(tmp_path))
    result = _run("lock-cuda-driver", build_lock())
    assert result.status == "skipped" and "nvidia-smi was not found" in result.detail


@pytest.mark.torch
def test_cuda_driver_check_on_this_cpu_build_says_why_it_skips():
    torch = pytest.importorskip("torch")
    if torch.version.cuda:
        pytest.skip("this torch is a CUDA build")
    result = _run("lock-cuda-driver", build_lock(include=["torch"]))
    assert result.status == "skipped" and "CPU build" in result.detail


@pytest.mark.parametrize(
    ("tv", "ta", "status"),
    [
        ("0.20.1", "2.5.1", "failed"),
        ("0.19.1", "2.5.1", "passed"),
        ("0.20.1", "2.4.0", "passed"),
        ("0.20.1+cpu", None, "passed"),
    ],
)
def test_torchvision_and_torchaudio_must_match_torch(site, tv, ta, status):
    site("torch", "2.5.1+cu121" if tv.endswith("+cpu") else "2.5.1")
    site("torchvision", tv)
    if ta:
        site("torchaudio", ta)
    result = _run("lock-torchvision-match", build_lock())
    assert result.status == status, result.detail
    if status == "passed":
        assert "mismatch" in result.detail


def test_torchvision_check_on_this_machine_is_consistent():
    lock = build_lock()
    result = _run("lock-torchvision-match", lock)
    if "torchvision" not in lock["packages"] and "torchaudio" not in lock["packages"]:
        assert result.status == "skipped"
    else:
        assert result.status in ("passed", "failed")


NUMPY_ERR = (
    "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.1.0 as it may crash. To support both 1.x "
    "and 2.x\nversions of NumPy, modules must be compiled with NumPy 2.0."
)


def test_numpy2_with_an_extension_built_for_numpy1(site):
    site("numpy", "2.1.0")
    result = _run("lock-numpy-abi", build_lock(), NUMPY_ERR)
    assert result.status == "passed" and "numpy 2.1.0" in result.detail


def test_numpy1_contradicts_the_numpy2_abi_cause(site):
    site("numpy", "1.26.4")
    assert _run("lock-numpy-abi", build_lock(), NUMPY_ERR).status == "failed"


def test_numpy2_without_the_error_text_skips(site):
    site("numpy", "2.1.0")
    assert _run("lock-numpy-abi", build_lock(), "RuntimeError: something else").status == "skipped"


def test_short_hccl_timeouts_support_a_communication_timeout(monkeypatch):
    monkeypatch.setenv("HCCL_CONNECT_TIMEOUT", "30")
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "1836")
    result = _run("lock-hccl-timeouts", build_lock())
    assert result.status == "passed" and "HCCL_CONNECT_TIMEOUT=30" in result.detail
    assert "HCCL_EXEC_TIMEOUT" not in result.detail


def test_default_or_long_hccl_timeouts_contradict_it(monkeypatch):
    monkeypatch.delenv("HCCL_CONNECT_TIMEOUT", raising=False)
    monkeypatch.delenv("HCCL_EXEC_TIMEOUT", raising=False)
    assert _run("lock-hccl-timeouts", build_lock()).status == "failed"
    monkeypatch.setenv("HCCL_CONNECT_TIMEOUT", "1200")
    result = _run("lock-hccl-timeouts", build_lock())
    assert result.status == "failed" and "HCCL_CONNECT_TIMEOUT=1200" in result.detail


def test_small_dev_shm_with_dataloader_workers():
    lock = build_lock()
    if not isinstance(lock["resources"]["shm"].get("total"), int):
        pytest.skip("no /dev/shm here")
    small = copy.deepcopy(lock)
    small["resources"]["shm"] = {"path": "/dev/shm", "total": 64 * 1024**2, "free": 60 * 1024**2}
    text = "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error."
    result = _run("lock-shm-size", small, text)
    assert result.status == "passed" and "64 MiB" in result.detail and "DataLoader worker" in result.detail
    real = _run("lock-shm-size", lock, text)
    assert real.status == ("passed" if lock["resources"]["shm"]["total"] < GIB else "failed")


def test_disk_free_on_this_machine_and_when_almost_full():
    lock = build_lock()
    real = _run("lock-disk-free", lock)
    disk = lock["resources"]["disk"]
    assert real.status == ("failed" if disk["free"] >= 2 * GIB and disk["free"] / disk["total"] >= 0.03 else "passed")
    full = copy.deepcopy(lock)
    full["resources"]["disk"] = {"path": "/data", "total": 500 * GIB, "free": GIB // 2}
    result = _run("lock-disk-free", full)
    assert result.status == "passed" and "almost full" in result.detail and "/data" in result.detail


def test_changed_since_last_green_names_the_change_first(site):
    site("torch", "2.5.1")
    site("faildiag-aaa", "1.0")
    green = build_lock()
    site("torch", "2.6.0", layer="b")
    site("faildiag-aaa", "1.1", layer="b")
    red = build_lock()
    ctx = CheckContext(scan=None, profile=None, lock=red, context={"last_green_lock": green})
    cause = RootCause(
        id="torch.api.removed",
        category="library",
        confidence=0.5,
        summary="an API used by the test was removed in the installed torch",
    )
    result = CHECKS["lock-changed-since-green"](ctx, cause, {"text": "AttributeError: module 'torch' has no attribute"})
    assert result.status == "passed"
    assert result.detail.startswith("since the last green run: torch 2.5.1 → 2.6.0")
    assert "faildiag-aaa 1.0 → 1.1" in result.detail


def test_unchanged_environment_contradicts_a_change_cause():
    lock = build_lock()
    result = _run("lock-changed-since-green", lock, context={"last_green_lock": copy.deepcopy(lock)})
    assert result.status == "failed"


def test_changed_since_green_skips_without_a_green_lock():
    result = _run("lock-changed-since-green", build_lock())
    assert result.status == "skipped" and "last green" in result.detail


def test_run_checks_folds_results_into_confidence(site, fake_nvidia):
    site("torch", "2.6.0+cu128")
    ctx = CheckContext(scan=None, profile=None, lock=build_lock(), checks=CHECKS)
    cause = _cause("torch built for a newer CUDA than the driver")
    run_checks(ctx, cause, ["lock-cuda-driver", "lock-numpy-abi"], {"text": "CUDA driver version is insufficient"})
    assert [c.status for c in cause.validation_checks] == ["passed", "skipped"]
    assert cause.confidence > 0.5


def test_checks_never_raise_on_a_garbage_lock():
    garbage = {"packages": "x", "gpu": [], "resources": {"shm": "big", "disk": None}, "env": 3, "ml": {"torch": 1}}
    for name in checks_env.CHECK_NAMES:
        result = _run(name, garbage, "compiled using NumPy 1.x", context={"last_green_lock": {"packages": {"a": "1"}}})
        assert result.status in ("passed", "failed", "skipped")
