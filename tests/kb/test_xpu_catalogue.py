"""The Intel GPU (XPU) catalogue (28-xpu-catalogue.toml): SYCL's plugin interface, Unified Runtime and Level Zero
results (out of device memory, device lost, a kernel that did not build, an unknown error), PyTorch's XPU backend
(a wheel without it, no device found) and the missing fp64. No train log of the thread corpus shows these
families: each rule is shown on output pasted in a public thread (tests/data/kb/xpu/labels.json cites each thread
and who confirmed it) or, for a torch wheel without XPU, on this machine's own torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_labelled_log, own_pack_ids

PACK = "28-xpu-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "xpu"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
# shown on this machine's torch (a CPU wheel), not on a thread's paste
PRODUCED_HERE = {"xpu.torch_without_xpu"}


def test_the_pack_loads_its_rules_are_its_own_and_each_has_a_real_log():
    ids = own_pack_ids(PACK)
    assert ids <= {lab["rule"] for lab in LABELS} | PRODUCED_HERE, ids - {lab["rule"] for lab in LABELS}


@pytest.mark.parametrize("label", LABELS, ids=[lab["log"][:-4] for lab in LABELS])
def test_each_thread_log_reads_as_its_thread_confirmed(label):
    assert label["source_url"].startswith("https://github.com/") and label["confirmed_by"]
    check_labelled_log(DATA, label)


def test_a_level_zero_error_inside_torch_compile_is_the_device_runtimes_not_the_compilers():
    """Inductor wraps what the Level Zero driver refused while it loaded the kernel (InductorError: RuntimeError:
    Triton Error [ZE]: 0x78000011): before this pack the compiler was blamed (library, 'torch.compile failure')."""
    d = diagnose([str(DATA / "xpu_inductor_triton_ze_0x78000011_after_driver_update.log")])
    rules = [c.rule for c in d.root_causes]
    assert rules[0] == "xpu.runtime_unknown_error" and "torch.compile.error" not in rules, rules
    assert d.profile.type == "backend"


def test_a_torch_wheel_without_xpu_is_the_installed_wheel(tmp_path):
    """This machine's torch is a CPU wheel: asking it for an XPU tensor raises torch's own 'Torch not compiled
    with XPU enabled' (an AssertionError, which alone would read as a failed assertion in the program)."""
    pytest.importorskip("torch")
    p = subprocess.run(
        [sys.executable, "-c", "import torch\ntorch.zeros(1, device='xpu')"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "not compiled with XPU enabled" not in p.stderr:
        pytest.skip("this torch has XPU support")
    log = tmp_path / "stderr.log"
    log.write_text(p.stderr)
    d = diagnose([str(log)], exit_code=p.returncode)
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("xpu.torch_without_xpu", "environment"), [
        (c.rule, c.category) for c in d.root_causes
    ]
    assert d.profile.type == "backend" and d.profile.stage == "startup"
    assert any("whl/xpu" in h for h in top.fix_hints)
