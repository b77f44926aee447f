"""The packaging catalogue (33-packaging-catalogue.toml): the error vocabularies of the build backends and
resolvers that pip's and conda's rules do not read — setuptools-scm without VCS metadata, setuptools-rust
and maturin without a Rust compiler, hatchling's default file selection, Poetry's solver and lock check, uv's resolver
and build frontend, CMake's package lookup, Meson's compiler detection. Each rule is shown on output the real tool
printed here (``tests/data/kb/kpkg``; README.md there says what ran); two train logs show Meson's too
(test_parser_panic_fp8_facts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3

PACK = "33-packaging-catalogue.toml"
CAPTURED = Path(__file__).resolve().parents[1] / "data" / "kb" / "kpkg"

CASES = {
    # file: (rule, the category first, a second category among the first three or None, the stage)
    "scm_no_git": ("scm.version_not_detected", "environment", "harness", "startup"),
    "rust_no_compiler": ("rust.compiler_missing", "environment", "library", "startup"),
    "maturin_no_cargo": ("rust.compiler_missing", "environment", "library", "startup"),
    "hatch_no_package_dir": ("hatch.wheel_files_undetermined", "config", None, "startup"),
    "uv_no_solution": ("uv.no_solution", "config", "environment", "startup"),
    "uv04_no_solution": ("uv.no_solution", "config", "environment", "startup"),
    "uv04_backend_error": ("uv.build_failed", "environment", "library", "startup"),
    "pypa_build_backend_error": ("pypabuild.backend_failed", "environment", "library", "startup"),
    "uv_backend_error": ("uv.build_failed", "environment", "library", "startup"),
    "poetry_conflict": ("poetry.version_solving_failed", "config", "library", "startup"),
    "poetry_python_range": ("poetry.python_range", "config", None, "startup"),
    "poetry_lock_stale": ("poetry.lock_stale", "config", None, "startup"),
    "cmake_no_config_file": ("cmake.package_config_not_found", "environment", "config", "compile"),
    "cmake_find_module": ("cmake.find_module_failed", "environment", "config", "compile"),
    "meson_no_fortran": ("meson.compiler_missing", "environment", "config", "compile"),
    "meson_no_cxx": ("meson.compiler_missing", "environment", "config", "compile"),
}


def _diag(name: str):
    return diagnose(texts={"job.log": (CAPTURED / f"{name}.out").read_text()}, exit_code=1)


def test_the_pack_loads_and_every_rule_has_a_case() -> None:
    ids = {r.id for r in pack_rules(PACK)}
    assert all(r.causes and r.keywords for r in pack_rules(PACK))
    assert ids == {rule for rule, *_ in CASES.values()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_tool_output(name: str) -> None:
    rule, first, second, stage = CASES[name]
    diag = _diag(name)
    assert fired(diag, rule), [rc.rule for rc in diag.root_causes]
    top = diag.root_causes[0]
    assert (top.rule, top.category) == (rule, first), [(rc.rule, rc.category) for rc in diag.root_causes]
    if second:
        assert second in top3(diag), top3(diag)
    assert diag.profile.type == "runtime_error"
    assert diag.profile.stage == stage


@pytest.mark.parametrize("name", ["scm_no_git", "rust_no_compiler", "maturin_no_cargo", "hatch_no_package_dir"])
def test_the_backend_refusal_replaces_pips_generic_build_report(name: str) -> None:
    """pip's "subprocess-exited-with-error"/"Failed building wheel" frame these builds; the backend's own
    words say why, so pip.build_failed's generic homes (a release that cannot build here) give way."""
    diag = _diag(name)
    assert not fired(diag, "pip.build_failed"), [rc.rule for rc in diag.root_causes]


def test_poetry_python_range_leaves_the_generic_solver_report_out() -> None:
    diag = _diag("poetry_python_range")
    assert not fired(diag, "poetry.version_solving_failed")


def test_placeholders_name_the_package() -> None:
    assert "CMakeLists.txt:3" in _diag("cmake_no_config_file").root_causes[0].summary
    assert "CURL" in _diag("cmake_find_module").root_causes[0].summary
    assert ">=3.8" in _diag("poetry_python_range").root_causes[0].summary


def test_cmake_optional_package_lines_are_no_failure() -> None:
    """find_package() without REQUIRED prints "-- Could NOT find X (missing: …)" and a "CMake Warning at …
    (find_package):" lookup report, and the configure goes on; the build then fails at the link. Neither CMake
    rule reads those lines: the linker's error is the failure."""
    diag = _diag("cmake_optional_not_found_then_link_error")
    rules = [rc.rule for rc in diag.root_causes]
    assert not fired(diag, "cmake.find_module_failed"), rules
    assert not fired(diag, "cmake.package_config_not_found"), rules
