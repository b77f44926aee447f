"""The TensorRT catalogue (79-tensorrt-catalogue.toml): a serialized engine that does not fit the runtime loading
it (another TensorRT release, a GPU of another compute capability, a TensorRT-LLM engine without a tensor its
runtime binds), an op the ONNX parser has no importer or plugin for, and a model file the parser could read
neither as a binary model nor as protobuf text. Each rule is shown on a train log of the
thread corpus (a user's paste, its cause confirmed in the thread); before this pack the version and device
mismatches read as the installed versions or a library, and the engine's own home came second or not at all."""

from __future__ import annotations

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import own_pack_ids, top3, train_log_with_rules

PACK = "79-tensorrt-catalogue.toml"

SHOWN_ON = {
    "tensorrt.engine_version_mismatch": "environment/tensorrt_engine_deserialize_version_tag_mismatch_jetson_docker",
    "tensorrt.engine_other_device": "pytest_python/tensorrt_engine_plan_built_for_other_gpu_compute_capability",
    "tensorrt.plugin_not_found": "pytest_python/tensorrt_8_0_round_op_unsupported_plugin_fallback",
    "trtllm.engine_lacks_input_tensor": "pytorch/trtllm_engine_stale_missing_host_max_kv_cache_length",
    "tensorrt.onnx_file_unparsable": "pytest_python/trt_pointpillars_onnx_gitlfs_pointer",
}


def test_the_pack_loads_its_rules_are_its_own_and_each_is_shown_on_a_train_log():
    ids = own_pack_ids(PACK)
    assert ids == set(SHOWN_ON)


# the thread's label of the Round log names TensorRT itself (backend); the contract's `operator` is "a kernel or
# operator implementation or its absence", which is what the parser's refusal states: that rule is read below
LABELLED_AS_READ = sorted(set(SHOWN_ON) - {"tensorrt.plugin_not_found"})


@pytest.mark.parametrize("rule", LABELLED_AS_READ)
def test_each_rule_puts_the_threads_confirmed_home_first(rule):
    diag, label = train_log_with_rules(SHOWN_ON[rule])
    assert diag.root_causes[0].rule == rule, [(c.rule, c.category) for c in diag.root_causes[:3]]
    assert top3(diag)[0] == label["category"]
    # a refusal of the file's header, not a failing device runtime (two of the threads typed it backend)
    assert diag.profile.type == "runtime_error"


def test_an_op_without_importer_or_plugin_is_the_operators_absence():
    diag, label = train_log_with_rules(SHOWN_ON["tensorrt.plugin_not_found"])
    assert diag.root_causes[0].rule == "tensorrt.plugin_not_found"
    assert top3(diag) == ["operator", "environment", "model"]
    assert diag.profile.type == label["type"] == "unsupported_op"
    assert "(Round)" in diag.root_causes[0].summary


def test_the_versions_in_the_refusal_fill_the_summary():
    """The runtime names both versions; the summary says which is the engine's and which is this runtime's."""
    diag, _ = train_log_with_rules(SHOWN_ON["tensorrt.engine_version_mismatch"])
    first = diag.root_causes[0]
    assert "serialized version 43" in first.summary and "this runtime 0" in first.summary
    diag, _ = train_log_with_rules(SHOWN_ON["tensorrt.engine_other_device"])
    assert "compute capability 7.5, and this GPU is 6.1" in diag.root_causes[0].summary


def test_a_deserialization_failure_without_the_version_line_is_not_read_as_a_version_mismatch():
    """ "Engine deserialization failed" alone also follows a truncated or foreign file: the version rule needs the
    runtime's version words, so it stays silent and no version is invented."""
    text = "[TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: Internal Error (Engine deserialization failed.)\n"
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert not any(c.rule.startswith("tensorrt.engine_") for c in diag.root_causes)


def test_the_older_runtimes_wording_of_a_version_mismatch_is_read_too():
    """TensorRT 8.x's header check says it in words of its own ("expecting library version X got Y"): the same
    fact, the same home."""
    text = (
        "[TRT] [E] 6: The engine plan file is not compatible with this version of TensorRT, expecting library "
        "version 8.6.1.6 got 8.5.3.1, please rebuild.\n"
        "[TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::65] Error Code 4: Internal Error (Engine deserialization failed.)\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    first = diag.root_causes[0]
    assert first.rule == "tensorrt.engine_version_mismatch" and first.category == "checkpoint"
    assert "serialized version 8.5.3.1, this runtime 8.6.1.6" in first.summary


def test_a_model_file_neither_reading_parses_is_the_file_whatever_the_text_reading_stopped_at():
    """onnx-tensorrt reads the file as a binary model, then as protobuf text: the text reading's complaint names
    what it met (a Git LFS pointer's field 'version'; the control bytes of a model cut short), the same fact
    either way. Both threads confirmed the file (a pointer where the 19 MB model belonged; an archive that did
    not unpack whole); before this rule both read as the installed versions, the stage as the run."""
    for name in (
        "pytest_python/trt_pointpillars_onnx_gitlfs_pointer",
        "pytest_python/trt_rangenet_onnx_truncated_archive",
    ):
        diag, label = train_log_with_rules(name)
        assert diag.root_causes[0].rule == "tensorrt.onnx_file_unparsable", name
        assert top3(diag)[:2] == [label["category"], "config"] == ["checkpoint", "config"]
        assert diag.profile.stage == label["stage"] == "checkpoint"
        assert "()" not in diag.root_causes[0].summary  # the path is named only where the matched line names it


def test_a_parsed_model_that_fails_later_is_not_read_as_an_unreadable_file():
    """The parser's per-node errors (an op without importer) follow a file that parsed: no unreadable-file reading."""
    text = (
        "[TRT] [E] 3: getPluginCreator could not find plugin: Round version: 1\n"
        "[TRT] [E] ModelImporter.cpp:776: ERROR: builtin_op_importers.cpp:4870 In function importFallbackPluginImporter:\n"
        '[8] Assertion failed: creator && "Plugin not found, are the plugin name, version, and namespace correct?"\n'
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert all(c.rule != "tensorrt.onnx_file_unparsable" for c in diag.root_causes)
