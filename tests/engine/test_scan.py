"""The one-pass scanner on real output: chained exceptions, interleaved ranks, progress bars, ANSI,
thread dumps, and the same findings whether a multi-pattern engine finds a large log's lines or Python does."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.make_noise_log import write as write_noise
from pytest_faildiag.engine import diagnose
from pytest_faildiag.parse.scan import ScanResult, scan_file, scan_text
from pytest_faildiag.rules import load_ruleset


def _run_python(tmp_path, code: str) -> subprocess.CompletedProcess:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)


def test_a_real_chained_exception_keeps_both_tracebacks_in_order(tmp_path):
    p = _run_python(
        tmp_path,
        """
        def load():
            raise FileNotFoundError(2, "No such file or directory", "data/train.jsonl")
        try:
            load()
        except FileNotFoundError as exc:
            raise RuntimeError("dataset could not be prepared") from exc
    """,
    )
    res = ScanResult()
    scan_text(p.stderr, "stderr", load_ruleset(), res)
    types = [tb.exc_type for tb in res.tracebacks]
    assert types == ["FileNotFoundError", "RuntimeError"]
    assert res.tracebacks[1].chained and not res.tracebacks[0].chained
    assert res.tracebacks[0].user_frame.func == "load"


def test_the_first_exception_of_a_chain_names_the_failure_when_no_rule_knows_the_last(tmp_path):
    p = _run_python(
        tmp_path,
        """
        import json
        class ConfigBroken(Exception):
            pass
        try:
            json.loads("{not json")
        except ValueError:
            raise ConfigBroken("settings could not be read")
    """,
    )
    d = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert "JSONDecodeError" in d.profile.first_failure.excerpt
    assert d.root_causes, "a fallback cause is always offered for a failed run"
    assert all(e.kind in ("direct", "hypothesis") for c in d.root_causes for e in c.evidence)


def test_tracebacks_from_ranks_printed_interleaved_are_kept_apart():
    log = "\n".join(
        [
            "[rank0]:Traceback (most recent call last):",
            "[rank1]:Traceback (most recent call last):",
            '[rank0]:  File "/w/train.py", line 10, in <module>',
            '[rank1]:  File "/w/train.py", line 12, in <module>',
            "[rank1]:    dist.all_reduce(t)",
            "[rank0]:    step()",
            "[rank1]:RuntimeError: Connection closed by peer",
            "[rank0]:ValueError: labels must be non-negative",
        ]
    )
    res = ScanResult()
    scan_text(log, "log", load_ruleset(), res)
    by_rank = {tb.rank: tb for tb in res.tracebacks}
    assert by_rank["0"].exc_type == "ValueError" and by_rank["0"].frames[0].line == 10
    assert by_rank["1"].exc_type == "RuntimeError" and by_rank["1"].frames[0].code == "dist.all_reduce(t)"


def test_progress_bars_and_ansi_colours_do_not_hide_the_error():
    log = (
        "Epoch 1:  10%|#         | 1/10\rEpoch 1:  20%|##        | 2/10\r"
        "\x1b[31mRuntimeError: CUDA error: device-side assert triggered\x1b[0m\n"
    )
    d = diagnose(texts={"stderr": log}, exit_code=1)
    assert d.root_causes[0].id == "dataset.index_out_of_range"
    assert "\x1b" not in d.profile.first_failure.excerpt
    assert d.profile.first_failure.excerpt.startswith("RuntimeError: CUDA error")


def test_a_real_faulthandler_dump_is_parsed_into_stuck_frames(tmp_path):
    p = _run_python(
        tmp_path,
        """
        import faulthandler, sys, threading, time
        ev = threading.Event()
        def waiter():
            ev.wait()
        threading.Thread(target=waiter, daemon=True).start()
        time.sleep(0.2)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    """,
    )
    res = ScanResult()
    scan_text(p.stderr, "stderr", load_ruleset(), res)
    funcs = {d.innermost[0].func for d in res.dumps if d.innermost}
    assert "wait" in funcs or "_wait" in funcs or "acquire" in funcs
    assert any(d.innermost_first for d in res.dumps)


@pytest.mark.parametrize("engine", ["hyperscan", "re2"])
def test_a_multi_pattern_engine_and_python_scanner_find_the_same_things(tmp_path, monkeypatch, engine):
    pytest.importorskip(engine)
    log = tmp_path / "train.log"
    write_noise(log, 2)  # 2 MiB: above the engine threshold
    with open(log, "a") as f:
        f.write(
            'Traceback (most recent call last):\n  File "/w/t.py", line 3, in <module>\n    x()\n'
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
        )
    rs = load_ruleset()
    monkeypatch.setenv("FAILDIAG_SCAN_ENGINE", engine)
    fast = ScanResult()
    scan_file(str(log), "train.log", rs, fast)
    monkeypatch.setenv("FAILDIAG_SCAN_ENGINE", "python")
    slow = ScanResult()
    scan_file(str(log), "train.log", rs, slow)
    key = lambda r: sorted((f.rule.id, f.line) for f in r.findings)  # noqa: E731
    assert key(fast) == key(slow)
    assert [(t.exc_type, t.exc_line) for t in fast.tracebacks] == [(t.exc_type, t.exc_line) for t in slow.tracebacks]
    assert fast.sources["train.log"].tail[-1] == slow.sources["train.log"].tail[-1]


def test_overlapping_keywords_fire_every_rule_that_owns_one():
    # "CUDA error: out of memory" holds both an OOM keyword and the generic CUDA one
    d = diagnose(texts={"stderr": "RuntimeError: CUDA error: out of memory\n"}, exit_code=1)
    assert d.profile.type == "oom"
    assert d.root_causes[0].category == "resource"


def test_secrets_in_logs_never_reach_the_report():
    log = (
        "export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n"
        "RuntimeError: failed to fetch https://alice:s3cr3t-pass@example.invalid/model.bin\n"
    )
    d = diagnose(texts={"stderr": log}, exit_code=1)
    from pytest_faildiag.engine import render_markdown, render_text, report_dict

    blob = str(report_dict(d)) + render_text(d) + render_markdown(d)
    assert "hf_AbCdEf" not in blob and "s3cr3t-pass" not in blob


THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _train_log(name: str) -> Path:
    """A real log of the thread corpus's train split (dev logs are never fixtures)."""
    assert json.loads((THREADS / "split.json").read_text())["split"][name] == "train"
    return THREADS / f"{name}.log"


def _scan(text: str) -> ScanResult:
    res = ScanResult()
    scan_text(text, "log", load_ruleset(), res)
    return res


def test_frames_printed_without_the_traceback_header_still_make_a_traceback(tmp_path):
    """Log handlers and excerpts print the frames and the exception line without "Traceback (most recent
    call last):". The frames are still the traceback's: who raised, and where."""
    p = _run_python(
        tmp_path,
        """
        import sys, traceback
        def load(path):
            return open(path)
        try:
            load("/nonexistent/shard-0.bin")
        except OSError as exc:
            sys.stderr.write("".join(traceback.format_tb(exc.__traceback__)))
            sys.stderr.write("".join(traceback.format_exception_only(exc)))
    """,
    )
    assert "Traceback" not in p.stderr and 'File "' in p.stderr
    (tb,) = _scan(p.stderr).tracebacks
    assert tb.headless and tb.exc_type == "FileNotFoundError"
    assert [f.func for f in tb.frames] == ["<module>", "load"] and tb.frames[-1].code == "return open(path)"
    # a real excerpt from an issue thread: the frame of a library, cut above, with its exception line
    res = ScanResult()
    scan_file(str(_train_log("distributed/pt_windows_use_libuv_tcpstore")), "log", load_ruleset(), res)
    (tb,) = res.tracebacks
    assert tb.exc_type == "RuntimeError" and tb.frames[0].func == "_create_c10d_store"


def test_frames_of_a_stack_print_are_not_closed_by_the_next_log_line(tmp_path):
    """``traceback.print_stack()`` prints frames with no header and no exception: the line after them is
    the program's next output, not an exception, so the frames stay a traceback without one."""
    p = _run_python(
        tmp_path,
        """
        import sys, traceback
        def step():
            traceback.print_stack(file=sys.stdout)
            print("saving checkpoint to out/ckpt-3")
        step()
    """,
    )
    (tb,) = _scan(p.stdout).tracebacks
    assert tb.exc_type is None and tb.frames[-1].func == "step"


def test_an_exception_line_of_a_qualified_or_plain_exception_class_is_read_alone(tmp_path):
    """Python prints the module of every non-builtin exception class (``pkg.mod.ImproperlyConfigured``),
    whatever its name ends with, and ``Exception`` itself has no prefix before its suffix. Printed alone
    (a cut log, a launcher's summary) both are exceptions; a warning printed that way is not a failure."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "__init__.py").write_text("")
    (tmp_path / "conf" / "exceptions.py").write_text(
        "class ImproperlyConfigured(Exception):\n    pass\n\n\nclass SettingsWarning(UserWarning):\n    pass\n"
    )
    p = _run_python(
        tmp_path,
        """
        import sys, traceback
        from conf.exceptions import ImproperlyConfigured, SettingsWarning
        for exc in (SettingsWarning("deprecated key"), ImproperlyConfigured("settings are not configured"),
                    Exception("worker 3 stopped")):
            sys.stdout.write("".join(traceback.format_exception_only(exc)))
    """,
    )
    assert "conf.exceptions.ImproperlyConfigured: settings" in p.stdout
    found = [(tb.exc_type, tb.message) for tb in _scan(p.stdout).tracebacks]
    assert found == [
        ("conf.exceptions.ImproperlyConfigured", "settings are not configured"),
        ("Exception", "worker 3 stopped"),
    ]
    d = diagnose([str(_train_log("pytest_python/pt_django_improperlyconfigured_no_pytest_django"))])
    assert d.profile.type == "runtime_error"  # before: unknown, the exception was not seen


def test_pytest_entries_with_windows_paths_reach_the_scanner():
    """pytest on Windows prints ``..\\lib\\x.py:142: in f``: the structural prefilter takes them like
    POSIX paths, so a log cut to these entries still has its frames."""
    res = ScanResult()
    scan_file(str(_train_log("pytest_python/pta_loop_closed_regression_0252")), "log", load_ruleset(), res)
    sites = [site for (_s, _n, site, _e) in res.pytest_locations]
    assert [s.func for s in sites] == ["__exit__", "_provide_event_loop", "run_until_complete"]
    assert "\\" in sites[0].file


def test_progress_needs_a_counter_that_advances(tmp_path):
    """One number after "step" or "iters" is a setting in a header (nccl-tests prints ``step: 2(factor)
    … iters: 20`` before any work); a counter that moves is work done."""
    res = ScanResult()
    scan_file(str(_train_log("distributed/nccl_tests_docker_ipc_unhandled_system")), "log", load_ruleset(), res)
    assert res.progress == 0
    p = _run_python(
        tmp_path,
        """
        for step in range(1, 4):
            print(f"step {step}: lr=0.001")
    """,
    )
    assert _scan(p.stdout).progress >= 2
    assert _scan("step 1: lr=0.001\nstep 1: lr=0.001\n").progress == 0  # one step printed twice


def test_past_the_reading_budget_a_huge_log_jumps_to_its_tail(tmp_path):
    """A log too big for the time left is not read to its end from the start: the scan jumps to its last
    part, where a failed run's failure is, and says how much it skipped."""
    import time

    from pytest_faildiag.parse.scan import ScanResult, scan_stream
    from pytest_faildiag.rules import load_ruleset

    log = tmp_path / "train.log"
    step = "".join(f"step {i} loss 0.{i % 97:02d} lr 3e-4 tokens/s 15230\n" for i in range(40000))
    with open(log, "w") as f:
        f.write(step)
        f.write("RuntimeError: CUDA error: an illegal memory access was encountered\n")  # never reached
        f.write(step * 2)
        f.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    result = ScanResult()
    with open(log, "rb") as f:
        scan_stream(f, "train.log", load_ruleset(), result, deadline=time.monotonic() - 1, tail_bytes=1 << 20)
    info = result.sources["train.log"]
    assert info.skipped_bytes > log.stat().st_size - (2 << 20)
    texts = [f.text for f in result.findings]
    assert any("out of memory" in t for t in texts)
    assert not any("illegal memory access" in t for t in texts)

    whole = ScanResult()
    with open(log, "rb") as f:
        scan_stream(f, "train.log", load_ruleset(), whole)  # no deadline: every line is read
    assert whole.sources["train.log"].skipped_bytes == 0
    assert any("illegal memory access" in f.text for f in whole.findings)


@pytest.mark.parametrize(
    ("name", "exc", "raiser_file"),
    [
        # IPython 7: the cell's module-level frame is ``<ipython-input-12-…> in <module>``, no parentheses
        ("pytest_python/tflite_toco_converter_error_keras_lstm_tf20", "ConverterError", "lite/python/convert.py"),
        # Google Colab's page copied into an issue: ``[/usr/…/utils.py](https://localhost:8080/#) in f(a)``
        ("pytorch/unsloth_fast_linear_forward_lora_size_mismatch", "RuntimeError", "unsloth/kernels/utils.py"),
        ("pytest_python/keras3_sequential_rejects_hub_keraslayer_tutorial", "ValueError", "models/sequential.py"),
    ],
)
def test_ipython7_and_colab_tracebacks_keep_their_frames(name: str, exc: str, raiser_file: str):
    """Notebook tracebacks as threads post them: the frames are read (the innermost is the library's file that
    raised) and the exception line closes the traceback; before, a module-level or linked frame line was taken
    for the exception and the real one was left bare, with no frame."""
    res = _scan(_train_log(name).read_text())
    tb = next(t for t in res.tracebacks if t.ipython)
    assert tb.exc_type == exc
    assert tb.frames[-1].file.replace("\\", "/").endswith(raiser_file), tb.frames
    assert tb.frames[0].func in ("<module>", "<cell line: 12>", "<cell line: 2>"), tb.frames[0]
    assert not any(t.bare and t.exc_type == exc for t in res.tracebacks)
