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


@pytest.mark.parametrize(("reader", "stage"), [("load_checkpoint", "checkpoint"), ("__getitem__", "data")])
def test_a_file_readers_stage_yields_to_the_frames_that_say_which_file_it_was(tmp_path: Path, reader, stage):
    """gzip's "Not a gzipped file" is a data file's fault by default (a file reader's rule names the stage of the
    files it usually reads); read by a checkpoint loader the same words are a checkpoint's, read by a dataset's
    ``__getitem__`` they stay data. The file is a Git LFS pointer, as a clone without LFS leaves it."""
    (tmp_path / "weights.gz").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 9\n")
    err, rc = run_failing(
        tmp_path,
        f"""
        import gzip

        def {reader}(path):
            with gzip.open(path) as f:
                return f.read()

        {reader}("weights.gz")
        """,
    )
    assert "Not a gzipped file" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert any(c.rule == "data.not_gzip" for c in diag.root_causes)
    assert diag.profile.stage == stage


def test_train_log_keras_load_weights_of_a_file_without_hdf5_signature_is_checkpoint():
    """HDF5's "file signature not found" under Keras's load_weights: the weights file (a Git LFS pointer in the
    thread), not a data file, and the checkpoint's home among the first."""
    diag, label = train_log("pytest_python/keras_load_weights_hdf5_file_signature_not_found_lfs")
    assert diag.profile.stage == label["stage"] == "checkpoint"
    assert "checkpoint" in [c.category for c in diag.root_causes[:2]]
