"""The second JAX catalogue pack (74-jax-catalogue.toml).

It loads without warnings and replaces no earlier rule; it diagnoses real failures: logs produced for real
on a CPU machine by jax/jaxlib 0.10.2 (the code that produced each log is kept beside it in
tests/data/kb/jax_catalogue/labels.json, flax 0.12.8 for the flax_* logs) and train logs of the thread
corpus (an XLA direct allocation that fails outside JAX's preallocated pool; a glog CHECK failure). When jax is importable the test also produces failures live
and diagnoses their stderr.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.engine.corpus_logs import loaded_rule_ids, train_log
from tests.kb.kb_helpers import check_labelled_log, check_text_alone, run_jax_on_cpu

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "jax_catalogue"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "74-jax-catalogue.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]


def test_the_pack_loads_without_warnings():
    assert {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]} <= loaded_rule_ids()


def test_the_pack_replaces_no_earlier_rule():
    here = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}
    others: set[str] = set()
    for pack in PACK.parent.glob("*.toml"):
        if pack != PACK:
            others |= {r["id"] for r in tomllib.loads(pack.read_text()).get("rule", [])}
    assert not here & others, here & others


def test_every_rule_of_the_pack_has_a_real_log():
    # the kjax2 block (jax.cat3.*) has its own logs: tests/kb/test_jax_families.py
    here = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"] if not r["id"].startswith("jax.cat3.")}
    # a train log below; the plugin rule: a broken plugin install (tests/kb/test_jax_homes.py)
    assert here - {lab["rule"] for lab in LABELS} == {"xla.gpu.platform_alloc_failed", "jax.cat2.plugin_init_failed"}


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_diagnoses_the_real_log(label):
    check_labelled_log(DATA, label)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_diagnoses_the_real_log_from_its_text_alone(label):
    """A scorer may hand over the log only (no exit status): the signature must carry it."""
    check_text_alone(DATA, label)


def test_a_failed_direct_allocation_reads_as_the_pools_setting_not_as_a_big_program():
    """jax_privacy: "RESOURCE_EXHAUSTED: Failed to allocate request for 176.00MiB ... on device ordinal 0"
    is XLA's platform allocator asking the driver directly, outside the 75% pool; the run fitted once
    XLA_PYTHON_CLIENT_MEM_FRACTION was lowered. The pool-OOM rule (jax.oom, resource first) is silenced."""
    diag, label = train_log("jax/jax_privacy_oom_preallocation_mem_fraction")
    rules = [c.rule for c in diag.root_causes]
    assert diag.profile.type == "oom" == label["type"]
    assert diag.root_causes[0].rule == "xla.gpu.platform_alloc_failed", rules
    assert diag.root_causes[0].category == label["category"] == "config"
    assert "jax.oom" not in rules
    assert {"environment", "resource"} <= {c.category for c in diag.root_causes[:3]}
    assert "176.00MiB" in diag.root_causes[0].summary


def test_a_pool_oom_still_reads_as_the_pool_oom():
    """The pool's own message ("Out of memory while trying to allocate") keeps jax.oom's differential."""
    diag, _ = train_log("jax/trax_tpu_hbm_oom_tokens_per_device", "74-jax-catalogue.toml")
    with_pack, _ = train_log("jax/trax_tpu_hbm_oom_tokens_per_device")
    assert [c.rule for c in diag.root_causes] == [c.rule for c in with_pack.root_causes]


@pytest.mark.parametrize("name", ["dyn_slice", "vmap_rank0", "scan_carry", "tree_dict", "flax_invalid_rng"])
def test_it_diagnoses_the_failure_produced_live_when_jax_is_installed(tmp_path, name):
    pytest.importorskip("jax")
    if name.startswith("flax_"):
        pytest.importorskip("flax")
    label = next(lab for lab in LABELS if lab["log"] == f"{name}.log")
    diag = run_jax_on_cpu(tmp_path, label["code"])
    assert diag.root_causes[0].rule == label["rule"], [c.rule for c in diag.root_causes]
    assert diag.root_causes[0].category == label["category"]


def test_a_check_failure_is_read_as_the_library_invariant_next_to_the_specific_reading():
    """caffe: "Check failed: result == ncclSuccess (1 vs. 0)  unhandled cuda error" (a Caffe regression).
    NCCL's meaning of the checked result stays first; the failed CHECK adds the library that asserted it."""
    diag, label = train_log("distributed/caffe_nccl_unhandled_cuda_m2090_regression")
    cats = [c.category for c in diag.root_causes]
    rules = [c.rule for c in diag.root_causes]
    assert diag.root_causes[0].rule == "nccl.result.unhandled_cuda", rules
    assert "glog.check_failed" in rules[:3], rules
    assert label["category"] == "library" and "library" in cats[:3], cats
    alone, _ = train_log("distributed/caffe_nccl_unhandled_cuda_m2090_regression", "74-jax-catalogue.toml")
    assert "library" not in [c.category for c in alone.root_causes[:3]]
