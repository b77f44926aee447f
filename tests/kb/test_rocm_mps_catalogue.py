"""The AMD ROCm and Apple MPS catalogue (27-rocm-mps-catalogue.toml): the HSA runtime's start-up failure
(HSA_STATUS_ERROR_OUT_OF_RESOURCES, 4104: no access to /dev/kfd), its GPU page fault ("Memory access fault by GPU
node-N"), rocBLAS without Tensile kernels for the GPU's arch, MIOpen's run-time kernel build and its user database,
and the MPS allocator's limit. No train log of the thread corpus shows these families: each rule is shown on
output pasted in a public thread (tests/data/kb/rocm_mps/labels.json cites each thread and who confirmed it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_labelled_log, own_pack_ids

PACK = "27-rocm-mps-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "rocm_mps"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]


def test_the_pack_loads_its_rules_are_its_own_and_each_has_a_real_log():
    ids = own_pack_ids(PACK)
    assert ids <= {lab["rule"] for lab in LABELS}, ids - {lab["rule"] for lab in LABELS}


@pytest.mark.parametrize("label", LABELS, ids=[lab["log"][:-4] for lab in LABELS])
def test_each_thread_log_reads_as_its_thread_confirmed(label):
    assert label["source_url"].startswith("https://github.com/") and label["confirmed_by"]
    check_labelled_log(DATA, label)


def test_the_hsa_start_up_failure_is_device_access_not_memory():
    """4104 is OUT_OF_RESOURCES, yet the runtime returns it when /dev/kfd cannot be opened: the hints are the
    device's group and the container's devices, and no memory cause leads."""
    d = diagnose([str(DATA / "rocm_docker_rocminfo_4104.log")])
    top = d.root_causes[0]
    assert top.rule == "hsa.out_of_resources" and d.profile.stage == "startup"
    hints = " ".join(top.fix_hints)
    assert "/dev/kfd" in hints and "--device=/dev/kfd" in hints
    assert d.profile.type != "oom" and top.category != "resource"


def test_the_page_fault_is_a_lost_device_context_and_its_kernel_is_the_suspect():
    """The HSA runtime aborts after a GPU page fault (the contract's crash); before this pack the one line read as
    a hang with the program's own code first."""
    d = diagnose([str(DATA / "rocm_tinygrad_memfault.log")])
    cats = [c.category for c in d.root_causes]
    assert d.profile.type == "crash" and d.root_causes[0].rule == "rocm.memory_access_fault"
    assert cats[:2] == ["operator", "library"] and "model" not in cats[:3], cats


def test_the_mps_limit_names_both_the_work_and_the_watermark_setting():
    for name in ("mps_oom_watermark_env_not_kwarg_llamaindex.log", "mps_oom_watermark_fooocus_launch_env.log"):
        d = diagnose([str(DATA / name)])
        causes = {c.category: c for c in d.root_causes if c.rule == "mps.oom"}
        assert d.profile.type == "oom" and set(causes) == {"resource", "config"}, d.root_causes
        assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in " ".join(causes["config"].fix_hints)
        assert "before the process starts" in " ".join(causes["config"].fix_hints)


def test_miopen_database_warnings_alone_are_no_failure():
    """MIOpen's database warnings also appear in runs that go on to succeed (it falls back to searching):
    they name a cause only beside a failure."""
    text = (DATA / "rocm_miopen_sqlite_ioerr.log").read_text()
    clean = diagnose(texts={"stderr": text + "step 100 loss 0.12\ndone\n"}, exit_code=0)
    assert not [c for c in clean.root_causes if c.rule == "miopen.user_db_unwritable"]
    failed = diagnose(texts={"stderr": text}, exit_code=1)
    assert failed.root_causes[0].rule == "miopen.user_db_unwritable"
