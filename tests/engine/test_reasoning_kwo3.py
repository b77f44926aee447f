"""Reasoning for the failures no rule knows (issue 13, kwo3): whose code a JAX tracer error and a frame name, shown on
train logs diagnosed with the rules that explained them left out, and on output of real runs here (real JAX is not
installed here; real Python and pytest are).

- Where JAX says a traced value came from (``_trace_origin``): its tracer errors end with "This value became a tracer
  due to JAX operations on these lines: … from line <file>:<line> (<fn>)". When the traceback shows no frame outside
  JAX and NumPy, a library's lines there make that library the raiser (``raiser:trace_library``).
- An unpacked release of a package (``graphcast-0.1/graphcast/``, ``pkg-main/pkg/``: an sdist or a repository's
  archive) is that package's code, not the program's (``frame_owner``).

Each train log is diagnosed twice, as ``bench/confusion.py --without-rules`` does: once with every rule, then with
the findings of the rules whose causes that diagnosis listed dropped between the scan and the analysis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import frame_owner
from pytest_faildiag.parse.scan import Frame
from tests.kb.kb_helpers import (
    context_checks,
    context_facts,
    run_failing,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

LIBRARIES = frozenset({"torch", "jax", "datasets"})


def _where(diag: Any) -> str:
    """The check texts that say who raised (``… raised in the library x at …``)."""
    return " ".join(v.detail for c in diag.root_causes for v in c.validation_checks if " raised in " in v.detail)


# ---------------------------------------------------------------------------------------------------------------
# where JAX says a traced value came from
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "library"),
    [
        # "from line …/site-packages/numpyro/distributions/distribution.py:246 (_validate_sample)": numpyro's
        # validation computed the traced boolean it then converted (numpyro's fix, PR #775)
        ("jax/jax_concretization_bool_numpyro_validate_sample_omnistaging_jax02", "numpyro"),
        # "from line d:\\code\\graphcast-0.1\\graphcast\\xarray_jax.py:353 (wrapped_func)": graphcast's release
        ("jax/graphcast_xarray_jax_tracer_array_conversion", "graphcast"),
    ],
)
def test_train_log_trace_origin_in_a_library_puts_the_library_first_without_the_rules(name: str, library: str) -> None:
    """Before, no frame outside JAX was shown (``raiser:unseen``) and the program's code led; JAX's own note on where
    the traced value came from names a library's lines: that library leads, the program's code is refuted."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert top3(diag)[0] == "library", top3(diag)
    assert "raiser:trace_library" in context_facts(diag)
    assert "raiser:unseen" not in context_facts(diag)
    assert context_checks(diag, "library")["context:raiser:trace_library"] == "passed"
    assert context_checks(diag, "model")["context:raiser:trace_library"] == "failed"
    assert f"the library {library} at " in _where(diag), _where(diag)


def test_train_log_trace_origin_with_the_rules() -> None:
    """With every rule graphcast's release leads too (before: the program's code, the tracer rules' first home)."""
    diag, label = train_log_with_rules("jax/graphcast_xarray_jax_tracer_array_conversion")
    assert label["category"] == "library"
    assert top3(diag)[0] == "library", top3(diag)


def test_trace_origin_of_the_programs_own_lines_leaves_the_raiser_unseen() -> None:
    """The same note naming the program's own file (not a library's) says nothing against the program's code."""
    text = (
        "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].\n"
        "The error occurred while tracing the function step at /home/user/project/train.py:10 for jit. This value "
        "became a tracer due to JAX operations on these lines:\n\n"
        "  operation a:bool[] = gt b 0.0\n"
        "    from line /home/user/project/train.py:12 (step)\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    facts = context_facts(diag)
    assert "raiser:trace_library" not in facts
    assert "raiser:unseen" in facts


def test_trace_origin_of_a_library_when_the_frames_are_not_shown() -> None:
    """An exception line and JAX's note alone (an excerpt): the library's lines make it the raiser."""
    text = (
        "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].\n"
        "This value became a tracer due to JAX operations on these lines:\n\n"
        "  operation a:bool[] = reduce_and[axes=(0,)] b\n"
        "    from line /opt/venv/lib/python3.11/site-packages/fakedist/checks.py:88 (validate)\n"
    )
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    assert "raiser:trace_library" in context_facts(diag)
    assert top3(diag)[0] == "library", top3(diag)


# ---------------------------------------------------------------------------------------------------------------
# frame_owner: an unpacked release, a library's own source tree
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "owner"),
    [
        ("d:/code/graphcast-0.1/graphcast/xarray_jax.py", ("library", "graphcast")),
        ("E:/mindyolo-master/mindyolo-master/mindyolo/utils/utils.py", ("library", "mindyolo")),
        ("/home/user/src/fakelib-2.3.1rc1/fakelib/core.py", ("library", "fakelib")),
        ("/home/user/src/fakelib-v2/fakelib/core.py", ("library", "fakelib")),
        # a versioned folder of another name, a project's own folder: the program's
        ("/home/user/otherlib-1.0/fakelib/core.py", ("user", None)),
        ("/home/user/project-1.0/train.py", ("user", None)),
        ("/home/user/fakelib/fakelib/core.py", ("user", None)),
        # a relative path is read as before: a project's folder named like a library (``datasets/coco.py``) is common
        ("datasets/coco.py", ("user", None)),
        ("tests/test_x.py", ("test", None)),
    ],
)
def test_frame_owner(path: str, owner: tuple[str, str | None]) -> None:
    assert frame_owner(Frame(path, 1, "f"), LIBRARIES) == owner


def test_train_log_release_folder_is_the_library() -> None:
    """mindyolo run from GitHub's archive of its master branch (``mindyolo-master/mindyolo/``) passes a keyword the
    installed MindSpore does not know: a library's call, so the installed versions and a library's release lead
    without the rules (before: the configuration, as for the program's own call). Which of the two comes first is
    the ValueError differential's priors' (a library's check refusing a value is most often its bug in reported
    failures), weighed against ``api:cross_library``; the rule ``mindspore.context_key_unknown`` names the version."""
    diag, label = train_log_without_rules("mindspore/ms_set_context_jit_config_not_recognized_mindspore_too_old")
    assert label["category"] == "environment"
    assert set(top3(diag)[:2]) == {"environment", "library"}, top3(diag)
    assert "raiser:user" not in context_facts(diag)


# ---------------------------------------------------------------------------------------------------------------
# real runs
# ---------------------------------------------------------------------------------------------------------------


def test_real_release_folder_frame_is_the_library(tmp_path: Path) -> None:
    """A package run from its unpacked release (``fakelib-1.2/fakelib/``): its frame is the library's."""
    pkg = tmp_path / "fakelib-1.2" / "fakelib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("def lookup(d):\n    return d['missing']\n")
    diag, err = run_failing(
        tmp_path, f"import sys\nsys.path.insert(0, {str(pkg.parent)!r})\nimport fakelib\nfakelib.lookup({{}})\n"
    )
    assert "fakelib-1.2" in err and "KeyError" in err
    assert "the library fakelib at " in _where(diag), _where(diag)
