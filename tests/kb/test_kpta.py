"""Ascend's Python stacks read from their own sources (kpta, #13; rules/56-ascend-sources.toml).

The fixtures under tests/data/kb/kpta_sources are REAL OUTPUT produced on a CPU-only host (paths redacted):

- torch_npu_autoload_no_cann.log: the torch_npu 2.14 wheel importable beside torch 2.13 (CPU), no CANN
  installed, ``import torch, torch_npu``: torch's device-backend autoload re-raises the libhccl.so ImportError.
- ms_*.log: MindSpore 2.10 (CPU wheel) running small programs: a Cell subclass whose __init__ assigns a layer
  without super().__init__(); a GRAPH_MODE construct with ``if x > 0`` on a 3-element tensor; ops.concat of a
  float32 and an int32 tensor; Tensor(np.array([object()])); ms.export(..., file_format="AIR") on CPU.

The torch autoload test also runs live: a throwaway package registers a "torch.backends" entry point whose
module fails to import, and ``import torch`` in a child interpreter prints torch's own message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3, train_log_path

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kpta_sources"
PACK = "56-ascend-sources.toml"

# fixture, rule, expected type, expected first category
CASES = [
    ("torch_npu_autoload_no_cann.log", "torch.device_backend_autoload_failed", "runtime_error", "environment"),
    ("ms_cell_without_super_init.log", "ms.kpta.cell_init_not_called", "runtime_error", "model"),
    ("ms_graph_tensor_bool_cond.log", "ms.kpta.tensor_bool_cond", "runtime_error", "model"),
    ("ms_kernel_mixed_dtypes.log", "ms.kpta.kernel_dtype_unsupported", "unsupported_op", "operator"),
    ("ms_tensor_from_object_array.log", "ms.kpta.tensor_from_object_array", "runtime_error", "model"),
    ("ms_export_air_on_cpu.log", "ms.kpta.export_air_needs_ascend", "unsupported_op", "config"),
]


def test_pack_loads_with_its_rules():
    ids = {r.id for r in pack_rules(PACK) if not r.id.startswith("pta.src.")}  # pta.src.*: kpta5's (test_kpta5.py)
    assert ids == {case[1] for case in CASES}


@pytest.mark.parametrize(("log", "rule", "typ", "category"), CASES, ids=[c[1] for c in CASES])
def test_real_output(log, rule, typ, category):
    diag = diagnose([str(DATA / log)], exit_code=1)
    assert fired(diag, rule), [rc.rule for rc in diag.root_causes]
    assert diag.profile.type == typ
    assert top3(diag)[0] == category, [(rc.rule, rc.category) for rc in diag.root_causes[:4]]


def test_kernel_dtype_names_operator_and_dtypes():
    diag = diagnose([str(DATA / "ms_kernel_mixed_dtypes.log")], exit_code=1)
    rc = next(rc for rc in diag.root_causes if rc.rule == "ms.kpta.kernel_dtype_unsupported")
    assert "Concat" in rc.summary and "Int32" in rc.summary
    assert "model" in top3(diag)


def test_cell_init_names_the_class():
    diag = diagnose([str(DATA / "ms_cell_without_super_init.log")], exit_code=1)
    rc = diag.root_causes[0]
    assert rc.rule == "ms.kpta.cell_init_not_called" and "Net" in rc.summary


def test_autoload_rule_yields_to_the_chained_cause():
    """The autoload wrapper corroborates; the chained ImportError (the missing CANN library) ranks first."""
    diag = diagnose([str(DATA / "torch_npu_autoload_no_cann.log")], exit_code=1)
    assert diag.root_causes[0].rule != "torch.device_backend_autoload_failed"
    rc = next(rc for rc in diag.root_causes if rc.rule == "torch.device_backend_autoload_failed")
    assert "torch_npu" in rc.summary and "torch_npu." not in rc.summary


def test_autoload_live(tmp_path):
    """torch's own message, produced here: a registered backend extension that fails to import."""
    pytest.importorskip("torch")
    pkg = tmp_path / "site"
    (pkg / "fake_npu_backend").mkdir(parents=True)
    (pkg / "fake_npu_backend" / "__init__.py").write_text(
        "raise ImportError('libfakeruntime.so: cannot open shared object file: No such file or directory')\n"
    )
    dist = pkg / "fake_npu_backend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-npu-backend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[torch.backends]\nfake_npu_backend = fake_npu_backend:_autoload\n")
    env = {"PYTHONPATH": str(pkg), "PATH": "/usr/bin:/bin"}
    p = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240
    )
    assert p.returncode != 0 and "Failed to load the backend extension: fake_npu_backend" in p.stderr, p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert fired(diag, "torch.device_backend_autoload_failed")
    assert top3(diag)[0] == "environment"
    # with autoload off, torch imports
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    q = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True, env=env, timeout=240)
    assert q.returncode == 0, q.stderr


def test_silent_on_a_train_log_without_these_messages():
    """A real Ascend train log (torch_npu's own error output) does not trip the new rules."""
    import json

    split = json.loads((DATA.parents[1] / "corpus" / "threads" / "split.json").read_text())["split"]
    names = sorted(n for n, s in split.items() if s == "train" and ("npu" in n or "ascend" in n or "mindspore" in n))
    assert names
    for name in names[:6]:
        diag = diagnose([str(train_log_path(name))])
        assert not any(rc.rule.startswith(("ms.kpta.", "torch.device_backend")) for rc in diag.root_causes), name
