"""A library built on JAX whose own code raised, read from a relative frame path (engine/reason.py
``_relative_library``, rules/71-jax-libraries.toml; docs/engine.md, the ``kjax7`` block).

JAX's own checks (a primitive's parameters, a C++ binding's signature, a trace context) raised while a library
built on JAX ran its own code: pytest prints the raise site relative to its rootdir when the file lies under it
(the library's own repository), and a paste may elide an installed path's leading folders (``.../flax/…``). A
module inside a subpackage of a well-known library (``equinox/internal/_primitive.py``) is that library's code,
not the program's. Shown on train logs with the rules that explain them left out (as ``bench/confusion.py
--without-rules`` reads them) and on output of the real pytest run here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import frame_owner
from pytest_faildiag.parse.scan import Frame
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import fact_statuses, top3, train_log_with_rules, train_log_without_rules


def _libs() -> frozenset[str]:
    return load_ruleset().reasoning.libraries


def _pytest(cwd: Path) -> tuple[str, int]:
    """Run the real pytest in a child interpreter on ``cwd`` (its rootdir)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(cwd)
    code = "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "-p", "no:cacheprovider", "-p", "no:faildiag", "-p", "no:randomly", "-q"]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=240)
    return p.stdout + p.stderr, p.returncode


def _diagnose_text(text: str, code: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose(texts={"stdout": text}, exit_code=code)


# --- the names and the paths --------------------------------------------------------------------------------------


def test_jax_based_libraries_are_well_known():
    libs = _libs()
    for name in ("equinox", "diffrax", "optimistix", "numpyro", "chex", "jaxtyping", "brax", "mujoco", "gymnasium"):
        assert name in libs, name


def test_a_relative_path_in_a_libraries_subpackage_is_that_library():
    libs = _libs()
    assert frame_owner(Frame("equinox/internal/_primitive.py", 271, "f"), libs) == ("library", "equinox")
    assert frame_owner(Frame("gymnasium/wrappers/jax_to_numpy.py", 112, "f"), libs) == ("library", "gymnasium")
    # a paste that elided the installed path's leading folders
    assert frame_owner(Frame(".../flax/nnx/pytreelib.py", 748, "f"), libs) == ("library", "flax")
    assert frame_owner(Frame("…/keras_hub/src/models/t5/t5_backbone.py", 173, "f"), libs) == ("library", "keras_hub")


def test_a_projects_own_folder_named_like_a_library_stays_the_programs():
    libs = _libs()
    # a module right inside the folder (no subpackage): a project's own ``datasets/coco.py`` is as likely
    assert frame_owner(Frame("datasets/coco.py", 3, "f"), libs) == ("user", None)
    # a folder that is no well-known library, an absolute path, a library's own test file
    assert frame_owner(Frame("app/internal/core.py", 3, "f"), libs) == ("user", None)
    assert frame_owner(Frame("/home/user/proj/app/internal/core.py", 3, "f"), libs) == ("user", None)
    assert frame_owner(Frame("equinox/tests/test_jit.py", 3, "f"), libs)[0] == "test"


# --- train logs ----------------------------------------------------------------------------------------------------


def test_equinox_primitive_refused_by_new_jax_is_equinoxs():
    # JAX 0.7 refuses an unhashable equation parameter that Equinox's noinline primitive passes; pytest's raise
    # site is equinox/internal/_primitive.py (Equinox's own repository as the rootdir)
    name = "jax/jax_eqx_noinline_unhashable_param_jax_0_7_2_needs_equinox_update"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    checks = fact_statuses(diag)
    assert "raiser:user" not in checks and "raiser:under_test" not in checks, checks
    assert top3(diag)[0] == "library", [(c.category, c.rule) for c in diag.root_causes]


def test_gymnasiums_jax_wrapper_calling_jaxlib_is_gymnasiums():
    # jax 0.6 sends a jax.Array down gymnasium's iterable branch, which calls ArrayImpl's binding with a
    # generator (pybind11's "incompatible function arguments"): gymnasium's wrapper, fixed in gymnasium
    name = "jax/jax_pr6_gymnasium_jax_to_numpy_typeerror_arrayimpl_dispatch_jax060"
    for diag, label in (train_log_without_rules(name), train_log_with_rules(name)):
        assert label["category"] == "library"
        assert "raiser:user" not in fact_statuses(diag)
        assert top3(diag)[0] == "library", [(c.category, c.rule) for c in diag.root_causes]


def test_flax_nnx_raising_under_keras_hub_with_elided_paths():
    # Flax NNX's TraceContextError raised while keras_hub's layers ran (paths pasted as ``.../flax/…``): the
    # library's code raised, not the program's script, so the library is among the three (it was not before)
    name = "jax/keras_nnx_t5backbone_tracecontexterror"
    for diag, label in (train_log_without_rules(name), train_log_with_rules(name)):
        assert label["category"] == "library"
        assert "library" in top3(diag), [(c.category, c.rule) for c in diag.root_causes]


# --- a real pytest run ------------------------------------------------------------------------------------------


def _package_with_check(root: Path, pkg: str) -> None:
    (root / pkg / "internal").mkdir(parents=True)
    (root / pkg / "__init__.py").write_text("")
    (root / pkg / "internal" / "__init__.py").write_text("")
    (root / pkg / "internal" / "_primitive.py").write_text(
        "def bind(static):\n"
        "    try:\n"
        "        hash(static)\n"
        "    except TypeError:\n"
        "        raise TypeError('parameters to jaxpr equations must have __hash__ and __eq__ methods') from None\n"
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_prim.py").write_text(
        f"from {pkg}.internal._primitive import bind\n\ndef test_bind():\n    bind([1, 2])\n"
    )


def test_a_real_run_of_a_libraries_own_suite(tmp_path):
    # pytest run in a checkout of a library named like Equinox: its raise site equinox/internal/_primitive.py
    root = tmp_path / "eqx"
    _package_with_check(root, "equinox")
    out, code = _pytest(root)
    assert code == 1 and "equinox/internal/_primitive.py:5: TypeError" in out, out
    checks = fact_statuses(_diagnose_text(out, code))
    assert "raiser:user" not in checks and "raiser:under_test" not in checks, checks


def test_a_real_run_of_a_projects_own_package_stays_the_programs(tmp_path):
    # the same layout under a name no well-known library has: the project's own code under test
    root = tmp_path / "proj"
    _package_with_check(root, "myproj")
    out, code = _pytest(root)
    assert code == 1 and "myproj/internal/_primitive.py:5: TypeError" in out, out
    checks = fact_statuses(_diagnose_text(out, code))
    assert "raiser:user" in checks or "raiser:under_test" in checks, checks
