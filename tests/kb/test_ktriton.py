"""Triton's API imported by a compiler built for another Triton release (triton.import_mismatch): PyTorch's
Inductor and jax-triton import names of the Triton they pin; a name the installed Triton lacks is the installed
pair, the caller's release the alternative. A real import of a Triton package without the name, from a compiler's
frame, and a train log (a torch nightly run with Triton 2.3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import train_log
from tests.kb.kb_helpers import fake_site_library


def _site(tmp_path: Path) -> str:
    """A site-packages with a compiler package that imports ``triton_key`` as Inductor's codecache does
    (``fake_site_library``) and a Triton whose compiler module lacks it."""
    site = fake_site_library(
        tmp_path, "def get_system():\n    from triton.compiler.compiler import triton_key\n    return triton_key()\n"
    )
    compiler = Path(site) / "triton" / "compiler"
    compiler.mkdir(parents=True)
    (compiler.parent / "__init__.py").write_text("__version__ = '2.3.0'\n")
    (compiler / "__init__.py").write_text("")
    (compiler / "compiler.py").write_text("def compile(src):\n    return src\n")
    return site


def test_a_name_the_installed_triton_lacks_is_the_installed_pair(tmp_path):
    site = _site(tmp_path)
    script = f"import sys\nsys.path.insert(0, {site!r})\nimport fakelib\nfakelib.get_system()\n"
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert "cannot import name 'triton_key' from 'triton.compiler.compiler'" in p.stderr, p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    first = diag.root_causes[0]
    assert first.rule == "triton.import_mismatch" and "triton_key" in first.summary, first
    assert [c.category for c in diag.root_causes[:2]] == ["environment", "library"]


def test_train_log_a_torch_nightly_with_triton_2_3_is_the_installed_pair():
    """Inductor of a torch nightly imports triton_key, which Triton 2.3 does not have (a maintainer: install the
    Triton the nightly pins); before, the generic reading of an Inductor failure put a compiler bug first."""
    diag, label = train_log("pytorch/inductor_triton_key_importerror_torch_nightly_with_triton_2_3")
    assert label["category"] == "environment"
    assert diag.root_causes[0].rule == "triton.import_mismatch"
    assert [c.category for c in diag.root_causes[:2]] == ["environment", "library"]
    assert diag.profile.stage == "compile"
    assert all(c.rule != "torch.compile.error" for c in diag.root_causes)
