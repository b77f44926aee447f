"""Catalogue facts from the train misses of batches 54-57 (#13), and the table of train logs of the 36th to 38th
passes and the 39th (one per fact: the other tests of the 36th pass's second and third commits' facts are in
test_unknown_exit_and_platform_facts.py and test_link_and_client_facts.py, the 37th pass's in
test_store_profiler_and_signal_line_facts.py and test_geo_nlp_app_docs_facts.py, the 38th's in
test_grpc_rust_shadow_facts.py). Here, the first commit's: argparse's and jsonargparse's usage errors, PyO3's
PanicException, stable-baselines3 given a space of the other gym package, transformers/accelerate spilling weights
to disk, Transformer Engine's FP8 limits, scikit-learn's module paths removed in 0.23/0.24, PyTorch's C++17
requirement for extensions, TensorRT's ONNX parser without an importer for an op, and Windows' error 1455 while
a DLL loads. Each is shown on a train log of the thread corpus (a user's paste, its cause confirmed in the
thread), argparse's also on output of the real interpreter here. Each test fails on the rules from before the
commit that added the fact."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, run_failing, train_log_led_by

# two logs whose symptom the paste does not show: PJRT's one line (the thread says the process died; nothing in the
# line does), and coverage's warnings, labelled of unknown type
UNTYPED = {
    "jax/tpu_libtpu_jaxlib_version_mismatch_pjrt_plugin_args_size",
    "pytest_python/pytest_cov_addopts_wrong_package_no_data_collected",
}


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("pytorch/fcpo_train_argparse_required_model_name_missing", "py.argparse_usage_error"),
        (
            "pytorch/chirodiff_lightningcli_subcommand_after_config_flag_no_action_for_process_position",
            "py.argparse_usage_error",
        ),
        ("pytest_python/polars_scan_parquet_glob_mismatched_schemas_unwrap_panic", "pyo3.panic"),
        ("environment/godot_rl_sb3_2_0_rejects_gym_box_action_space", "sb3.space_of_other_gym_package"),
        ("environment/sinergym_sb3_gym_release_rejects_gymnasium_discrete_space", "sb3.space_of_other_gym_package"),
        ("pytorch/medicalgpt_device_map_disk_offload_insufficient_gpu_memory", "hf.weights_offloaded_to_disk"),
        ("pytorch/transformer_engine_fp8_autocast_on_ampere_rtx3090_compute_capability", "te.fp8_needs_newer_gpu"),
        ("pytorch/transformer_engine_fp8_gemm_dims_not_divisible_by_8_16", "te.fp8_gemm_shape"),
        (
            "environment/strvctvre_pickled_model_needs_removed_sklearn_ensemble_forest_module",
            "sklearn.pickle_of_older_release",
        ),
        ("environment/deepspeed_ops_build_torch_nightly_requires_cxx17", "build.torch_needs_cxx17"),
        ("environment/onnx_tensorrt_no_importer_registered_for_reversesequence", "tensorrt.plugin_not_found"),
        ("pytorch/kair_swinir_train_winerror_1455_paging_file_too_small_shm_dll", "py.windows_commit_limit"),
        # the second commit's (tests/kb/test_unknown_exit_and_platform_facts.py has their other tests)
        (
            "environment/pip_install_tensorboard_errno2_windows_path_over_260_chars_long_paths_disabled",
            "pip.windows_long_path",
        ),
        ("distributed/ray_start_object_store_exceeds_dev_shm_docker", "ray.object_store_exceeds_shm"),
        ("jax/tpu_libtpu_jaxlib_version_mismatch_pjrt_plugin_args_size", "pjrt.struct_size_mismatch"),
        (
            "environment/openchat_flash_attn_varlen_func_undefined_with_flash_attn_v1",
            "flash_attn.guarded_import_missing",
        ),
        ("environment/transformers_keyerror_mistral_outdated_transformers", "hf.auto_config_keyerror"),
        (
            "pytest_python/pytest_qt_qapp_fixture_fatal_python_error_aborted_no_qt_platform_plugin",
            "mpl.qt_platform_plugin",
        ),
        ("distributed/pflowtts_lightning_ddp_unused_params_strategy_flag", "lightning.ddp_unused_parameters"),
        ("pytest_python/pytest_cov_addopts_wrong_package_no_data_collected", "coverage.no_data"),
        # the third commit's (tests/kb/test_link_and_client_facts.py)
        (
            "environment/libtorch_centos7_undefined_reference_c10_error_from_forced_cxx11_abi_flag",
            "build.undefined_reference",
        ),
        (
            "environment/libtorch_qmake_undefined_reference_torch_jit_load_linked_ltorch_not_ltorch_cpu",
            "build.undefined_reference",
        ),
        ("environment/opencv_imshow_not_implemented_binaries_built_without_ui_backend", "opencv.gui_not_implemented"),
        ("pytest_python/chroma_example_uses_removed_openai_chatcompletion_api", "openai.api_removed_in_v1"),
        # the 37th pass's, batches 58-59 (tests/kb/test_store_profiler_and_signal_line_facts.py has their other tests)
        ("distributed/efa_libfabric_cannot_allocate_memory_low_memlock_ulimit", "efa.libfabric_enomem"),
        ("environment/pytorch_profiler_kineto_not_available_windows_torch_1_8_1", "torch.profiler_kineto_unavailable"),
        ("environment/deepcluster_faiss_cpu_build_no_standardgpuresources", "faiss.cpu_build_without_gpu"),
        (
            "pytest_python/localgpt_chromadb_dimensionality_768_vs_index_384_after_embedding_model_change",
            "chromadb.embedding_dimension_mismatch",
        ),
        ("pytorch/open_clip_pretrained_weights_file_not_found_relative_path", "open_clip.pretrained_not_found"),
        ("pytorch/openai_clip_load_sha256_mismatch_incomplete_download", "clip.download_checksum_mismatch"),
        ("pytorch/unsloth_import_gkdtrainer_non_default_argument_syntaxerror", "unsloth.compiled_trainer_failed"),
        ("pytest_python/satellite_leak_detection_h5py_file_signature_not_found_git_lfs_pointer", "hdf5.not_hdf5"),
        # batches 60-61 (tests/kb/test_geo_nlp_app_docs_facts.py)
        ("environment/pudl_shapely2_multipolygon_not_iterable_tests", "shapely.multipart_iteration_removed"),
        ("environment/fmeval_nltk_punkt_tab_lookuperror_after_nltk_update", "nltk.resource_not_found"),
        ("environment/obsidian_brain_nltk_punkt_tab_resource_not_found", "nltk.resource_not_found"),
        ("pytest_python/proteobench_streamlit_duplicate_widget_id_download_button_rerun", "streamlit.duplicate_widget"),
        (
            "pytorch/pytorch_android_legacy_model_format_not_supported_on_mobile_version_mismatch",
            "torch.mobile_legacy_model_format",
        ),
        ("environment/genie2_git_lfs_checkpoint_download_repo_over_data_quota", "git_lfs.quota_exceeded"),
        ("environment/chemtoolagent_git_lfs_checkpoint_smudge_error_lfs_budget_exceeded", "git_lfs.quota_exceeded"),
        (
            "environment/tardis_readthedocs_numpydoc_cannot_import_directive_sphinx_1_7",
            "sphinx.extension_import_failed",
        ),
        ("pytorch/yolov5_train_label_class_exceeds_nc_custom_data_yaml", "yolov5.label_class_exceeds_nc"),
        # older train misses: absl, Keras, pytest's older wordings
        ("jax/functa_jaxline_script_flags_not_parsed_unparsed_flag_access_config", "absl.unparsed_flag_access"),
        ("pytest_python/keras_model_duplicate_layer_name_vgg16_backbone", "keras.duplicate_layer_name"),
        (
            "pytest_python/project_sailor_pytest7_warns_none_removedin8_warning_as_error",
            "pytest.removed_api_called",
        ),
        (
            "pytest_python/pytest_asyncio_010_direct_function_construction_deprecated_pytest54",
            "pytest.node_direct_construction",
        ),
        # the 38th pass's (tests/kb/test_grpc_rust_shadow_facts.py has its other tests)
        ("distributed/flower_grpc_sent_message_larger_than_max_gpt2_client", "grpc.message_larger_than_max"),
        ("pytest_python/polars_prefiltered_parquet_decode_index_out_of_bounds_panic", "rust.panic"),
        ("pytest_python/ruff_linter_panic_invalid_escape_sequence_option_unwrap_none", "rust.panic"),
        ("pytorch/espnet_evaluate_pseudomos_torch_hub_403_rate_limit_no_github_token", "github.api_rate_limit"),
        ("pytorch/tt_forge_mobilenetv2_torch_hub_403_rate_limit_uncached_ci", "github.api_rate_limit"),
        ("environment/pydantic_core_build_pypy311_newer_than_pyo3_max_supported", "build.pyo3_python_out_of_range"),
        (
            "pytest_python/pytest_aiohttp_incompatible_with_pytest_asyncio_0_14_timeout_context_outside_task",
            "aiohttp.timeout_outside_task",
        ),
        ("environment/segment_anything_onnx_export_ort_gpu_build_providers_required", "ort.providers_required"),
        ("environment/f5_tts_gradio_client_bool_not_iterable_pydantic_2_11", "gradio.bool_json_schema"),
        (
            "pytorch/torch_neuron_jit_load_unknown_builtin_op_missing_import",
            "torch.msg.torchscript_custom_op_unregistered",
        ),
        ("pytorch/torch_neuronx_runtime_cannot_init_cores_held_by_stale_notebook", "neuron.runtime_no_cores"),
        (
            "environment/neuron_rtd_container_no_devices_specified_outdated_runtime_base_dkms",
            "neuron.rtd_devices_failed",
        ),
        ("environment/pycoral_edgetpu_model_requires_newer_runtime_version", "edgetpu.runtime_too_old"),
        ("environment/viseron_hailort_driver_library_version_mismatch", "hailort.driver_library_mismatch"),
        ("pytorch/torchscript_torch_tensor_constructor_unknown_builtin_op", "torch.msg.torchscript_builtin_unbound"),
        # the 39th pass's (the rules' real runs: test_kpkg.py, test_torch_binary_catalogue.py)
        ("environment/duckdb_pyodide_wheel_emscripten_abi_mismatch", "pyodide.emscripten_abi_mismatch"),
        ("environment/scipy_pip_build_no_fortran_compiler_windows", "meson.compiler_missing"),
        ("environment/winpython_32bit_scipy_source_build_no_fortran_compiler", "meson.compiler_missing"),
        ("environment/mlagents_unity_python_api_number_mismatch_api9_vs_api4", "mlagents.api_version_mismatch"),
        ("environment/mlagents_python_v05_unity_project_v04_api_number_mismatch", "mlagents.api_version_mismatch"),
        ("environment/paddle_windows_cublas64_dll_not_found_error_126_run_check", "paddle.dynload_not_configured"),
        ("pytorch/ms_swift_grpo_single_card_num_generations_one_rejected", "trl.grpo_generations_divisibility"),
        ("distributed/openr1_grpo_global_batch_not_divisible_by_num_generations", "trl.grpo_generations_divisibility"),
        ("pytorch/qwen2_flash_attention_2_float32_default_dtype_fp16_bf16_only", "flash_attn.dtype_unsupported"),
        ("pytorch/pytorch_vmap_batching_rule_missing_view_dtype", "torch.bin.vmap_no_batching_rule"),
        ("pytest_python/pytesseract_tessdata_dir_placeholder_error_opening_data_file", "tesseract.traineddata_missing"),
        (
            "environment/wsl2_build_20226_cuda_devices_busy_or_unavailable_missing_libdxcore",
            "cuda.err.devices_unavailable",
        ),
    ],
)
def test_a_train_log_reads_as_the_catalogue_says(name: str, rule: str) -> None:
    diag, label = train_log_led_by(name, rule)
    if name not in UNTYPED:
        assert diag.profile.type == label["type"], (diag.profile.type, label["type"])


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--epochs", "ten"], "argument --epochs: invalid int value: 'ten'"),
        (["--epochs"], "argument --epochs: expected one argument"),
        (["--cpu", "--gpu"], "argument --gpu: not allowed with argument --cpu"),
    ],
)
def test_argparse_refusing_a_command_line_is_the_invocation(tmp_path: Path, argv: list[str], words: str) -> None:
    diag, stderr = run_failing(
        tmp_path,
        f"""
        import argparse
        parser = argparse.ArgumentParser(prog="train.py")
        parser.add_argument("--epochs", type=int)
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--cpu", action="store_true")
        group.add_argument("--gpu", action="store_true")
        parser.parse_args({argv!r})
        """,
    )
    assert words in stderr
    top = diag.root_causes[0]
    assert (top.rule, top.category, diag.profile.stage) == ("py.argparse_usage_error", "config", "startup")


def test_sb3_refusing_a_space_its_algorithm_lacks_is_not_the_package_skew() -> None:
    """SB3's same check for a space the algorithm does not take (DQN given a Box): the class names differ, so the
    installed packages are not what it says (the words as SB3's BaseAlgorithm formats them)."""
    text = (
        "AssertionError: The algorithm only supports (<class 'gymnasium.spaces.discrete.Discrete'>,) as action "
        "spaces but Box(-1.0, 1.0, (2,), float32) was provided\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert not fired(diag, "sb3.space_of_other_gym_package")


def test_a_missing_scikit_learn_is_still_a_missing_module(tmp_path: Path) -> None:
    """Only a path below an installed scikit-learn is the old pickle's; scikit-learn itself missing stays the
    install's (the real interpreter without its site-packages, -I -S, so it is missing whatever is installed)."""
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "import sklearn"], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert "No module named 'sklearn'" in proc.stderr
    diag = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    assert not fired(diag, "sklearn.pickle_of_older_release")
    assert diag.root_causes[0].rule == "py.module_not_found"
