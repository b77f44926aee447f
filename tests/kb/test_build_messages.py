"""Build and packaging failures produced for real here: GNU ld, gcc, pip, packaging's PEP 440 parser."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


def _diagnose(p: subprocess.CompletedProcess[str]):
    assert p.returncode != 0, p.stdout + p.stderr
    return diagnose(texts={"stderr": p.stdout + p.stderr}, exit_code=p.returncode)


def _assert(diag, rule: str, category: str, stage: str | None = None) -> None:
    assert any(c.rule == rule for c in diag.root_causes), [c.rule for c in diag.root_causes]
    assert diag.root_causes[0].category == category, [(c.category, c.rule) for c in diag.root_causes]
    assert diag.profile.type == "runtime_error"
    if stage:
        assert diag.profile.stage == stage


@needs_gcc
def test_a_library_the_linker_cannot_find(tmp_path: Path):
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    p = subprocess.run(
        ["gcc", "m.c", "-o", "m", "-lfaildiag_not_installed"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert "cannot find -lfaildiag_not_installed" in p.stderr
    diag = _diagnose(p)
    _assert(diag, "build.linker_missing_library", "environment", "compile")
    assert "faildiag_not_installed" in diag.root_causes[0].summary


@needs_gcc
def test_a_header_the_compiler_cannot_find(tmp_path: Path):
    (tmp_path / "ext.c").write_text("#include <faildiag_missing/api.h>\nint f(void) { return 1; }\n")
    p = subprocess.run(["gcc", "-c", "ext.c"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    diag = _diagnose(p)
    _assert(diag, "build.missing_header", "environment", "compile")
    assert "faildiag_missing/api.h" in diag.root_causes[0].summary


def test_a_wheel_built_for_another_platform(tmp_path: Path):
    wheel = tmp_path / "tinypkg-1.0-cp27-cp27m-win32.whl"
    wheel.write_bytes(b"")  # pip refuses it by its tags before opening it
    p = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-index", "--dry-run", str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "is not a supported wheel on this platform" in p.stdout + p.stderr
    _assert(_diagnose(p), "pip.unsupported_wheel", "environment", "startup")


def test_a_version_string_that_is_not_pep440():
    code = "from packaging.version import Version\nVersion('2.2.3.2c7f2141')\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "Invalid version: '2.2.3.2c7f2141'" in p.stderr
    diag = _diagnose(p)
    assert any(c.rule == "packaging.invalid_version" for c in diag.root_causes)
    assert {"environment", "library"} <= {c.category for c in diag.root_causes[:3]}
