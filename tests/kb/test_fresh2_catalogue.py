"""Catalogue facts for families among the 2026-12-01 train logs: each test diagnoses a real log from the
thread corpus's train split (or real output produced here) and checks the rule that states the fact fires
and puts the catalogue's meaning first."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import pack_rules, top3

ROOT = Path(__file__).resolve().parents[2]
THREADS = ROOT / "tests/data/corpus/threads"


def _train_log(name: str) -> Path:
    path = THREADS / f"{name}.log"
    assert path.is_file(), path
    return path


def _rules(diag) -> set[str]:
    return {rc.rule for rc in diag.root_causes}


@pytest.mark.parametrize("pack", ["15-cuda-nccl-catalogue.toml", "35-system-catalogue.toml"])
def test_the_packs_load_without_a_warning(pack):
    assert pack_rules(pack)


def test_an_old_arch_nvcc_refuses_is_a_build_list_older_than_the_toolkit():
    # CUDA 11's nvcc dropped compute_30; a project's CMake still asked for it
    d = diagnose([_train_log("environment/env_flashlight_build_nvcc_unsupported_compute_30_cuda11_dropped_arch")])
    assert (d.profile.type, d.profile.stage) == ("backend", "compile")
    assert "build.nvcc_arch_dropped" in _rules(d)
    assert "build.nvcc_unsupported_arch" not in _rules(d)
    assert top3(d)[0] == "library"


@pytest.mark.parametrize("arch", ["compute_90", "sm_100", "compute_120"])
def test_a_new_arch_nvcc_refuses_is_a_toolkit_too_old(arch):
    d = diagnose(texts={"stderr.txt": f"nvcc fatal   : Unsupported gpu architecture '{arch}'\n"}, exit_code=1)
    assert d.profile.type == "backend"
    assert "build.nvcc_unsupported_arch" in _rules(d) and "build.nvcc_arch_dropped" not in _rules(d)
    assert top3(d)[0] == "environment"


@pytest.mark.parametrize(
    "name",
    [
        "environment/env_rocm_hip_no_binary_gfx1031_navi22_needs_hsa_override",
        "environment/env_rocm_hip_no_binary_ryzen_igpu_unsupported_arch_nix",
    ],
)
def test_a_rocm_build_without_the_gpus_arch_aborts_at_load(name):
    # the second log's abort is reported in German ("Speicherabzug geschrieben"): the HIP message alone tells
    d = diagnose([_train_log(name)])
    assert (d.profile.type, d.profile.stage) == ("crash", "startup")
    assert "hip.no_binary_for_gpu" in _rules(d)
    assert top3(d)[0] == "environment"
