"""End to end: a version-mismatch failure diagnosed with a real lock cites the lock in an executed check
(``validation_checks`` are direct evidence by the contract)."""

from __future__ import annotations

from pytest_faildiag.capture.envlock import build_lock
from pytest_faildiag.engine import api

DRIVER_LOG = (
    'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    torch.zeros(1).cuda()\n'
    "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver\n"
)
IMPORT_LOG = (
    'Traceback (most recent call last):\n  File "train.py", line 1, in <module>\n'
    "    from torchvision.ops import nms\n"
    "ImportError: cannot import name 'nms' from 'torchvision.ops' (/venv/lib/python3.11/site-packages/torchvision/ops/__init__.py)\n"
)


def _checks(diag) -> list[dict]:
    d = diag.to_dict()
    return [c for cause in d["root_causes"] for c in cause["validation_checks"]]


def test_driver_too_old_is_confirmed_by_the_lock(site, fake_nvidia):
    site("torch", "2.6.0+cu128")
    diag = api.diagnose(texts={"stderr.txt": DRIVER_LOG}, exit_code=1, lock=build_lock())
    hits = [c for c in _checks(diag) if c["name"] == "lock-cuda-driver"]
    assert hits and hits[0]["status"] == "passed"
    assert "CUDA 12.8" in hits[0]["detail"] and "CUDA 12.2" in hits[0]["detail"]


def test_a_version_mismatch_names_what_changed_since_the_last_green_run(site):
    site("torch", "2.5.1")
    site("torchvision", "0.20.1")
    green = build_lock()
    site("torch", "2.6.0", layer="b")
    diag = api.diagnose(
        texts={"stderr.txt": IMPORT_LOG}, exit_code=1, lock=build_lock(), context={"last_green_lock": green}
    )
    checks = {c["name"]: c for c in _checks(diag)}
    assert checks["lock-changed-since-green"]["status"] == "passed"
    assert "torch 2.5.1 → 2.6.0" in checks["lock-changed-since-green"]["detail"]
    assert checks["lock-torchvision-match"]["status"] == "passed"
