"""Tracebacks as issue threads post them: the shapes a paste, a notebook, a CI log or a crash handler give a
traceback, read as a person reads them (the exception, its frames, who raised). Each shape is shown on a train
log of the thread corpus or on output produced here by the real tool (python, pytest, faulthandler)."""

from __future__ import annotations

import html
import subprocess
import sys
import textwrap

from pytest_faildiag.parse.scan import ScanResult, Traceback, scan_file, scan_text
from pytest_faildiag.rules import load_ruleset
from tests.engine.test_scan import _train_log

CHAINED = """
import json
def load(s):
    return json.loads(s)
def main():
    try:
        load("{bad")
    except ValueError as exc:
        raise RuntimeError("config could not be read") from exc
main()
"""


def _scan(text: str) -> ScanResult:
    res = ScanResult()
    scan_text(text, "log", load_ruleset(), res)
    return res


def _scan_log(name: str) -> ScanResult:
    res = ScanResult()
    scan_file(str(_train_log(name)), "log", load_ruleset(), res)
    return res


def _python(tmp_path, code: str) -> subprocess.CompletedProcess:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)


def _typed(res: ScanResult, exc: str) -> Traceback:
    return next(t for t in res.tracebacks if t.exc_type == exc)


def _funcs(tb: Traceback) -> list[str]:
    return [f.func for f in tb.frames]


def test_ipython8_module_level_frame_has_no_function():
    """IPython 8 prints a module-level frame as ``File ~/…/torch/__init__.py:237`` (no ``, in <module>``):
    before, that line was taken for the exception line."""
    tb = _typed(
        _scan_log("environment/env_import_torch_undefined_symbol_ncclcommregister_conflicting_nccl_lib"), "ImportError"
    )
    assert tb.frames[-1].file.endswith("site-packages/torch/__init__.py") and tb.frames[-1].line == 237
    assert tb.frames[-1].func == "<module>" and "undefined symbol" in tb.message


def test_vscode_notebook_links_are_read_as_their_text():
    """VS Code's notebooks render the cell's line and the code's line numbers as Markdown links
    (``Cell In[1], [line 7](vscode-notebook-cell:…)``, ``----> [7](…) import blackjax``)."""
    tb = _typed(_scan_log("jax/blackjax_import_jax06_core_shape_removed"), "AttributeError")
    assert [(f.line, f.func) for f in tb.frames] == [(7, "<module>"), (6, "<module>")]
    assert tb.frames[0].code == "import blackjax" and tb.frames[-1].file.endswith("blackjax/__init__.py")


def test_ipython_header_names_the_exception_of_a_cut_traceback():
    """IPython's header (``NonConcreteBooleanIndexError      Traceback (most recent call last)``) names the
    class: a traceback the paste cut before its exception line still says what was raised."""
    tb = _scan_log("jax/jax_desc_qs_boozer_boolean_mask_index_nonconcrete_under_jit").tracebacks[0]
    assert tb.exc_type == "NonConcreteBooleanIndexError" and _funcs(tb) == ["<module>", "optimize"]
    tb = _scan_log("jax/jax_dnn_library_init_failed_cudnn_85_runtime_older_than_86_build").tracebacks[0]
    assert tb.exc_type == "XlaRuntimeError" and tb.frames[-1].func == "PRNGKey"


def test_pytest_e_lines_are_not_an_ipython_header():
    """pytest marks its report's exception lines with ``E`` and spaces: a traceback inside them
    (``E      Traceback (most recent call last):``, pytest's unraisable-exception warning) is Python's, not
    IPython's with a class named ``E``."""
    tb = _typed(
        _scan_log("pytest_python/pytest_mpl_unraisable_resourcewarning_unclosed_image_in_test"), "ResourceWarning"
    )
    assert not tb.ipython and _funcs(tb) == ["test_config"]
    assert tb.frames[0].file.endswith("tests/test_deterministic.py")


def test_elided_lines_do_not_end_a_traceback():
    """``[...]`` left by whoever pasted: the frames after it and the exception line are the same traceback's
    (a header-less excerpt, and an IPython 7 traceback)."""
    tb = _typed(_scan_log("jax/jax_grad_nan_brax_generalized_pipeline_bug"), "FloatingPointError")
    assert len(tb.frames) == 5 and tb.frames[-1].func == "bind"
    tb = _typed(_scan_log("pytorch/pt_gh5_detectron2_device_assert_invalid_category_id_in_annotations"), "RuntimeError")
    assert tb.ipython and tb.frames[-1].file.endswith("detectron2/engine/train_loop.py")
    # the code after the cut is not the code of the frame before it
    tb = _typed(
        _scan_log("pytorch/pt_inductor_triton_kernel_image_invalid_bundled_ptxas_newer_than_driver_470"),
        "torch._dynamo.exc.BackendCompilerFailed",
    )
    assert tb.frames[0].func == "<module>" and tb.frames[0].code == ""


def test_a_frame_line_wrapped_inside_its_function_name():
    """A frame line cut at the paste's width puts the rest of the function's name alone on the next line
    (``…, line 979, in call_`` + ``function``)."""
    res = _scan_log("pytorch/pt_inductor_lowering_adaptive_max_pool2d_nameerror_regression")
    tb = _typed(res, "torch._dynamo.exc.BackendCompilerFailed")
    assert _funcs(tb) == ["call_function", "wrapped", "adaptive_max_pool2d"]


def test_hard_wrapped_traceback_keeps_its_frames(tmp_path):
    """A real traceback hard-wrapped as ``fold -w 60`` does (every 60 characters) and as ``fold -s -w 60``
    does (at the last space): the frame lines cut inside their path or before their line number are joined
    again, and a code line's rest is not the exception."""
    p = _python(tmp_path, CHAINED)
    lines = p.stderr.splitlines()
    by_chars = "\n".join(line[i : i + 60] for line in lines for i in range(0, max(len(line), 1), 60))
    by_words = "\n".join(w for line in lines for w in (textwrap.wrap(line, 60, drop_whitespace=False) or [""]))
    for text in (by_chars, by_words):
        assert text != p.stderr
        res = _scan(text)
        first = _typed(res, "json.decoder.JSONDecodeError")
        assert _funcs(first) == ["main", "load", "loads", "decode", "raw_decode"], text
        assert first.frames[2].file.endswith("json/__init__.py")
        assert _funcs(_typed(res, "RuntimeError")) == ["<module>", "main"]


def test_the_exception_a_wrapper_prints_after_its_message_has_the_frames():
    """PyTorch's dynamo re-raises a backend's exception as ``BackendCompilerFailed: backend='inductor'
    raised:`` followed by ``RuntimeError: msg``, with the original's traceback: the line after a message that
    ends with ":" is the wrapped exception, and the frames shown are its own."""
    res = _scan_log("pytorch/pt_inductor_triton_kernel_image_invalid_bundled_ptxas_newer_than_driver_470")
    tb = _typed(res, "RuntimeError")
    assert "device kernel image is invalid" in tb.message
    assert tb.frames[-1].func == "_init_handles" and "triton/compiler" in tb.frames[-1].file


def test_an_exception_printed_before_its_traceback_gets_its_frames(tmp_path):
    """A program or a logger prints the error, then ``traceback.print_exc()`` (a paste puts it on top): the
    lone exception line and the traceback's are one exception, so the first one has the frames too."""
    res = _scan_log("environment/docker_old_engine_cant_start_new_thread")
    assert res.tracebacks[0].bare and res.tracebacks[0].frames[-1].func == "start"
    p = _python(
        tmp_path,
        """
        import sys, traceback
        def connect():
            raise ConnectionError("peer 10.0.0.2 refused")
        try:
            connect()
        except ConnectionError as exc:
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
            traceback.print_exc()
        """,
    )
    first = _scan(p.stderr).tracebacks[0]
    assert first.bare and first.exc_type == "ConnectionError" and first.frames[-1].func == "connect"


def test_a_fatal_error_dump_gives_the_crashed_threads_stack(tmp_path):
    """faulthandler reports a fatal signal with every thread's stack; ``Current thread`` is the one that
    crashed: its frames (innermost first in the dump) become a traceback without an exception, its last
    frame the Python code running at the crash. Another thread's dump is not the crash."""
    p = _python(
        tmp_path,
        """
        import ctypes, faulthandler, threading, time
        faulthandler.enable()
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        def read_null():
            return ctypes.string_at(0)
        def step(n):
            return read_null() if n == 0 else step(n - 1)
        step(3)
        """,
    )
    assert "Fatal Python error" in p.stderr and "Current thread" in p.stderr
    res = _scan(p.stderr)
    (tb,) = res.tracebacks
    assert tb.exc_type is None and _funcs(tb)[:2] == ["<module>", "step"]
    assert _funcs(tb)[-2:] == ["read_null", "string_at"]
    # a real dump as a thread posted it, cut with ``[...]`` in the middle of the recursion
    (tb,) = _scan_log("pytest_python/py_pytest_collection_segfault_getattr_infinite_recursion_in_tests").tracebacks
    assert tb.frames[-1].func == "__getattr__" and len(tb.frames) == 3
    assert not _scan_log("pytest_python/py_segfault_on_hash_mismatch_pytest_check_plugin_release").tracebacks


def test_ci_and_html_renderings_of_a_real_traceback(tmp_path):
    """GitHub Actions marks an annotated line ``##[error]``; a page's HTML escapes ``<``, ``>`` and quotes
    (``File &quot;…&quot;, line 9, in &lt;module&gt;``); a paste that lost its line breaks glues the header and
    the frames into one line. The chain reads the same in each."""
    p = _python(tmp_path, CHAINED)
    lines = p.stderr.splitlines()
    want = [
        ("json.decoder.JSONDecodeError", ["main", "load", "loads", "decode", "raw_decode"]),
        ("RuntimeError", ["<module>", "main"]),
    ]
    gha = "\n".join(("##[error]" if i == len(lines) - 1 else "") + line for i, line in enumerate(lines))
    for text in (gha, html.escape(p.stderr)):
        assert [(t.exc_type, _funcs(t)) for t in _scan(text).tracebacks] == want
    # each traceback's header, frames and code on one line, its exception line on the next
    glued: list[str] = []
    for line in lines:
        if line.startswith(" ") and glued and glued[-1].startswith("Traceback"):
            glued[-1] += line
        else:
            glued.append(line)
    assert len(glued) == 7 and glued[0].count("File") == 5
    res = _scan("\n".join(glued))
    assert _funcs(_typed(res, "json.decoder.JSONDecodeError")) == want[0][1]
    tb = _typed(res, "RuntimeError")
    assert _funcs(tb) == ["<module>", "main"] and tb.frames[0].code == "main()"
    # a thread's paste whose header and first frame were glued
    (tb,) = _scan_log("environment/env_numpy2_released_module_compiled_against_numpy1_unpinned_requirements").tracebacks
    assert tb.frames[0].file.endswith("bin/ipython") and tb.frames[0].func == "<module>"


def test_pytest_line_report_and_squeezed_e_lines(tmp_path):
    """pytest's ``--tb=line`` prints ``path.py:N: ExcType: message`` after the E line: the raise site and the
    exception. A paste that squeezed pytest's ``E   `` to ``E `` still marks the exception line."""
    (tmp_path / "test_x.py").write_text(
        "import json\n\ndef parse(s):\n    return json.loads(s)\n\ndef test_parse():\n    assert parse('{bad') == {}\n"
    )
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=line", "test_x.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    res = _scan(p.stdout)
    sites = [(site.file, site.line, exc) for _s, _n, site, exc in res.pytest_locations]
    assert len(sites) == 1 and sites[0][0].endswith("json/decoder.py") and sites[0][2] == "json.decoder.JSONDecodeError"
    # a warning printed by the warnings module in the same shape is no raise site
    assert not _scan("app/train.py:12: UserWarning: lr is ignored\n").pytest_locations
    res = _scan_log("pytest_python/py_collection_conftest_import_failure_style_refactor_broke_import")
    assert any(text.startswith("ConftestImportFailure:") for _s, _n, text in res.pytest_errors)
