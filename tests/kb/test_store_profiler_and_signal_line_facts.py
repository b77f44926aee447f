"""Catalogue facts from the train misses of batches 58-59 (#13): AWS EFA's registration failure (the locked-memory
limit), PyTorch built without Kineto, faiss-cpu without the GPU API, chromadb's fixed collection dimension,
open_clip's `pretrained` that is neither a tag nor a file, CLIP's checksum of a download, Unsloth's rewritten TRL
trainers, HDF5 1.8's capitalised "File signature not found"; and two readings that need no signature: a line
saying a process died of a signal is that process's exit status (Rust's and Python's wordings), and a SyntaxError
in code a library compiled from a string is that library's. Each is shown on a train log of the thread corpus (a
user's paste, its cause confirmed in the thread; the facts' leading rows are in the train-log table of
test_parser_panic_fp8_facts.py); the readings also on output of the real interpreter here. Each
test but one fails on the rules and engine from before the commit; the program's own exec, which stays the
program's, is the contrast."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from tests.kb.kb_helpers import fired, run_failing, top3, train_diagnosis


def test_efa_enomem_is_not_read_as_host_memory() -> None:
    diag = train_diagnosis("distributed/efa_libfabric_cannot_allocate_memory_low_memlock_ulimit")
    assert not fired(diag, "py.host_memory_error")
    assert diag.profile.type == "crash"  # the provider aborts the process


def test_uvs_report_of_a_child_killed_by_sigill_is_a_crash_of_the_build() -> None:
    """uv's debug log ("Command exited with signal: Some(4)", Rust's Option of the signal number) is all the paste
    shows: signal 4 is SIGILL, so the reading of SIGILL's exit status leads and cites that line."""
    diag = train_diagnosis("environment/pytorch_2_10_aarch64_wheel_sigill_on_raspberry_pi4_armv8_0_uvx_run")
    assert diag.profile.type == "crash"
    top = diag.root_causes[0]
    assert top.rule == "proc.illegal_instruction"
    assert any("signal: Some(4)" in (e.excerpt or "") for e in top.evidence)


def test_a_child_status_of_132_in_pythons_report_is_sigill(tmp_path: Path) -> None:
    """A program runs a tool through a shell that reports its child's death as 128+4; Python's CalledProcessError
    says "returned non-zero exit status 132" and the program exits 1: the line is the child's status."""
    diag, stderr = run_failing(
        tmp_path,
        f"""
        import subprocess
        child = {sys.executable!r} + ' -c "import os; os.kill(os.getpid(), 4)"; exit $?'
        subprocess.run(child, shell=True, check=True, stderr=subprocess.DEVNULL)
        """,
    )
    assert "returned non-zero exit status 132" in stderr
    assert "SIGILL" not in stderr and "Illegal instruction" not in stderr
    assert diag.root_causes[0].rule == "proc.illegal_instruction"
    assert diag.profile.type == "crash"


def test_a_library_that_exec_s_code_it_generated_owns_its_syntax_error(tmp_path: Path) -> None:
    """A library builds a function's source and exec()s it (as dataclasses, attrs and Unsloth do): Python puts the
    SyntaxError at a function-less "<string>" frame whose caller is the library. Its generated code, not the
    program's file, is what does not parse."""
    lib = tmp_path / "site-packages" / "genlib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(
        textwrap.dedent(
            """
            def build(fields):
                src = "def __init__(self, " + ", ".join(fields) + "):\\n    pass\\n"
                ns = {}
                exec(src, ns)
                return ns["__init__"]
            """
        )
    )
    diag, stderr = run_failing(
        tmp_path,
        """
        import sys
        sys.path.insert(0, "site-packages")
        import genlib
        genlib.build(["a=1", "b"])
        """,
        as_file=True,
    )
    assert 'File "<string>", line 1' in stderr and "SyntaxError" in stderr
    assert top3(diag)[0] == "library", [(c.category, c.rule) for c in diag.root_causes[:3]]


def test_the_programs_own_exec_stays_the_programs(tmp_path: Path) -> None:
    diag, stderr = run_failing(tmp_path, 'exec("def f(a=1, b):\\n    pass\\n", {})\n', as_file=True)
    assert "SyntaxError" in stderr
    assert top3(diag)[0] == "model"


def test_unsloths_exec_of_a_rewritten_trainer_is_unsloths() -> None:
    """The notebook's paste: IPython's frames end in Unsloth's exec() of the trainer text, the SyntaxError's message
    names "<string>"."""
    diag = train_diagnosis("pytorch/unsloth_import_sfttrainer_patch_syntaxerror_trl_0_15")
    assert top3(diag)[0] == "library"
