"""The thread corpus's labels follow the contract's vocabulary (a lint of the labels; nothing is diagnosed here).

The contract types an unrecoverable device error that loses the device context as ``crash``, naming CUDA's
device-side assert: a label whose key line is one (the runtime's "device-side assert triggered", or the kernel's
own ``Assertion `…``` from a ``.cu`` file) says ``crash``, whatever the exception that carried it to Python.
"""

from __future__ import annotations

import json
from pathlib import Path

THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _device_assert(key_line: str) -> bool:
    return "device-side assert" in key_line or ("Assertion `" in key_line and ".cu:" in key_line)


def test_a_cuda_device_side_assert_is_labelled_a_crash():
    split = json.loads((THREADS / "split.json").read_text())["split"]
    labels = {name: json.loads((THREADS / f"{name}.json").read_text()) for name in split}
    asserts = {name for name, label in labels.items() if _device_assert(label["key_line"])}
    assert len(asserts) >= 20  # the corpus holds such logs in every split
    assert {name: labels[name]["type"] for name in asserts if labels[name]["type"] != "crash"} == {}
