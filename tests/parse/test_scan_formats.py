"""Formats the scanner reads as their writers define them: PyTorch's ``load_state_dict`` report below a cut
traceback, IPython 7's frames printed without their header, libstdc++'s verbose terminate handler. Each is shown
on a train log of the thread corpus and on real output produced here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import frame_owner
from pytest_faildiag.parse.scan import ScanResult, scan_text
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import context_facts, train_log_path

THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _train(name: str) -> str:
    assert json.loads((THREADS / "split.json").read_text())["split"][name] == "train"  # never a dev log
    return (THREADS / f"{name}.log").read_text()


def _scan(text: str) -> ScanResult:
    res = ScanResult()
    scan_text(text, "log", load_ruleset(), res)
    return res


def _run(tmp_path: Path, code: str) -> str:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=240)
    return p.stdout + p.stderr


# -- PyTorch's load_state_dict report --------------------------------------------------------------------


def test_state_dict_report_below_a_cut_traceback_train_log() -> None:
    """A PEFT ``load_adapter`` paste cut the ``RuntimeError: Error(s) in loading state_dict`` line: the report's
    ``size mismatch for …`` lines below the last frame are the exception's message, not that frame's code."""
    res = _scan(_train("pytorch/peft_old_adapter_enable_lora_qkv_size_mismatch"))
    (tb,) = res.tracebacks
    assert tb.exc_type == "RuntimeError"
    assert tb.message.startswith("size mismatch for base_model.")
    assert tb.frames[-1].func == "from_pretrained"
    assert tb.frames[-1].code.startswith("model.load_adapter(")


def test_state_dict_report_real_torch_output_pasted_cut(tmp_path: Path) -> None:
    """Real ``load_state_dict`` output, pasted as a forum keeps it: the exception line cut and the report's tabs
    turned into spaces. Below torch's ``raise RuntimeError(`` (a statement left open) the report's lines were
    read as more of that code, their keywords unseen."""
    pytest.importorskip("torch")
    out = _run(
        tmp_path,
        """
        import torch
        m = torch.nn.Linear(2, 2)
        m.load_state_dict({"weight": torch.zeros(3, 2), "bias": torch.zeros(2), "extra": torch.zeros(1)})
        """,
    )
    assert "Error(s) in loading state_dict for Linear:" in out and "\tsize mismatch for weight" in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Traceback"))
    pasted = "\n".join(line.expandtabs(8) for line in lines[at:] if not line.startswith("RuntimeError:")) + "\n"
    res = _scan(pasted)
    tb = res.tracebacks[-1]
    assert tb.frames[-1].func == "load_state_dict" and tb.frames[-1].code == "raise RuntimeError("
    assert tb.exc_type == "RuntimeError" and tb.message.startswith("Unexpected key(s) in state_dict:")
    size_line = next(n for n, line in enumerate(pasted.splitlines(), 1) if "size mismatch for weight" in line)
    assert any(f.line == size_line for f in res.findings)  # read as output: its keywords are seen
    # printed as torch prints it, the exception line comes first and the report is its message
    res = _scan("\n".join(lines[at:]) + "\n")
    assert res.tracebacks[-1].message == "Error(s) in loading state_dict for Linear:"


# -- IPython 7's frames without their header -------------------------------------------------------------


def test_ipython7_frames_without_header_train_log() -> None:
    """IPython 7 prints a frame as ``/path/file.py in func(args)`` and its code numbered, ``---> 12`` at the
    frame's line; a paste that began below the ``Traceback`` header still holds those frames."""
    res = _scan(_train("jax/jax_numpyro_import_partial_removed_from_jax_numpyro_bug"))
    (tb,) = res.tracebacks
    assert tb.exc_type == "ImportError"
    assert [(f.func, f.line) for f in tb.frames] == [("<module>", 12), ("<module>", 8)]
    assert tb.frames[-1].code.startswith("from jax import device_put, lax, partial")
    libs = load_ruleset().reasoning.libraries
    assert frame_owner(tb.frames[-1], libs) == ("library", "numpyro")
    # the engine now sees who raised: numpyro's own import of a name JAX removed
    facts = context_facts(
        diagnose([str(train_log_path("jax/jax_numpyro_import_partial_removed_from_jax_numpyro_bug"))])
    )
    assert {"api:jax_removed_in_library", "raiser:library_only"} <= facts


def test_ipython7_colab_link_frame_after_a_cut_frame_train_log() -> None:
    """Colab's copy links the frame's file (``[/usr/…/_validators.py](https://localhost:8080/#) in f(a)``); above
    it the paste kept only the numbered code of the cell's frame, whose own line it cut: a caller whose file is
    unknown, kept before the library's frame."""
    res = _scan(_train("pytorch/hf_hub_snapshot_download_positional_repo_type"))
    tb = res.tracebacks[-1]
    assert tb.exc_type == "TypeError"
    assert [(f.file[-14:], f.func, f.line) for f in tb.frames] == [
        ("", "", 7),
        ("_validators.py", "_inner_fn", 119),
    ]
    assert tb.frames[0].code.startswith("snapshot_download(")


def test_ipython7_cut_frame_alone_is_no_raise_site_train_log() -> None:
    """Only the numbered code of a frame whose line was cut, then the exception: where it was raised is not
    known; the exception is read as printed alone (no frame of an unknown file taken for the raise site)."""
    res = _scan(_train("jax/dynamax_example_jax050_solve_batched_shapes"))
    tb = next(t for t in res.tracebacks if t.exc_type == "ValueError")
    assert tb.frames == [] and tb.bare


def test_ipython7_frames_real_format() -> None:
    """IPython 7's documented layout (``IPython.core.ultratb`` VerboseTB: the file, `` in ``, the function with
    its arguments; the numbered context with ``---->`` at the frame's line), its header cut by a paste."""
    text = textwrap.dedent(
        """\
        /home/user/proj/train.py in step(self, batch)
             40         x = batch["x"]
        ---> 41         return self.model(x)
             42

        <ipython-input-3-0a1b2c3d4e5f> in <module>
        ----> 1 trainer.step(b)

        KeyError: 'x'
        """
    )
    (tb,) = _scan(text).tracebacks
    assert tb.exc_type == "KeyError" and tb.ipython
    assert [(f.file, f.func, f.line) for f in tb.frames] == [
        ("/home/user/proj/train.py", "step", 41),
        ("<ipython-input-3-0a1b2c3d4e5f>", "<module>", 1),
    ]
    # a sentence that names a path ``in`` something is no frame
    assert _scan("/data/run.py in the folder was not found by the launcher\n").tracebacks == []


# -- libstdc++'s verbose terminate handler ---------------------------------------------------------------


def test_terminate_what_line_is_an_error_line_train_log() -> None:
    """gloo's ``IoException`` escaped a C++ thread: libstdc++ printed ``terminate called after throwing an
    instance of 'gloo::IoException'`` and ``  what():  [pair.cc:724] connect [127.0.1.1]:3210: Connection
    refused``; the second line holds the message (the peer's address) with no error word."""
    res = _scan(_train("distributed/gloo_connect_loopback_127_0_1_1_refused"))
    texts = [t for _s, _n, t in res.error_lines]
    assert any(t.startswith("what():  ") and "Connection refused" in t for t in texts)


def test_terminate_what_line_real_libstdcxx_output(tmp_path: Path) -> None:
    """A C++ exception that leaves a thread calls ``std::terminate``; libstdc++'s default handler prints the
    exception's class and its ``what()``."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src = tmp_path / "t.cc"
    src.write_text(
        "#include <stdexcept>\n#include <thread>\n"
        'int main(){std::thread t([]{throw std::runtime_error("peer 10.0.0.7:29500 closed the connection");});'
        "t.join();}\n"
    )
    subprocess.run([cxx, "-pthread", str(src), "-o", str(tmp_path / "t")], check=True, timeout=240)
    p = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    assert "terminate called after throwing an instance of 'std::runtime_error'" in out
    assert "  what():  peer 10.0.0.7:29500 closed the connection" in out
    res = _scan(out)
    assert ("log", 2, "what():  peer 10.0.0.7:29500 closed the connection") in res.error_lines
