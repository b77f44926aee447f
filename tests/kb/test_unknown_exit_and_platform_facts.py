"""A log without an exit status is read as the failure it was handed over as (engine/analyze.py: the rules that
only explain a failure count there), and catalogue facts from train misses of the thread corpus: Windows' path
limit under pip, Ray's object store against /dev/shm, PJRT's struct sizes between jaxlib and a plugin, flash-attn's
guarded import, transformers' model-type table in a paste that lost a space, pytest-qt's QApplication aborting, a
setup-python version the runner image lacks (the runner is the harness), pytest selecting no test (the selection
given is configuration). Lightning's DDP unused-parameter message is shown on a real run in
tests/data/kb/lightning_messages (test_lightning_messages.py); the train log of each fact is read in
test_parser_panic_fp8_facts.py's table. Each test fails on the code and rules from before the commit that added
it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, top3, train_diagnosis


def _coverage_of_a_package_never_imported(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "prog.py").write_text("print('ran')\n")
    return subprocess.run(
        [sys.executable, "-m", "coverage", "run", "--source=trainlib", "prog.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_a_log_without_an_exit_status_is_read_as_the_failure_it_was_handed_over_as(tmp_path: Path) -> None:
    """coverage.py measuring a package the program never imports exits 0 with two warnings: handed over without
    its status (a CI log pasted into a ticket) they are the reading; with the status 0 they are not a failure."""
    proc = _coverage_of_a_package_never_imported(tmp_path)
    assert proc.returncode == 0 and "No data was collected" in proc.stderr, proc.stderr
    unknown = diagnose(texts={"stderr": proc.stderr})
    assert unknown.root_causes[0].rule == "coverage.no_data"
    assert (unknown.root_causes[0].category, unknown.profile.type) == ("config", "runtime_error")
    assert not fired(diagnose(texts={"stderr": proc.stderr}, exit_code=0), "coverage.no_data")


def test_a_ci_log_whose_path_is_too_long_for_windows_names_the_runner() -> None:
    diag = train_diagnosis("environment/tensorrt_ci_windows_conda_env_path_too_long_torch_license_files")
    assert diag.root_causes[0].rule == "pip.windows_long_path"
    assert top3(diag)[:2] == ["environment", "harness"]


@pytest.mark.parametrize(
    "name",
    [
        "environment/gha_setup_python37_missing_ubuntu2404_runner",  # v5: "The version 'X' with architecture ..."
        "environment/gha_setup_python_patch_not_built_for_ubuntu2204",  # v4: "Version X with arch A not found"
    ],
)
def test_setup_python_without_the_version_on_the_image_names_the_runner(name: str) -> None:
    diag = train_diagnosis(name)
    assert diag.root_causes[0].rule == "gha.setup_python_version_missing"
    assert top3(diag)[:2] == ["config", "harness"]


def test_pytest_selecting_no_test_names_the_selection_it_was_given() -> None:
    diag = train_diagnosis("pytest_python/opensre_ci_stale_test_path_xdist_exit5")
    assert diag.root_causes[0].rule == "pytest.no_tests"
    assert "config" in top3(diag)


def test_torch_sharing_descriptors_lists_the_runs_sharing_strategy() -> None:
    """torch.multiprocessing's documentation: the file_descriptor strategy under a low limit calls for file_system
    or a higher limit, the run's own settings."""
    diag = train_diagnosis("pytorch/fd_sharing_strategy_too_many_open_files_shm")
    assert diag.root_causes[0].rule == "host.file_handles"
    assert top3(diag)[0] == "resource" and "config" in top3(diag)


def test_docker_refusing_the_nvidia_runtime_by_name_lists_the_request() -> None:
    diag = train_diagnosis("environment/docker_compose_nvidia_runtime_daemon_not_restarted")
    assert diag.root_causes[0].rule == "docker.gpu_driver_unavailable"
    assert top3(diag)[0] == "environment" and "config" in top3(diag)
