"""kcv: computer-vision and tabular frameworks' own messages (rules/59-cv-tabular-catalogue.toml).

Each fixture under tests/kb/kcv/ is what the real library printed when run on this machine's CPU (installed from
PyPI for the run; detectron2 from its source tree; paths redacted to /home/user and one site-packages): the
scenario is in the test's name. Each rule is shown on at least one of them, and on train logs where the corpus
has one."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, pack_rules, top3, train_log_led_by, train_log_path

DATA = Path(__file__).parent / "kcv"
PACK = "59-cv-tabular-catalogue.toml"

# fixture, rule, first category (either of a|b), type
CASES = [
    ("mm_registry", "openmmlab.registry_key_missing", "config", "runtime_error"),
    ("mm_notype", "openmmlab.cfg_without_type", "config", "runtime_error"),
    ("mm_dup", "openmmlab.registry_duplicate", "model", "runtime_error"),
    ("fvcore_dup", "openmmlab.registry_duplicate", "model", "runtime_error"),
    ("mmdet_version", "openmmlab.version_assert", "environment", "runtime_error"),
    ("mmcv_ext", "mmcv.ext_missing", "environment", "runtime_error"),
    ("mm_cfgattr", "openmmlab.configdict_missing_key", "config", "runtime_error"),
    ("mm_cfgsyntax", "openmmlab.config_file_invalid", "config", "runtime_error"),
    ("mm_cfginherit", "openmmlab.config_file_invalid", "config", "runtime_error"),
    ("mm_build_kwarg", "openmmlab.build_init_signature", "config", "runtime_error"),
    ("fvcore_reg", "detectron2.registry_key_missing", "config", "runtime_error"),
    ("yacs_key", "yacs.non_existent_config_key", "config", "runtime_error"),
    ("d2_data", "detectron2.dataset_not_registered", "config", "runtime_error"),
    ("d2_meta", "detectron2.metadata_conflict", "model", "runtime_error"),
    ("d2_c", "detectron2.c_extension_missing", "environment", "runtime_error"),
    ("d2_cfg", "detectron2.config_file_missing", "config", "runtime_error"),
    ("timm_unknown", "timm.unknown_model", "config", "runtime_error"),
    ("timm_pretrained", "timm.pretrained_unavailable", "config", "runtime_error"),
    ("timm_noweights", "timm.pretrained_unavailable", "config", "runtime_error"),
    ("paddle_fluid", "paddle.fluid_removed", "environment", "runtime_error"),
    ("paddle_gpu", "paddle.not_compiled_with_cuda", "environment", "runtime_error"),
    ("paddle_shape", "paddle.enforce_invalid_argument", "model", "runtime_error"),
    ("paddle_oom", "paddle.out_of_memory", "resource", "oom"),  # Python's MemoryError rule leads, same home
    ("ul_device", "ultralytics.invalid_cuda_device", "environment", "runtime_error"),
    ("ul_data", "ultralytics.dataset_yaml_invalid", "config|dataset", "runtime_error"),  # the files were never made
    ("xgb_classes", "xgboost.label_invalid", "dataset", "runtime_error"),
    ("xgb_numclass", "xgboost.label_invalid", "dataset", "runtime_error"),
    ("xgb_logistic", "xgboost.label_invalid", "dataset", "runtime_error"),
    ("xgb_features", "xgboost.feature_mismatch", "dataset", "runtime_error"),
    ("xgb_dtypes", "xgboost.dataframe_dtypes", "dataset", "runtime_error"),
    ("xgb_gpu", "xgboost.not_compiled_with_gpu", "environment", "runtime_error"),
    ("cb_cat", "catboost.num_feature_not_float", "config", "runtime_error"),
    ("cb_target", "catboost.target_single_value", "dataset", "runtime_error"),
    ("lgb_param", "lightgbm.parameter_check", "config", "runtime_error"),
    ("lgb_obj", "lightgbm.parameter_check", "config", "runtime_error"),
    ("xgb_param", "xgboost.parameter_invalid", "config", "runtime_error"),
    ("xgb_obj", "xgboost.parameter_invalid", "config", "runtime_error"),
    ("lgb_cuda", "lightgbm.tree_learner_not_built", "environment", "runtime_error"),
    ("lgb_label", "lightgbm.label_out_of_range", "dataset", "runtime_error"),
    ("lgb_file", "lightgbm.data_file", "config", "runtime_error"),
    ("lgb_reuse", "lightgbm.dataset_changed_after_construct", "model", "runtime_error"),
    ("wandb_nokey", "wandb.no_api_key", "config", "runtime_error"),
    ("wandb_401", "wandb.auth_denied", "config", "runtime_error"),
    ("wandb_timeout", "wandb.init_timeout", "environment", "runtime_error"),
    ("wandb_preinit", "wandb.used_before_init", "model", "runtime_error"),
    ("tb_version", "tensorboard.version_required", "environment", "runtime_error"),
    ("distutils_version", "tensorboard.distutils_version_removed", "environment", "runtime_error"),
]


@pytest.mark.parametrize(("log", "rule", "category", "typ"), CASES, ids=[c[0] for c in CASES])
def test_real_run_names_its_home(log: str, rule: str, category: str, typ: str) -> None:
    diag = diagnose([str(DATA / f"{log}.log")], exit_code=1)
    causes = [(c.rule, c.category) for c in diag.root_causes[:4]]
    assert fired(diag, rule), causes
    top = diag.root_causes[0]
    assert top.category in category.split("|"), causes
    assert top.rule == rule or log == "paddle_oom", causes
    assert top.fix_hints
    assert diag.profile.type == typ


# rules whose message no installable package prints here: YOLOv3/YOLOv5's train.py asserts on the labels (the
# repositories need torchvision's compiled ops, which no wheel for this machine's torch 2.13 CPU build has); they
# are shown on the train logs that print them
TRAIN_SHOWN = {
    "ultralytics.label_class_exceeds_nc": [
        "pytorch/yolov3_label_class_exceeds_nc_corrupted_annotation_file",
        "pytorch/yolov5_obb_label_class_exceeds_nc",
    ],
}


def test_every_rule_of_the_pack_is_shown_on_a_real_run() -> None:
    shown = {c[1] for c in CASES} | set(TRAIN_SHOWN)
    assert {r.id for r in pack_rules(PACK)} <= shown


@pytest.mark.parametrize(("rule", "name"), [(r, n) for r, names in TRAIN_SHOWN.items() for n in names])
def test_a_rule_without_a_local_run_is_shown_on_train_logs(rule: str, name: str) -> None:
    train_log_led_by(name, rule)


def test_the_package_s_label_warning_does_not_lead_another_failure() -> None:
    """ultralytics 8.3 catches its label check and only warns ("ignoring corrupt image/label: Label class 5 exceeds
    dataset class count 2"); this real run then failed on its torchvision build, which stays first."""
    diag = diagnose([str(DATA / "ul_label_warning.log")], exit_code=1)
    assert not fired(diag, "ultralytics.label_class_exceeds_nc")
    assert diag.root_causes[0].rule == "torch.vision_audio_mismatch"
    assert top3(diag)[0] == "environment"


def test_paddle_fluid_removed_on_a_train_log() -> None:
    diag = diagnose([str(train_log_path("environment/paddleocr_paddle_fluid_removed_old_paddleocr"))], exit_code=1)
    assert fired(diag, "paddle.fluid_removed")
    assert top3(diag)[0] == "environment"


def test_plain_init_signature_error_is_not_openmmlab_s_wrapper(tmp_path: Path) -> None:
    """Python's own `X.__init__() got an unexpected keyword argument` (no build_from_cfg prefix) is not the
    config's key: the OpenMMLab rule must not read it."""
    log = tmp_path / "plain.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 9, in <module>\n'
        "    model = TinyNet(depth=2, pretrained='w.pth')\n"
        "TypeError: TinyNet.__init__() got an unexpected keyword argument 'pretrained'\n"
    )
    assert not fired(diagnose([str(log)], exit_code=1), "openmmlab.build_init_signature")
