"""Jupyter notebooks (``parse/artifacts.py`` ``read_notebook``): a notebook saved after its failure holds what its
cells printed, as nbformat 4 outputs. A Colab or Jupyter ``!python train.py`` cell keeps the whole run's stdout
and stderr as stream outputs, a failing Python cell the kernel's error output; ``faildiag diagnose x.ipynb`` reads
them in order. Real program output, stored as nbformat 4 stores it (each stream a list of lines)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_faildiag.engine import diagnose

PROGRAM = """
    import sys
    for step in range(40):
        print(f"step {step} | loss {2.5 - step / 100:.4f}", flush=True)
    raise PermissionError(13, "Permission denied", "/data/cache/shard-00017.arrow")
"""


def _run(tmp_path: Path) -> tuple[str, str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(PROGRAM))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    return p.stdout, p.stderr


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _notebook(tmp_path: Path, outputs: list[dict], name: str = "train.ipynb") -> Path:
    """A notebook with a markdown cell, a cell that printed ``outputs`` and a figure (nbformat 4.5)."""
    cells = [
        {"cell_type": "markdown", "id": "a1", "metadata": {}, "source": ["# Fine-tune\n"]},
        {"cell_type": "code", "id": "b2", "metadata": {}, "execution_count": 3, "source": ["!python train.py"],
         "outputs": outputs},
        {"cell_type": "code", "id": "c3", "metadata": {}, "execution_count": 4, "source": ["plot(losses)"],
         "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/plain": ["<Figure>"]}}]},
    ]  # fmt: skip
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}}, "cells": cells}
    path = tmp_path / name
    path.write_text(json.dumps(nb, indent=1))
    return path


def _top(d) -> tuple:
    top = d.root_causes[0]
    return d.profile.type, d.profile.stage, top.category, top.rule, [e.excerpt for e in top.evidence[:2]]


def test_a_shell_cells_run_saved_in_a_notebook_is_diagnosed_as_that_run(tmp_path):
    out, err = _run(tmp_path)
    assert "PermissionError: [Errno 13]" in err
    nb = _notebook(
        tmp_path,
        [
            {"output_type": "stream", "name": "stdout", "text": _lines(out)},
            {"output_type": "stream", "name": "stderr", "text": _lines(err)},
        ],
    )
    (tmp_path / "run.log").write_text(out + err)
    got, want = diagnose([str(nb)]), diagnose([str(tmp_path / "run.log")])
    assert _top(got) == _top(want)
    assert got.sources == ["train.ipynb"]


def test_a_kernels_error_output_is_read(tmp_path):
    # a kernel that is not IPython sends Python's own traceback, one list entry per line, with ename and evalue
    _out, err = _run(tmp_path)
    tb = err.rstrip("\n").split("\n")
    nb = _notebook(
        tmp_path,
        [{"output_type": "error", "ename": "PermissionError", "evalue": tb[-1].split(": ", 1)[1], "traceback": tb}],
    )
    d = diagnose([str(nb)])
    assert d.profile.first_failure is not None and "PermissionError" in d.profile.first_failure.excerpt


def test_the_cli_reads_a_named_notebook_and_refuses_a_broken_one(tmp_path):
    out, err = _run(tmp_path)
    _notebook(tmp_path, [{"output_type": "stream", "name": "stderr", "text": _lines(out + err)}])
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    cli = [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", "--format", "json"]
    ok = subprocess.run([*cli, "train.ipynb"], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "PermissionError" in json.dumps(json.loads(ok.stdout)["root_causes"][0])
    bad = subprocess.run([*cli, "broken.ipynb"], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "faildiag: broken.ipynb: not a readable Jupyter notebook (nbformat 4 JSON)"
    ]


def test_a_folders_walk_leaves_notebooks_alone(tmp_path):
    # a project folder's notebooks keep errors of old sessions: only the run's logs are read
    out, err = _run(tmp_path)
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log").write_text(out)
    _notebook(job, [{"output_type": "stream", "name": "stderr", "text": _lines(err)}], name="explore.ipynb")
    d = diagnose([str(job)])
    assert d.sources == ["rank0.log"]
