"""Device toolkit failures that are the contract's ``backend`` type: ptxas refusing PTX newer than it supports,
the driver's kernel module reporting an API mismatch. And the control:
a toolkit library the loader cannot open is the program's import dying of an OSError (``runtime_error``, as 9 of the
12 train logs with that line are labelled), whichever toolkit.

Real failures: train logs of the thread corpus (never a dev log: the split is checked), and the loader's own
error produced here by a real process asking for a soname no machine has.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import train_log_path, train_log_with_rules

SPLIT_TRAIN = "train"


def _loader_error(tmp_path, soname: str) -> tuple[str, int]:
    """A real Python process that loads ``soname`` with ctypes (as a framework's binding does at import) and dies
    of the loader's OSError: its stderr and exit status."""
    script = tmp_path / "load.py"
    script.write_text(f"import ctypes\nctypes.CDLL({soname!r})\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 1 and "cannot open shared object file" in proc.stderr, proc.stderr
    return proc.stderr, proc.returncode


def _diagnose(text: str, rc: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose(texts={"stderr": text}, exit_code=rc)


@pytest.mark.parametrize(
    ("name", "rule", "stage"),
    [
        ("environment/system_ptxas_older_than_triton_ptx_isa", "cuda.ptxas_older_than_ptx", "compile"),
        (
            "environment/nvdocker_nvrm_api_mismatch_kernel_module_not_reloaded",
            "cuda.err.system_driver_mismatch",
            "startup",
        ),
    ],
)
def test_train_logs_of_a_device_toolkit_failure(name, rule, stage):
    split = json.loads((train_log_path(name).parents[1] / "split.json").read_text())["split"]
    assert split[name] == SPLIT_TRAIN
    diag, label = train_log_with_rules(name)
    assert label["type"] == diag.profile.type == "backend"
    assert diag.profile.stage == stage
    assert diag.root_causes[0].rule == rule, [c.rule for c in diag.root_causes]
    assert diag.root_causes[0].category == "environment"


def test_ptxas_names_both_isa_versions():
    diag, _ = train_log_with_rules("environment/system_ptxas_older_than_triton_ptx_isa")
    top = diag.root_causes[0]
    assert "up to 7.8" in top.summary and "the PTX is 8.4" in top.summary


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the ELF loader's message")
@pytest.mark.parametrize("soname", ["libcudart.so.99", "libamdhip64.so.99", "libsndfile.so.99"])
def test_a_library_the_loader_cannot_open_is_a_runtime_error_of_the_environment(tmp_path, soname):
    err, rc = _loader_error(tmp_path, soname)
    diag = _diagnose(err, rc)
    assert diag.profile.type == "runtime_error", (diag.profile.type, [c.rule for c in diag.root_causes])
    assert diag.root_causes[0].category == "environment"
    assert soname in " ".join(c.summary for c in diag.root_causes[:2])
