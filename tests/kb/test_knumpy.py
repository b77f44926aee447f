"""The NumPy / pandas / scikit-learn second catalogue (37-numpy-pandas-catalogue.toml, and NumPy 2's "`np.X` was
removed in the NumPy 2.0 release" read by 45-ecosystem's removed-alias rule): the pack loads cleanly, and each of
its rules recognises real failures — train logs of the thread corpus and output captured from NumPy 2.4.6,
pandas 3.1.1 and scikit-learn 1.9.1 on CPython 3.11 (``tests/data/kb/knumpy``: ``NAME.out`` is what ``job.py``
printed, ``jobs.json`` holds each job's source; the interpreter prefix is rewritten to ``/usr/local``). The jobs
run again live where an interpreter with the three libraries is at hand (``FAILDIAG_SCIPY_PYTHON``, else
``python3`` on PATH)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    check_pack_rules,
    fired,
    ids_in_other_packs,
    pack_rules,
    rules_dir,
    top3,
    train_log_with_rules,
)

PACK = "37-numpy-pandas-catalogue.toml"
CAPTURED = Path(__file__).resolve().parents[1] / "data" / "kb" / "knumpy"
JOBS: dict[str, str] = json.loads((CAPTURED / "jobs.json").read_text())


def _check(diag, rule_id: str, category: str, *, first: bool) -> None:
    cats = top3(diag)
    rules = [c.rule for c in diag.root_causes]
    assert fired(diag, rule_id), (rule_id, rules)
    assert diag.profile.type == "runtime_error", (diag.profile.type, rules)
    if first:
        top = diag.root_causes[0]
        assert (top.rule, top.category) == (rule_id, category), list(
            zip(rules, [c.category for c in diag.root_causes], strict=True)
        )
        assert top.fix_hints
    else:
        assert category in cats, (category, cats, rules)


# --------------------------------------------------------------------------------------------- the pack


def test_it_loads_the_pack_without_a_warning():
    mine = pack_rules(PACK)
    families = {lib: sum(r.id.startswith(lib + ".") for r in mine) for lib in ("numpy", "pandas", "sklearn")}
    assert sum(families.values()) == len(mine), [r.id for r in mine]
    assert families == {"numpy": 12, "pandas": 17, "sklearn": 16}, families  # removed APIs: 42-removed-apis.toml
    check_pack_rules(mine)


def test_no_rule_of_the_pack_replaces_another_packs_rule():
    assert not ids_in_other_packs(rules_dir() / PACK) & {r.id for r in pack_rules(PACK)}


# ---------------------------------------------------------------------- train logs of the thread corpus

TRAIN = {
    # pandas 2.0 removed DataFrame.append; the reporter's script ran under pandas 2.0.1 (environment)
    "pytest_python/py_cpm_pandas2_dataframe_append_removed": ("removed.pandas", "environment"),
    # seabreeze's own frame asks for np.float_, removed in NumPy 2.0 (fixed upstream: library)
    "pytest_python/seabreeze_np_float_removed_numpy2": ("py.numpy_removed_alias", "library"),
}


@pytest.mark.parametrize("log_id", sorted(TRAIN))
def test_it_diagnoses_a_train_log(log_id: str):
    rule_id, category = TRAIN[log_id]
    diag, label = train_log_with_rules(log_id)
    assert label["category"] == category
    _check(diag, rule_id, category, first=True)


# ------------------------------------------------------------ real output of NumPy 2.4 / pandas 3.1 / sklearn 1.9

CASES = {
    # file: (rule, category, must the category be the first?)
    "np_copy_false": ("numpy.copy_false_numpy2", "environment", True),
    "np_index_float": ("numpy.index_type", "model", True),
    "np_index_scalar_array": ("numpy.index_type", "model", True),
    "np_too_many_indices": ("numpy.too_many_indices", "model", True),
    "np_boolean_index": ("numpy.boolean_index_size", "model", True),
    "np_empty_reduction": ("numpy.empty_reduction", "dataset", True),
    "np_axis_error": ("numpy.axis_error", "model", True),
    "np_scalar_conversion": ("numpy.scalar_conversion", "model", True),
    "np_cast_array_data": ("numpy.cast_array_data", "model", True),
    "np_negative_dims": ("numpy.negative_dimensions", "model", True),
    # a numpy whose compiled core is missing (the .so deleted from a copy of the wheel), imported for real
    "np_choice_larger": ("numpy.sample_larger_than_population", "dataset", True),
    "np_choice_p": ("numpy.choice_probabilities", "model", True),
    "np_c_ext_failed": ("numpy.c_extensions_failed", "environment", True),
    # the program's own frame asks for np.float_: its code, the installed numpy newer the alternative
    "np_removed_float_": ("py.numpy_removed_alias", "model", True),
    "pd_truth_value": ("pandas.truth_value", "model", True),
    "pd_append_removed": ("removed.pandas", "environment", True),
    "pd_scalar_values": ("pandas.frame_construction", "model", True),
    "pd_arrays_same_length": ("pandas.frame_construction", "model", True),
    "pd_shape_passed": ("pandas.frame_construction", "model", True),
    "pd_merge_no_common": ("pandas.merge_columns", "model", True),
    "pd_join_overlap": ("pandas.merge_columns", "model", True),
    "pd_columns_key": ("pandas.columns_key_length", "model", True),
    "pd_no_objects": ("pandas.no_objects_to_concatenate", "dataset", True),
    "pd_datetime_format": ("pandas.datetime_parse", "dataset", True),
    "pd_tz_compare": ("pandas.tz_naive_aware", "model", True),
    "pd_parquet_engine": ("pandas.parquet_engine", "environment", True),
    "pd_excel_format": ("pandas.excel_format_unknown", "dataset", True),
    "pd_usecols": ("pandas.usecols_missing", "dataset", True),
    "pd_mask_na": ("pandas.mask_with_na", "dataset", True),
    "pd_agg_object": ("pandas.aggregate_non_numeric", "model", True),
    "pd_agg_str": ("pandas.aggregate_non_numeric", "model", True),
    "pd_pivot_dup": ("pandas.pivot_duplicates", "dataset", True),
    "pd_unalignable": ("pandas.unalignable_mask", "model", True),
    "pd_categorical_new": ("pandas.categorical_new_category", "model", True),
    "pd_mixed_tz": ("pandas.mixed_timezones", "dataset", True),
    # xlrd 2.0.2 (installed beside pandas) handed an .xlsx workbook
    "pd_xlrd_xlsx": ("pandas.xlrd_xlsx", "environment", True),
    "sk_metric_mix": ("sklearn.metric_target_mix", "model", True),
    "sk_average_binary": ("sklearn.average_setting", "model", True),
    "sk_unseen_labels": ("sklearn.unseen_categories", "dataset", True),
    "sk_unknown_categories": ("sklearn.unseen_categories", "dataset", True),
    "sk_invalid_param": ("sklearn.invalid_parameter", "config", True),
    # max_features='auto' was removed in 1.3: the installed release is among the first three
    "sk_param_validation": ("sklearn.invalid_parameter", "environment", False),
    "sk_empty_split": ("sklearn.split_too_small", "dataset", True),
    "sk_least_populated": ("sklearn.split_too_small", "dataset", True),
    "sk_n_splits": ("sklearn.split_too_small", "dataset", True),
    "sk_dim": ("sklearn.input_rank", "model", True),
    "sk_y_2d": ("sklearn.input_rank", "model", True),
    "sk_empty_vocab": ("sklearn.empty_vocabulary", "dataset", True),
    "sk_load_boston": ("removed.sklearn", "environment", True),
    "sk_get_feature_names": ("removed.sklearn", "environment", True),
    "sk_n_neighbors": ("sklearn.n_neighbors", "dataset", True),
    "sk_sparse_dense": ("sklearn.sparse_input", "model", True),
    "sk_solver_penalty": ("sklearn.solver_penalty", "config", True),
    "sk_pos_label": ("sklearn.pos_label", "model", True),
    "sk_target_type": ("sklearn.target_type", "model", True),
    "sk_pruning": ("sklearn.vectorizer_pruning", "config", True),
    "sk_min_df": ("sklearn.vectorizer_pruning", "config", True),
    "sk_negative_nb": ("sklearn.negative_values", "model", True),
    "sk_n_components": ("sklearn.n_components", "config", True),
    "sk_multi_class": ("sklearn.multiclass_scores", "model", True),
}


def _captured(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose(texts={"stderr.txt": (CAPTURED / f"{name}.out").read_text()}, exit_code=1)


def test_every_captured_output_is_a_case_and_every_rule_has_one():
    assert {p.stem for p in CAPTURED.glob("*.out")} == set(CASES)
    assert set(JOBS) == set(CASES) - {"np_c_ext_failed"}
    assert {r.id for r in pack_rules(PACK)} <= {rule for rule, _, _ in CASES.values()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_it_diagnoses_captured_output(name: str):
    rule_id, category, first = CASES[name]
    _check(_captured(name), rule_id, category, first=first)


def test_without_the_pack_no_other_rule_reads_these_families():
    """The families are new: with the pack's findings dropped (as ``bench/ablate_rules.py`` drops them) no
    other rule explains the captured outputs, only the differential of the exception's class or a generic
    import rule."""
    from bench.ablate_rules import dropping

    mine = {r.id for r in pack_rules(PACK)}
    generic = ("differential:", "py.module_not_found", "py.import_error", "numpy.core_renamed_pickle")
    with dropping(mine):
        for name, (rule_id, _, _) in CASES.items():
            if rule_id in mine:
                diag = _captured(name)
                assert all((c.rule or "").startswith(generic) for c in diag.root_causes), (
                    name,
                    [c.rule for c in diag.root_causes],
                )


def test_data_reading_families_name_the_data_stage():
    for name in ("pd_usecols", "pd_excel_format", "sk_empty_split"):
        assert _captured(name).profile.stage == "data", name
    assert _captured("sk_metric_mix").profile.stage == "evaluation"
    assert _captured("np_c_ext_failed").profile.stage == "startup"


def test_a_removed_method_called_by_the_program_puts_the_installed_release_before_its_code():
    diag = _captured("pd_append_removed")
    assert top3(diag)[:2] == ["environment", "model"], top3(diag)


# ----------------------------------------------------------------------- live, where the libraries are installed


def _python_with_the_libraries() -> str | None:
    for exe in (os.environ.get("FAILDIAG_SCIPY_PYTHON"), shutil.which("python3"), shutil.which("python")):
        if (
            exe
            and subprocess.run(
                [exe, "-c", "import numpy, pandas, sklearn"], capture_output=True, timeout=120
            ).returncode
            == 0
        ):
            return exe
    return None


@pytest.mark.parametrize("name", ["np_too_many_indices", "pd_no_objects", "sk_metric_mix", "sk_unseen_labels"])
def test_it_diagnoses_the_jobs_live(name: str, tmp_path: Path):
    exe = _python_with_the_libraries()
    if exe is None:
        pytest.skip("no interpreter with numpy, pandas and scikit-learn (optional, not dependencies)")
    (tmp_path / "job.py").write_text(JOBS[name])
    p = subprocess.run([exe, "job.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode != 0, p.stdout + p.stderr
    rule_id, category, first = CASES[name]
    diag = diagnose(texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode)
    _check(diag, rule_id, category, first=first)
