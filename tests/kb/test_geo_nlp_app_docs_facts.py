"""Catalogue facts from the train misses of batches 60 and 61 (#13): Shapely 2.0's multi-part geometries that no
longer iterate, NLTK's data resources installed apart from the package, Streamlit's duplicate widget IDs, PyTorch
Mobile's refusal of the legacy TorchScript format, Cython's struct-size check read as the installed versions before a
library's bug; GitHub's Git LFS quota, Sphinx's extensions that do not import, YOLOv5's label classes beyond the data
YAML's nc. Each is shown on a train log of the thread corpus (a user's paste, its cause confirmed in the thread): the
facts' leading rows are in the train-log table of test_parser_panic_fp8_facts.py, and here what more they state.
Each test fails on the rules from before the commit that added its fact."""

from __future__ import annotations

from tests.kb.kb_helpers import fired, top3, train_diagnosis


def test_yolov5s_own_source_line_of_the_check_is_not_the_failure() -> None:
    """The paste shows the assert's source line ("f'Label class {mlc} exceeds nc={nc} ...'") above the error: only
    the error's numbers make the finding."""
    diag = train_diagnosis("pytorch/yolov5_train_label_class_exceeds_nc_custom_data_yaml")
    top = diag.root_causes[0]
    assert top.rule == "yolov5.label_class_exceeds_nc"
    assert "holds class 2.0, but the dataset has nc=2 classes" in top.summary


def test_the_mobile_loaders_format_refusal_is_no_missing_operator() -> None:
    diag = train_diagnosis("pytorch/pytorch_android_legacy_model_format_not_supported_on_mobile_version_mismatch")
    assert not fired(diag, "torch.not_implemented_for_device")


def test_cythons_size_check_under_a_librarys_own_frames_is_the_installed_versions() -> None:
    """rasterio's Cython module, imported under pytest, finds numpy.ufunc of another size than its header's: every
    frame is the library's, yet the check says the extension was built against another NumPy."""
    diag = train_diagnosis("environment/rasterio_numpy_ufunc_size_changed_build_isolation")
    assert top3(diag)[0] == "environment", [(c.category, c.rule) for c in diag.root_causes[:3]]
