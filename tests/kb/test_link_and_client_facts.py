"""Catalogue facts from batch 57's train misses: GNU ld's undefined reference (the link step), CMake's imported
target whose file the installation lacks, OpenCV 3.x's GUI message (Carbon where 4.x says Cocoa) and
openai-python 1.0's stubs for the removed module-level API. The linker's and CMake's are shown on the real tools
run here; each fact's train log is read in test_parser_panic_fp8_facts.py's table. Each test fails on the rules
from before the commit that added the fact."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import top3, train_diagnosis


def test_a_package_config_naming_a_missing_import_library_lists_the_package_itself() -> None:
    diag = train_diagnosis("environment/msys2_python_pytorch_find_package_torch_missing_libc10_import_library")
    assert diag.root_causes[0].rule == "cmake.imported_target_file_missing"
    assert top3(diag)[:2] == ["environment", "library"]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler on this machine")
def test_the_linker_missing_a_definition_is_the_link_step(tmp_path: Path) -> None:
    (tmp_path / "main.c").write_text("int solve(void);\nint main(void) { return solve(); }\n")
    proc = _run(["cc", "main.c", "-o", "main"], tmp_path)
    assert proc.returncode != 0 and "undefined reference to" in proc.stderr, proc.stderr
    diag = diagnose(texts={"build.log": proc.stderr}, exit_code=proc.returncode)
    top = diag.root_causes[0]
    assert (top.rule, top.category, diag.profile.stage) == ("build.undefined_reference", "config", "compile")
    assert "solve" in top.summary


@pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("cc") is None, reason="no cmake or C compiler on this machine"
)
def test_cmake_finding_a_package_whose_library_was_removed(tmp_path: Path) -> None:
    """A library built and installed with its CMake export, then its archive deleted: the consumer's
    find_package reads the export's own check."""
    lib, app, prefix = tmp_path / "lib", tmp_path / "app", tmp_path / "prefix"
    lib.mkdir()
    app.mkdir()
    (lib / "foo.c").write_text("int foo(void) { return 1; }\n")
    (lib / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(foo C)\nadd_library(foo STATIC foo.c)\n"
        "install(TARGETS foo EXPORT FooTargets ARCHIVE DESTINATION lib)\n"
        "install(EXPORT FooTargets NAMESPACE Foo:: DESTINATION lib/cmake/Foo FILE FooConfig.cmake)\n"
    )
    (app / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(app C)\nfind_package(Foo REQUIRED)\n"
    )
    for argv in (
        ["cmake", "-S", str(lib), "-B", str(lib / "build"), f"-DCMAKE_INSTALL_PREFIX={prefix}"],
        ["cmake", "--build", str(lib / "build")],
        ["cmake", "--install", str(lib / "build")],
    ):
        assert _run(argv, tmp_path).returncode == 0
    (prefix / "lib" / "libfoo.a").unlink()
    proc = _run(["cmake", "-S", str(app), "-B", str(app / "build"), f"-DCMAKE_PREFIX_PATH={prefix}"], tmp_path)
    assert proc.returncode != 0 and "references the file" in proc.stderr, proc.stderr
    diag = diagnose(texts={"cmake.log": proc.stdout + proc.stderr}, exit_code=proc.returncode)
    assert diag.root_causes[0].rule == "cmake.imported_target_file_missing"
    assert top3(diag)[:2] == ["environment", "library"]
