"""Bad input never produces a traceback: property-based over bytes and text, plus the nasty shapes
real logs take (cut tracebacks, deep chains, fake workflow commands, malformed artifacts)."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_faildiag.engine import diagnose, render_markdown, render_text, report_dict, write_snapshot
from pytest_faildiag.parse.logread import InputError
from pytest_faildiag.redact import redact_text

FRAGMENTS = [
    "Traceback (most recent call last):\n",
    '  File "/w/train.py", line 3, in <module>\n',
    "    main()\n",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "[rank1]:",
    "NCCL WARN ",
    "\r",
    "\x1b[31m",
    "During handling of the above exception, another exception occurred:\n",
    "Fatal Python error: Segmentation fault\n",
    "Thread 0x00007f (most recent call first):\n",
    "~~~~ Stack of MainThread (1) ~~~~\n",
    "E   assert 1 == 2\n",
    "Root Cause (first observed failure):\n",
    "  rank      : 1 (local_rank: 1)\n",
    "::error::injected\n",
    "\x00",
    "\udcff",
]

lines = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=80)), max_size=60).map("".join)


def _check(d) -> None:
    doc = report_dict(d)
    json.dumps(doc)
    assert doc["schema"] == "faildiag.report/1"
    render_text(d)
    render_markdown(d)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines, st.one_of(st.none(), st.integers(-64, 300)))
def test_any_text_gets_a_report_never_a_traceback(text, exit_code):
    try:
        d = diagnose(texts={"stderr": text}, exit_code=exit_code)
    except InputError:
        assert not text.strip() or exit_code is None
        return
    _check(d)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=4096))
def test_random_bytes_in_a_file_get_a_report_or_a_one_line_input_error(tmp_path_factory, data):
    f = tmp_path_factory.mktemp("b") / "run.log"
    f.write_bytes(data)
    try:
        d = diagnose([f], exit_code=1)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    _check(d)


def test_truncated_utf8_and_a_traceback_cut_mid_line(tmp_path):
    f = tmp_path / "cut.log"
    f.write_bytes(
        'Traceback (most recent call last):\n  File "/w/a.py", line 1, in <module>\n    x = \xe2\x82'.encode("latin-1")
    )
    d = diagnose([f], exit_code=1)
    _check(d)


def test_a_real_1000_deep_exception_chain_is_read_with_bounded_memory(tmp_path):
    script = tmp_path / "deep.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        sys.setrecursionlimit(10000)
        def f(n):
            if n == 0:
                raise ValueError("bottom")
            try:
                f(n - 1)
            except Exception as e:
                raise KeyError(n) from e
        f(1000)
    """)
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.count("Traceback") > 500
    d = diagnose(texts={"stderr": p.stderr}, exit_code=1)
    _check(d)
    assert "ValueError" in d.profile.first_failure.excerpt or "KeyError" in d.profile.first_failure.excerpt


def test_malformed_artifacts_are_noted_and_skipped(tmp_path):
    (tmp_path / "error.json").write_text("{not json")
    (tmp_path / "nccl_trace_rank_0").write_bytes(b"\x80\x05garbage")
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps({"entries": [os.system]}))  # a class reference: refused
    (tmp_path / "env.lock.json").write_text("[1, 2")
    (tmp_path / "stderr.txt").write_text("RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\n")
    d = diagnose([tmp_path], exit_code=1)
    _check(d)
    assert d.root_causes[0].id == "model.shape_mismatch"
    assert any("evil.pkl" in n for n in d.notes)
    assert any("error.json" in n or "env.lock.json" in n for n in d.notes)


def test_paths_inside_logs_are_never_used_to_write(tmp_path):
    outside = tmp_path / "outside"
    log = f"FileNotFoundError: [Errno 2] No such file or directory: '{outside}/../../etc/x'\n"
    out = tmp_path / "out"
    write_snapshot(
        diagnose(texts={"stderr": log}, exit_code=1), out, extra_files={"../escape.txt": "nope", "logs/ok.txt": "fine"}
    )
    assert not outside.exists() and not (tmp_path / "escape.txt").exists()
    assert (out / "logs" / "ok.txt").read_text() == "fine"


WRITER = """
import sys, itertools
from pytest_faildiag.engine import diagnose, write_snapshot
d = diagnose(texts={"stderr": "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\\n" + "x" * 200000}, exit_code=1)
print("ready", flush=True)
for i in itertools.count():
    d.summary = f"write {i}"
    write_snapshot(d, sys.argv[1])
"""


def test_sigkill_while_writing_never_leaves_a_half_written_report(tmp_path):
    out = tmp_path / "snap"
    for attempt in range(6):
        p = subprocess.Popen([sys.executable, "-c", WRITER, str(out)], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.05 + attempt * 0.07)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if (out / "report.json").exists():
            json.loads((out / "report.json").read_text())  # whole, or not there at all
            json.loads((out / "meta" / "root-causes.json").read_text())


@pytest.mark.timeout(60)
@pytest.mark.parametrize("unit", ["x", "a.b", "a=b", "--", "a:b/", "http://", "key: ", "\t", "\"'"])
def test_redaction_stays_linear_on_pathological_long_lines(unit):
    # a quadratic pattern takes minutes on 300 KB; the timeout turns that into a failure, not a hang
    text = unit * (300_000 // len(unit))
    assert len(redact_text(text)) > 0
