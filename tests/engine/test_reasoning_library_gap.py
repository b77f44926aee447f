"""A feature a library lacks, or a kernel that is missing: who raised NotImplementedError (issue 13, klib).

``raise NotImplementedError("… is not supported yet")`` in a library's own module states a feature (or a
combination of options) that the library's code does not implement: the library's home
(``raiser:library_gap``). A missing kernel names an op, a dtype, a device or a backend (the operator's); an
abstract base's raise names a method to override, or nothing at all (the caller's class). ``engine/reason.py``
(``_library_gap``) tells them apart; ``05-reasoning.toml`` says what the fact means.

The train logs are from the thread corpus's train split; the other tests run real Python here, with a
package laid out in a real ``site-packages`` folder of ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import all_checks, cats, context_checks, train_log
from tests.engine.site_package import run_beside_package

FACT = "context:raiser:library_gap"

_GAMMA = """
    class Base:
        def forward(self, x):
            raise NotImplementedError

        def __call__(self, x):
            return self.forward(x)


    class Sized(Base):
        def forward(self, x):
            raise NotImplementedError("subclasses must override forward()")


    def _check(fmt, compress):
        if compress and fmt == "csv":
            raise NotImplementedError("compress=True with the csv format is not supported yet")
        if fmt == "half":
            raise NotImplementedError("the mean reduction is not implemented for dtype float16")


    def export(items, fmt, compress=False):
        _check(fmt, compress)
        return list(items)
"""


def _run(tmp_path: Path, code: str) -> tuple[str, int]:
    p = run_beside_package(tmp_path, "gamma", _GAMMA, code)
    assert "NotImplementedError" in p.stderr, p.stderr
    return p.stderr, p.returncode


def test_train_logs_a_feature_the_library_does_not_implement_leads_with_the_library():
    """FSDP's own argument check ("offload_to_cpu=True and NO_SHARD is not supported yet") and datasets'
    builder ("Loading a dataset cached in a LocalFileSystem is not supported.") raise NotImplementedError in
    the library's Python code: no kernel is missing, the library lacks the feature. Both put the operator
    first before the fact; the library leads now, the operator is moved down, and the failure is no longer
    typed as an unsupported operator (both are labelled runtime_error)."""
    for name in (
        "distributed/pt_fsdp_save_offload_to_cpu_no_shard_unsupported_single_gpu",
        "pytorch/py_datasets_cached_localfilesystem_not_supported_fsspec_2023_10",
    ):
        diag, label = train_log(name)
        assert label["category"] == "library"
        assert cats(diag, 1) == ["library"], name
        assert context_checks(diag, "library")[FACT] == "passed", name
        assert context_checks(diag, "operator")[FACT] == "failed", name
        assert diag.profile.type == label["type"] == "runtime_error", name


def test_a_combination_of_options_the_library_lacks_is_the_librarys(tmp_path):
    """gamma's own check refuses a combination of options it does not implement (two frames below the
    program's call): the fact holds and the library leads over a missing kernel; no operator is unsupported."""
    err, rc = _run(tmp_path, "import gamma\ngamma.export([1], 'csv', compress=True)\n")
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert context_checks(diag, "library")[FACT] == "passed"
    assert cats(diag, 1) == ["library"]
    assert diag.profile.type == "runtime_error"


def test_a_missing_kernel_or_a_method_to_override_is_no_library_gap(tmp_path):
    """The same raise naming a dtype is a kernel that is missing (the operator's); an abstract base's bare
    ``raise NotImplementedError`` or one that asks a subclass to override is the caller's class: the fact
    does not hold for any of them, and NotImplementedError keeps its reading as an unsupported operation."""
    for code in (
        "import gamma\ngamma.export([1], 'half')\n",
        "import gamma\ngamma.Base()(1)\n",
        "import gamma\ngamma.Sized()(1)\n",
    ):
        err, rc = _run(tmp_path, code)
        diag = diagnose(texts={"stderr": err}, exit_code=rc)
        assert FACT not in all_checks(diag), code
        assert diag.profile.type == "unsupported_op", code


def test_the_programs_own_not_implemented_is_no_library_gap(tmp_path):
    """Raised in the program's own frame, the words say nothing about a library: the fact does not hold."""
    err, rc = _run(
        tmp_path, "def export(fmt):\n    raise NotImplementedError(f'{fmt} is not supported yet')\nexport('csv')\n"
    )
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert FACT not in all_checks(diag)
