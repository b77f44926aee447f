"""GNU make's own errors end a build (make exits with status 2): a log that ends on one is a failed compile.

Real make runs in a temporary folder: no makefile at all, a prerequisite that exists nowhere, a recipe whose
command fails. Before these rules such a log, with no exception in it, read as a hang.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, top3, train_log_path

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


def _make(folder: Path, makefile: str | None) -> tuple[object, str]:
    if makefile is not None:
        (folder / "Makefile").write_text(makefile)
    p = subprocess.run(["make"], cwd=folder, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr  # the GNU make manual: 2 for any error make met
    out = p.stdout + p.stderr
    return diagnose(texts={"build.log": out}, exit_code=p.returncode), out


def test_no_makefile_is_a_build_input_missing_not_a_hang(tmp_path: Path):
    diag, out = _make(tmp_path, None)
    assert "No targets specified and no makefile found" in out
    assert fired(diag, "build.make_stopped")
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")
    assert top3(diag) == ["environment", "library", "config"]


def test_a_prerequisite_that_exists_nowhere_names_the_missing_file(tmp_path: Path):
    diag, out = _make(tmp_path, "a.o: missing_header.h\n\tcc -c a.c\n")
    assert "No rule to make target" in out
    assert fired(diag, "build.make_stopped")
    assert "missing_header.h" in diag.root_causes[0].summary
    assert diag.profile.stage == "compile"


def test_a_failed_recipe_is_reported_below_the_compiler_s_own_error(tmp_path: Path):
    # the recipe's command (a C compile of a file with an error) says why; make's "Error 1" only reports it
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    (tmp_path / "a.c").write_text('#include "no_such_header_anywhere.h"\nint main(void) { return 0; }\n')
    diag, out = _make(tmp_path, "a.o: a.c\n\tcc -c a.c -o a.o\n")
    assert "Error 1" in out and "no_such_header_anywhere.h" in out
    assert fired(diag, "build.make_recipe_failed")
    assert diag.root_causes[0].rule != "build.make_recipe_failed"  # the compiler's line ranks first
    assert diag.profile.stage == "compile"
    assert top3(diag)[0] == "environment"


def test_a_recipe_failing_alone_is_a_compile_failure(tmp_path: Path):
    diag, out = _make(tmp_path, "all:\n\tfalse\n")
    assert "[Makefile:2: all] Error 1" in out
    assert diag.root_causes[0].rule == "build.make_recipe_failed"
    assert (diag.profile.type, diag.profile.stage) == ("runtime_error", "compile")


def test_a_train_log_ending_on_make_s_stop_is_no_hang():
    # an installed package's folder without the Makefile its code runs make in (NeMo Automodel's helpers)
    diag = diagnose([str(train_log_path("distributed/megatron_dataset_helpers_makefile_missing_from_package"))])
    assert fired(diag, "build.make_stopped")
    assert diag.profile.type == "runtime_error"
    assert "library" in top3(diag)
