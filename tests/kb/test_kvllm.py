"""Pack 44 (vLLM and Ray, the serving engine and the cluster runtime of LLM serving and RL training logs):
each family is shown on output the real tool printed here (tests/data/kb/serving_catalogue/README.md says
how) or on a train log of the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3, train_log_path

LOGS = Path(__file__).resolve().parents[1] / "data" / "kb" / "serving_catalogue"


def test_the_pack_loads_without_warnings():
    ids = {r.id for r in pack_rules("44-serving-catalogue.toml")}
    assert {"vllm.kv_cache_too_small", "ray.node_oom_kill", "ray.worker_died"} <= ids


# log, the rule that must fire, profile type and stage, the category the message documents first
CASES = [
    # vLLM: start-up validation, its own messages
    ("vllm_kv_cache", "vllm.kv_cache_too_small", "oom", "startup", "config"),
    ("vllm_no_blocks", "vllm.no_cache_blocks", "oom", "startup", "config"),
    ("vllm_free_mem", "vllm.free_memory_below_utilization", "oom", "startup", "resource"),
    ("vllm_tp_heads", "vllm.tp_heads_not_divisible", "runtime_error", "startup", "config"),
    ("vllm_unknown_arch", "vllm.architecture_not_supported", "runtime_error", "startup", "environment"),
    ("vllm_llm_cpu", "vllm.no_platform_detected", "runtime_error", "startup", "environment"),
    ("vllm_long_max_len", "vllm.max_model_len_setting", "runtime_error", "startup", "config"),
    ("vllm_batched_tokens", "vllm.max_model_len_setting", "runtime_error", "startup", "config"),
    # the message names max_model_len; the length words of the message lift the inputs (dataset) just above it
    ("vllm_prompt_too_long", "vllm.prompt_too_long", "runtime_error", "runtime", "dataset"),
    # a worker's failure relayed by the engine core: vllm._C never loaded (a source tree without its build)
    ("vllm_engine_core_no_c_ops", "vllm.compiled_ops_missing", "runtime_error", "startup", "environment"),
    # Ray: its exceptions and the raylet's reports
    ("ray_node_oom", "ray.node_oom_kill", "oom", "runtime", "resource"),
    ("ray_worker_crash", "ray.worker_died", "crash", "runtime", "resource"),
    ("ray_actor_died", "ray.worker_died", "crash", "runtime", "resource"),
    ("ray_infeasible", "ray.resource_infeasible", "hang", "runtime", "resource"),
    ("ray_get_timeout", "ray.get_timeout", "hang", "runtime", "resource"),
    ("ray_connect_auto", "ray.no_running_cluster", "runtime_error", "startup", "environment"),
    ("ray_runtime_env_setup", "ray.runtime_env_setup", "runtime_error", "startup", "environment"),
]


@pytest.mark.parametrize(("name", "rule", "type_", "stage", "category"), CASES, ids=[c[0] for c in CASES])
def test_each_family_reads_as_its_message_documents(name, rule, type_, stage, category):
    d = diagnose([str(LOGS / f"{name}.log")])
    cats = [c.category for c in d.root_causes]
    assert fired(d, rule), [c.rule for c in d.root_causes]
    assert (d.profile.type, d.profile.stage) == (type_, stage), cats
    assert cats[0] == category, list(zip([c.rule for c in d.root_causes], cats, strict=True))
    assert d.root_causes[0].fix_hints


def test_a_setting_named_by_the_message_comes_with_the_resource_beside_it():
    """The KV-cache checks name the setting to change (max_model_len, gpu_memory_utilization): config first,
    the GPU's size second; a prompt over max_model_len: the setting and the inputs' length, the first two."""
    for name, second in (("vllm_kv_cache", "resource"), ("vllm_no_blocks", "resource")):
        assert top3(diagnose([str(LOGS / f"{name}.log")]))[:2] == ["config", second], name
    assert set(top3(diagnose([str(LOGS / "vllm_prompt_too_long.log")]))[:2]) == {"config", "dataset"}


def test_the_kv_cache_rule_reads_the_numbers_of_the_message():
    d = diagnose([str(LOGS / "vllm_kv_cache.log")])
    top = d.root_causes[0]
    assert top.rule == "vllm.kv_cache_too_small" and "131072" in top.summary


def test_rays_list_of_causes_is_not_a_segfault():
    """The raylet's report lists SIGSEGV among possible causes; that hint is not a segmentation fault."""
    for name in ("ray_worker_crash", "ray_actor_died"):
        d = diagnose([str(LOGS / f"{name}.log")])
        assert not fired(d, "proc.sigsegv"), name


def test_the_memory_monitor_kill_is_not_read_as_a_cuda_oom():
    d = diagnose([str(LOGS / "ray_node_oom.log")])
    assert d.root_causes[0].rule == "ray.node_oom_kill"
    assert not fired(d, "ray.worker_died")


def test_an_actor_whose_constructor_raised_is_read_as_that_exception():
    """ActorDiedError "because of an error raised in its creation task" wraps the user's exception: no Ray rule
    takes it over (the FileNotFoundError of __init__ decides)."""
    d = diagnose([str(LOGS / "ray_actor_init.log")])
    assert not any((c.rule or "").startswith("ray.") for c in d.root_causes[:1])
    assert d.root_causes[0].category == "config"


def test_the_engine_cores_relay_is_only_a_hint():
    """ "Engine core initialization failed. See root cause above" relays the worker's failure: it names the stage,
    never a cause; the worker's own lines (vllm._C not loaded) decide."""
    d = diagnose([str(LOGS / "vllm_engine_core_no_c_ops.log")])
    assert not fired(d, "vllm.engine_startup_relay")
    assert d.root_causes[0].rule == "vllm.compiled_ops_missing"


def test_the_vllm_c_import_warning_alone_is_no_cause():
    """Train log: vllm-ascend runs with "Failed to import from vllm._C" printed (the plugin brings its own
    operators); its failure is a TypeError of the plugin, and the warning takes nothing over."""
    d = diagnose([str(train_log_path("ascend/vllm_ascend_embedding_pooling_unsupported_metadata_builder"))])
    assert not fired(d, "vllm.compiled_ops_missing")
    assert d.root_causes[0].category != "environment"
