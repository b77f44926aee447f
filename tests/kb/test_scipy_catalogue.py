"""The scientific-Python catalogue pack (36-scipy-catalogue.toml): it loads cleanly, and its rules recognise
real failures — train logs of the thread corpus (NumPy ABI, h5py, Pillow, scikit-learn, numpy.testing) and
output captured from NumPy 2.4 / SciPy 1.17 / tkinter on CPython 3.11 and from gcc (``tests/data/kb/scipy_catalogue``,
the interpreter prefix rewritten to ``/usr/local``), re-run live when an interpreter with NumPy is at hand."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_pack_rules, fired, ids_in_other_packs, pack_rules, rules_dir, top3

PACK = "36-scipy-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURED = DATA / "kb" / "scipy_catalogue"
THREADS = DATA / "corpus" / "threads"


def _check(diag, rule_id: str, type_: str, category: str, *, first: bool) -> None:
    cats = top3(diag)
    rules = [c.rule for c in diag.root_causes]
    assert fired(diag, rule_id), (rule_id, rules)
    assert diag.profile.type == type_, (diag.profile.type, rules)
    if first:
        assert diag.root_causes[0].category == category, (category, cats, rules)
    else:
        assert category in cats, (category, cats, rules)


# --------------------------------------------------------------------------------------------- the pack


def test_it_loads_the_pack_without_a_warning():
    mine = pack_rules(PACK)
    assert len(mine) >= 60
    prefixes = {r.id.split(".")[0] for r in mine}
    assert prefixes <= {"numpy", "pandas", "sklearn", "scipy", "hdf5", "pil", "mpl", "numba", "cython"}, prefixes
    check_pack_rules(mine)


def test_no_rule_of_the_pack_replaces_another_packs_rule():
    assert not ids_in_other_packs(rules_dir() / PACK) & {r.id for r in pack_rules(PACK)}


# ---------------------------------------------------------------------- train logs of the thread corpus

TRAIN = {
    # (log id, rule, type, category, must the category be the first?)
    "pytest_python/py_h5py_file_signature_not_found_malformed_h5ad_input": (
        "hdf5.not_hdf5",
        "runtime_error",
        "dataset",
        True,
    ),
    "pytest_python/py_sklearn_input_contains_nan_excel_blank_spaces_in_dataset": (
        "sklearn.non_finite",
        "runtime_error",
        "dataset",
        True,
    ),
    "pytest_python/py_pytest_arrays_not_equal_float_noise_exact_compare_in_test": (
        "numpy.testing.float_noise",
        "runtime_error",
        "test_code",
        True,
    ),
    "pytest_python/py_pil_cannot_import_imaging_stale_pil_pillow_dirs_in_site_packages": (
        "pil.imaging_import",
        "runtime_error",
        "environment",
        True,
    ),
    "pytest_python/xarray_open_dataset_netcdf_hdf_error_corrupted_file": (
        "hdf5.netcdf_hdf_error",
        "runtime_error",
        "dataset",
        True,
    ),
    # the catalogue's second reading of the NumPy ABI break: the release was built against the other NumPy
    "pytest_python/py_import_dtype_size_changed_vegas_wheel_built_against_numpy1": (
        "numpy.abi_packaging",
        "runtime_error",
        "library",
        False,
    ),
}


def test_the_logs_used_here_are_train_logs():
    split = json.loads((THREADS / "split.json").read_text())["split"]
    assert all(split.get(k) == "train" for k in TRAIN), {k: split.get(k) for k in TRAIN}


@pytest.mark.parametrize("log_id", sorted(TRAIN), ids=lambda k: k.split("/")[-1])
def test_it_diagnoses_a_train_log(log_id: str):
    rule_id, type_, category, first = TRAIN[log_id]
    diag = diagnose([str(THREADS / f"{log_id}.log")])
    _check(diag, rule_id, type_, category, first=first)


def test_data_reading_messages_put_the_failure_in_the_data_stage():
    for log_id in (
        "pytest_python/py_h5py_file_signature_not_found_malformed_h5ad_input",
        "pytest_python/py_sklearn_input_contains_nan_excel_blank_spaces_in_dataset",
    ):
        assert diagnose([str(THREADS / f"{log_id}.log")]).profile.stage == "data", log_id


def test_a_rounding_level_difference_points_at_the_test_and_a_real_difference_does_not():
    """numpy.testing's report with a relative difference at float64 rounding level names the test's exact
    comparison; the same report with a large difference leaves the code under test first."""
    noise = (THREADS / "pytest_python/py_pytest_arrays_not_equal_float_noise_exact_compare_in_test.log").read_text()
    assert "e-16" in noise
    real = noise.replace("Max relative difference: 2.11475965e-16", "Max relative difference: 0.35")
    real = real.replace("Max absolute difference: 2.22044605e-16", "Max absolute difference: 0.41")
    d_noise = diagnose(texts={"stdout.txt": noise}, exit_code=1)
    d_real = diagnose(texts={"stdout.txt": real}, exit_code=1)
    assert d_noise.root_causes[0].category == "test_code"
    assert not fired(d_real, "numpy.testing.float_noise")
    assert fired(d_real, "numpy.testing.not_equal")
    assert d_real.root_causes[0].category == "model", [c.category for c in d_real.root_causes]


# ------------------------------------------------------------ real output captured from NumPy/SciPy/tkinter

CAPTURED_CASES = {
    # file: (rule, type, category, must the category be the first?)
    "np_broadcast": ("numpy.broadcast", "runtime_error", "model", True),
    "np_matmul_core": ("numpy.core_dimension", "runtime_error", "model", True),
    "np_concatenate": ("numpy.concatenate", "runtime_error", "dataset", False),
    "np_reshape": ("numpy.reshape", "runtime_error", "model", True),
    "np_inhomogeneous": ("numpy.inhomogeneous", "runtime_error", "dataset", True),
    "np_cast_ufunc": ("numpy.ufunc_types", "runtime_error", "model", True),
    "np_truth_value": ("numpy.truth_value", "runtime_error", "model", True),
    "np_index_oob": ("numpy.index_out_of_bounds", "runtime_error", "dataset", False),
    "np_unable_to_allocate": ("numpy.alloc_absurd", "oom", "model", True),
    "np_unable_to_allocate_gib": ("numpy.alloc", "oom", "resource", True),
    "np_allow_pickle": ("numpy.load_object_array", "runtime_error", "model", True),
    "np_fromfile_npy_bad": ("numpy.load_not_npy", "runtime_error", "dataset", True),
    "np_loadtxt_columns": ("numpy.text_rows", "runtime_error", "dataset", True),
    "np_loadtxt_convert": ("numpy.text_rows", "runtime_error", "dataset", True),
    "np_genfromtxt": ("numpy.text_rows", "runtime_error", "dataset", True),
    "np_singular": ("numpy.linalg", "runtime_error", "dataset", False),
    "np_cholesky": ("numpy.linalg", "runtime_error", "model", False),
    "scipy_not_pos_def": ("numpy.linalg", "runtime_error", "dataset", False),
    "scipy_nan_inputs": ("scipy.non_finite_input", "runtime_error", "dataset", True),
    "scipy_removed_api": ("scipy.removed_api", "runtime_error", "model", False),
    "scipy_misc_imread": ("scipy.removed_api", "runtime_error", "library", False),
    "scipy_interp2d": ("scipy.removed_api", "runtime_error", "model", False),
    "np_astype_float": ("numpy.non_numeric", "runtime_error", "dataset", True),
    "np_nep50_overflow": ("numpy.nep50_overflow", "runtime_error", "model", True),
    "scipy_x0_infeasible": ("scipy.optimize_inputs", "runtime_error", "config", False),
    "scipy_residuals_not_finite": ("scipy.residuals_not_finite", "runtime_error", "model", True),
    # gcc's own output for an extension that includes NumPy's headers without numpy.get_include()
    "gcc_numpy_header": ("cython.numpy_headers", "runtime_error", "library", False),
    "tk_no_display": ("mpl.headless_display", "runtime_error", "environment", True),
}


def test_every_captured_output_is_a_case():
    assert {p.stem for p in CAPTURED.glob("*.out")} == set(CAPTURED_CASES) | {"np_removed_alias"}


@pytest.mark.parametrize("name", sorted(CAPTURED_CASES))
def test_it_diagnoses_captured_output(name: str):
    rule_id, type_, category, first = CAPTURED_CASES[name]
    text = (CAPTURED / f"{name}.out").read_text()
    diag = diagnose(texts={"stderr.txt": text}, exit_code=1)
    _check(diag, rule_id, type_, category, first=first)


def test_data_file_messages_name_the_data_stage():
    for name in ("np_loadtxt_columns", "np_genfromtxt", "np_fromfile_npy_bad", "np_allow_pickle"):
        diag = diagnose(texts={"stderr.txt": (CAPTURED / f"{name}.out").read_text()}, exit_code=1)
        assert diag.profile.stage == "data", (name, diag.profile.stage)


def test_an_absurd_allocation_blames_the_shape_and_a_plausible_one_the_memory():
    """The same NumPy message ranks differently by the size asked for: terabytes are a wrong shape, a few
    GiB on a small machine are the memory."""
    absurd = diagnose(texts={"stderr.txt": (CAPTURED / "np_unable_to_allocate.out").read_text()}, exit_code=1)
    plausible = diagnose(texts={"stderr.txt": (CAPTURED / "np_unable_to_allocate_gib.out").read_text()}, exit_code=1)
    assert [absurd.root_causes[0].category, plausible.root_causes[0].category] == ["model", "resource"]
    assert "TiB" in absurd.root_causes[0].summary and "GiB" in plausible.root_causes[0].summary


def test_the_removed_numpy_alias_stays_with_the_ecosystem_pack():
    """np.float is 45-ecosystem's py.numpy_removed_alias: this pack adds no second rule for it."""
    diag = diagnose(texts={"stderr.txt": (CAPTURED / "np_removed_alias.out").read_text()}, exit_code=1)
    assert fired(diag, "py.numpy_removed_alias")
    assert not any((c.rule or "").startswith("numpy.") for c in diag.root_causes)


# ----------------------------------------------------------------------- live, where NumPy is installed


def _python_with_numpy() -> str | None:
    for name in ("python3", "python"):
        exe = shutil.which(name)
        if exe and subprocess.run([exe, "-c", "import numpy"], capture_output=True, timeout=60).returncode == 0:
            return exe
    return None


LIVE = {
    "broadcast": ("import numpy as np\nnp.ones((3, 4)) + np.ones((5,))\n", "numpy.broadcast", "model"),
    "loadtxt": (
        "import numpy as np\nopen('t.csv', 'w').write('1,2,3\\n4,5,6\\n7,8\\n')\nnp.loadtxt('t.csv', delimiter=',')\n",
        "numpy.text_rows",
        "dataset",
    ),
    "ragged": ("import numpy as np\nnp.array([[1.0, 2.0, 3.0], [4.0, 5.0]])\n", "numpy.inhomogeneous", "dataset"),
}


@pytest.mark.parametrize("name", sorted(LIVE))
def test_it_diagnoses_numpy_live(name: str, tmp_path: Path):
    exe = _python_with_numpy()
    if exe is None:
        pytest.skip("no interpreter with numpy on PATH (numpy is optional, not a dependency)")
    body, rule_id, category = LIVE[name]
    (tmp_path / "job.py").write_text(textwrap.dedent(body))
    p = subprocess.run([exe, "job.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0, p.stdout + p.stderr
    diag = diagnose(texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode)
    _check(diag, rule_id, "runtime_error", category, first=True)


def test_numpys_own_reshape_message_is_not_read_as_jax():
    """NumPy says "cannot reshape array of size N into shape S"; jax.numpy says "cannot reshape array of shape
    S (size N) into shape T (size M)": a NumPy-only run is not profiled as a JAX program."""
    diag = diagnose([str(CAPTURED / "np_reshape.out")])
    assert "jax.shape" not in [c.rule for c in diag.root_causes]
    assert diag.profile.stack != "jax"
