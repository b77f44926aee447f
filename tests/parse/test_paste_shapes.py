"""Logs as they reach a thread: quoted, indented, behind a launcher's or a logger's prefix, from a REPL or a
notebook. The parser must read the same failing exception and raising frame from each shape as from the
plain output. Real output is produced here in subprocesses; the logs from public threads are real too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.audit_extract import SHAPES  # each: a documented output format every line passes through
from pytest_faildiag.engine import diagnose
from pytest_faildiag.engine.analyze import analyze, failure_point
from pytest_faildiag.engine.reason import Facts, frame_owner, gather_facts
from pytest_faildiag.parse.scan import ScanResult, prefixed_exception, scan_text
from pytest_faildiag.rules import load_ruleset

DATA = Path(__file__).resolve().parents[1] / "data"
THREADS = DATA / "corpus" / "threads"
KB = DATA / "kb"


def _facts(text: str) -> tuple[Facts, ScanResult]:
    rs = load_ruleset()
    res = ScanResult()
    scan_text(text, "log", rs, res)
    an = analyze(res, rs, exit_code=None, command=None)
    an.profile.first_failure = failure_point(res, an.findings)
    return gather_facts(res, an, rs), res


def _owner(facts: Facts) -> str:
    assert facts.raise_frame is not None
    kind, lib = frame_owner(facts.raise_frame, load_ruleset().reasoning.libraries)
    return f"{kind}:{lib}" if lib else kind


def _train(name: str) -> str:
    assert json.loads((THREADS / "split.json").read_text())["split"][name] == "train"  # never a dev log
    return (THREADS / f"{name}.log").read_text()


def _run(tmp_path: Path, code: str, *args: str, stdin: str | None = None) -> str:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.run(
        [sys.executable, *args, str(script)] if stdin is None else [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        input=stdin,
    )
    return p.stdout + p.stderr


CHAINED = """
    def load(path):
        return open(path).read()

    def prepare():
        try:
            load("missing/train.jsonl")
        except FileNotFoundError as exc:
            raise RuntimeError("dataset could not be prepared") from exc

    prepare()
"""


def _tracebacks(res: ScanResult) -> list[tuple]:
    return [
        (tb.exc_type, tb.message, tb.chained, [(f.file, f.line, f.func, f.code) for f in tb.frames])
        for tb in res.tracebacks
    ]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_real_chained_traceback_reads_the_same_behind_every_prefix(tmp_path, shape):
    plain = _run(tmp_path, CHAINED)
    shaped = "\n".join(SHAPES[shape](line) for line in plain.splitlines()) + "\n"
    _, want = _facts(plain)
    assert [tb[0] for tb in _tracebacks(want)] == ["FileNotFoundError", "RuntimeError"]
    assert _tracebacks(want)[1][2] and _tracebacks(want)[1][3][-1][2] == "prepare"
    facts, got = _facts(shaped)
    assert _tracebacks(got) == _tracebacks(want)
    assert facts.raise_frame is not None and facts.raise_frame.func == "load"  # the rule's FileNotFoundError


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_real_exception_line_without_traceback_reads_behind_every_prefix(tmp_path, shape):
    # ``sys.tracebacklimit = 0`` prints the exception line alone, as launchers' summaries and excerpts do
    plain = _run(
        tmp_path, 'import sys\nsys.tracebacklimit = 0\nraise PermissionError(13, "Permission denied", "/data/cache")\n'
    )
    assert plain.strip() == "PermissionError: [Errno 13] Permission denied: '/data/cache'"
    facts, _ = _facts(SHAPES[shape](plain.strip()) + "\n")
    assert facts.exc_type == "PermissionError" and facts.message.startswith("[Errno 13]")


def test_a_repl_fed_a_script_glues_its_prompts_to_the_output_and_the_output_is_still_read(tmp_path):
    # ``python -i`` prints a prompt for each line it reads, with nothing after it when fed from a pipe
    code = 'import sys\nsys.tracebacklimit = 0\nraise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")\n'
    out = _run(tmp_path, "", "-i", stdin=code)
    assert ">>> >>> >>> RuntimeError: CUDA out of memory" in out
    d = diagnose(texts={"repl": out})
    assert d.profile.type == "oom"  # the rule saw the line: it is output, not code typed at the prompt
    out = _run(tmp_path, "", "-i", stdin='def f():\n    raise KeyError("rank")\n\nf()\n')
    facts, _ = _facts(out)
    assert facts.exc_type == "KeyError" and facts.raise_frame.file == "<stdin>" and facts.raise_frame.func == "f"


def test_a_real_syntax_error_names_the_file_that_does_not_parse(tmp_path):
    (tmp_path / "broken_mod.py").write_text("def f(:\n    pass\n")
    out = _run(tmp_path, "import broken_mod\n")
    facts, _ = _facts(out)
    assert facts.exc_type == "SyntaxError"
    assert facts.raise_frame is not None and facts.raise_frame.file.endswith("broken_mod.py")
    assert facts.raise_frame.line == 1 and _owner(facts) == "user"


def test_frames_pasted_without_their_indentation_keep_their_code_lines_apart(tmp_path):
    # a forum that strips leading spaces: the code line under each frame sits at the margin too
    plain = _run(tmp_path, CHAINED)
    flat = "\n".join(line.lstrip() for line in plain.splitlines()) + "\n"
    _, want = _facts(plain)
    _, got = _facts(flat)
    assert _tracebacks(got) == _tracebacks(want)
    kb = (KB / "torchvision" / "nms_cpu_build_on_cuda.log").read_text()  # a real paste of that shape
    facts, res = _facts(kb)
    assert facts.exc_type == "RuntimeError" and len(res.tracebacks[0].frames) > 3
    assert not any(tb.exc_type == "main()" for tb in res.tracebacks)


def test_exception_lines_behind_real_prefixes_from_threads():
    # vLLM's worker prefix, pytest's INTERNALERROR> and its short summary line, JAX's FilteredStackTrace
    facts, _ = _facts(_train("ascend/pta_moe_dispatch_hccl_buffsize_too_small"))
    assert facts.exc_type == "RuntimeError" and "aclnnMoeDistributeDispatchV3" in facts.message
    facts, _ = _facts(_train("pytest_python/pt_unknown_hook_pytest_config_variable"))
    assert facts.exc_type == "pluggy.PluginValidationError"
    facts, _ = _facts(_train("pytest_python/pt_too_many_open_files_darshan_logs_not_closed"))
    assert facts.exc_type == "OSError" and facts.message.startswith("[Errno 24]")
    facts, _ = _facts((KB / "jax" / "concretization_reshape.log").read_text())
    assert facts.exc_type == "jax.core.ConcretizationTypeError"


def test_frames_behind_a_loggers_per_line_prefix_without_a_header():
    facts, _ = _facts((KB / "catalogue_round2" / "vllm_ascend_capture_begin_missing_in_cann.log").read_text())
    assert facts.exc_type == "RuntimeError" and "aclmdlRICaptureBegin" in facts.message
    assert facts.raise_frame.file.endswith("torch_npu/npu/graphs.py") and facts.raise_frame.line == 96
    assert _owner(facts) == "library:torch_npu"


def test_pytests_short_summary_does_not_replace_the_report_it_summarises(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "def helper():\n    raise ValueError('bad row 7')\n\ndef test_a():\n    helper()\n"
    )
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:faildiag", "test_x.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "FAILED test_x.py::test_a - ValueError: bad row 7" in p.stdout
    shaped = "\n".join("0: " + line for line in p.stdout.splitlines()) + "\n"  # pytest under srun --label
    for text in (p.stdout, shaped):
        facts, _ = _facts(text)  # the raise site ``test_x.py:2: ValueError``, not the summary's bare line
        assert facts.exc_type == "ValueError" and "bad row 7" in facts.message
        assert facts.raise_frame is not None and (facts.raise_frame.file, facts.raise_frame.line) == ("test_x.py", 2)


@pytest.mark.parametrize(
    ("log", "frame", "owner"),
    [
        ("cuda_nccl_catalogue/cudnn_not_supported_conv2d", ("conv.py", 308, "forward"), "library:torch"),
        ("compile/inductor_cpp_compile_error", ("<cell In[1]>", 10, "<module>"), "user"),
        ("mindspore/matmul_input_dimensions", ("cell.py", 705, "__call__"), "library:mindspore"),
    ],
)
def test_ipython_tracebacks_give_their_frames(log, frame, owner):
    # IPython 7 (``~/x.py in f(a)`` and ``---> N``), IPython 8 (``Cell In[1], line 10``, ``File ~/x.py:N, in``)
    facts, _ = _facts((KB / f"{log}.log").read_text())
    fr = facts.raise_frame
    assert fr is not None and fr.file.endswith(frame[0]) and (fr.line, fr.func) == frame[1:]
    assert _owner(facts) == owner


def test_an_exception_class_named_otherwise_right_after_a_frame_without_code_is_the_exception(tmp_path):
    # ``python -c`` shows no code under its ``<string>`` frame: the next line is the exception itself
    p = subprocess.run(
        [sys.executable, "-c", "class Boom(Exception): pass\nraise Boom('disk quota')"], capture_output=True, text=True
    )
    _, res = _facts(p.stderr)
    assert [(tb.exc_type, len(tb.frames)) for tb in res.tracebacks] == [("Boom", 1)]


def test_pytests_summary_of_a_plain_assert_leaves_the_raise_site_in_charge(tmp_path):
    # pytest's E lines show ``assert 1 == 2`` alone; the summary line names AssertionError
    (tmp_path / "test_y.py").write_text("def test_b():\n    total = 1\n    assert total == 2\n")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:faildiag", "test_y.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert (
        "FAILED test_y.py::test_b - assert 1 == 2" in p.stdout
        or "FAILED test_y.py::test_b - AssertionError" in p.stdout
    )
    facts, res = _facts(p.stdout)
    assert not any(tb.bare for tb in res.tracebacks)
    assert facts.exc_type == "AssertionError" and facts.raise_frame is not None
    assert (facts.raise_frame.file, facts.raise_frame.line) == ("test_y.py", 3)


def test_an_exception_group_keeps_its_own_frames_and_each_sub_exception(tmp_path):
    out = _run(
        tmp_path,
        """
        def load(i):
            raise ValueError(f"bad shard {i}")

        def main():
            errors = []
            for i in range(2):
                try:
                    load(i)
                except ValueError as e:
                    errors.append(e)
            raise ExceptionGroup("loading failed", errors)

        main()
        """,
    )
    assert "+ Exception Group Traceback" in out
    facts, res = _facts(out)
    got = [(tb.exc_type, [f.func for f in tb.frames]) for tb in res.tracebacks]
    assert got == [
        ("ExceptionGroup", ["<module>", "main"]),
        ("ValueError", ["main", "load"]),
        ("ValueError", ["main", "load"]),
    ]
    assert facts.exc_type == "ValueError" and facts.raise_frame.func == "load"


def test_a_native_backtrace_frame_is_not_an_exception_line(tmp_path):
    """Real PyTorch: a c10d store that nobody serves, with C++ stack traces on. The backtrace names C++
    members (``#6 c10::DistError::DistError(...)``); behind a prefix, ``DistError::DistError`` is a
    qualified name, not Python's ``DistError: message`` (read as one, a peer's cascade line looked like the
    failure that started a job)."""
    pytest.importorskip("torch")
    code = textwrap.dedent(
        """
        import datetime, socket
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        import torch.distributed as dist
        dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=1))
        """
    )
    env = {**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    members = [ln for ln in p.stderr.splitlines() if "::DistError::DistError(" in ln]
    assert p.returncode != 0 and members, p.stderr[-2000:]
    assert all(prefixed_exception(ln) is None for ln in members)
    assert prefixed_exception("[rank1]: ValueError: bad batch shape") == ("ValueError", "bad batch shape")
