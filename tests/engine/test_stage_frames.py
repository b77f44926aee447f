"""The stage read from the frames of a traceback (``[[frame_stage]]``, the stagek block): graph capture
and extension builds are compile, pytest's assertion rewriting is collection. Real logs only: a train log
of the thread corpus and real PyTorch output produced here."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .corpus_logs import run_failing, train_log


def test_pytest_assertion_rewriting_while_importing_a_test_module_is_collection():
    diag, label = train_log("pytest_python/pt_lineno_alias_old_pytest_py310")
    assert label["stage"] == "collection"
    assert diag.profile.stage == "collection"


def test_torch_jit_script_failing_to_compile_a_function_is_compile(tmp_path: Path):
    pytest.importorskip("torch")
    err, rc = run_failing(
        tmp_path,
        """
        import torch

        def f(x):
            return x.no_such_method_here()

        torch.jit.script(f)
        """,
    )
    assert "torch/jit/" in err.replace("\\", "/")
    log = tmp_path / "stderr.txt"
    log.write_text(err)
    diag = diagnose([str(log)], exit_code=rc)
    assert diag.profile.stage == "compile"
