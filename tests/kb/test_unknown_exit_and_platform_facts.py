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


# (train log, the rule that leads, the homes that lead in that order, a home listed among the first three)
LISTED = [
    # a CI runner's deep work folder: the runner beside Windows' limit
    (
        "environment/tensorrt_ci_windows_conda_env_path_too_long_torch_license_files",
        "pip.windows_long_path",
        ("environment", "harness"),
        None,
    ),
    # setup-python without the version on the image: the runner image, v5's and v2-v4's wordings
    (
        "environment/gha_setup_python37_missing_ubuntu2404_runner",
        "gha.setup_python_version_missing",
        ("config", "harness"),
        None,
    ),
    (
        "environment/gha_setup_python_patch_not_built_for_ubuntu2204",
        "gha.setup_python_version_missing",
        ("config", "harness"),
        None,
    ),
    # pytest selecting no test: the selection it was given
    ("pytest_python/opensre_ci_stale_test_path_xdist_exit5", "pytest.no_tests", (), "config"),
    # torch.multiprocessing's documentation: file_descriptor sharing under a low limit calls for file_system or a
    # higher limit, the run's own settings
    ("pytorch/fd_sharing_strategy_too_many_open_files_shm", "host.file_handles", ("resource",), "config"),
    # Docker refusing the nvidia runtime by name: that request (--gpus needs no registered runtime)
    (
        "environment/docker_compose_nvidia_runtime_daemon_not_restarted",
        "docker.gpu_driver_unavailable",
        ("environment",),
        "config",
    ),
]


@pytest.mark.parametrize(("name", "rule", "leading", "listed"), LISTED, ids=[row[0].split("/")[1] for row in LISTED])
def test_a_train_log_lists_the_homes_the_catalogue_names(
    name: str, rule: str, leading: tuple[str, ...], listed: str | None
) -> None:
    diag = train_diagnosis(name)
    homes = top3(diag)
    assert diag.root_causes[0].rule == rule
    assert tuple(homes[: len(leading)]) == leading, homes
    assert listed is None or listed in homes, homes
