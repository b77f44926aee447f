"""Tracebacks as tools and threads print them, second pass: Ray's wrapper of a remote exception, and the
message of an exception whose line a paste cut, printed below the last frame. Each shape is shown on a train
log of the thread corpus or on output produced here by the real tool (python, torch on the CPU)."""

from __future__ import annotations

from tests.engine.test_scan_paste import _python, _scan, _scan_log


def test_ray_task_error_names_the_remote_exception_and_its_frames():
    """Ray prints a remote task's failure as ``ray.exceptions.RayTaskError(NameError): ray::f() (pid=…)``,
    then the remote frames without a ``Traceback`` header (one header and frames per hop). Before, the header
    was no exception line and both hops' frames were tracebacks cut before any exception."""
    res = _scan_log("distributed/ray_train_torch_guide_missing_ray_import")
    (tb,) = res.tracebacks  # the hops' frames, outermost first: one call chain
    assert tb.exc_type == "NameError"
    assert [f.func for f in tb.frames] == [
        "train",
        "check_for_failure",
        "__execute",
        "discard_return_wrapper",
        "train_func",
    ]
    # the remote exception line, when the paste kept it, is the one read
    log = "\n".join(
        [
            "ray.exceptions.RayTaskError(ZeroDivisionError): ray::f() (pid=7, ip=10.0.0.1)",
            '  File "job.py", line 4, in f',
            "    return 1 / 0",
            "ZeroDivisionError: division by zero",
        ]
    )
    (tb,) = _scan(log).tracebacks
    assert (tb.exc_type, tb.message, tb.frames[0].func) == ("ZeroDivisionError", "division by zero", "f")
    # after the caller's traceback, the remote frames go on from the caller's ``ray.get``
    caller = ["Traceback (most recent call last):", '  File "driver.py", line 9, in <module>', "    ray.get(ref)"]
    (tb,) = _scan("\n".join(caller) + "\n" + log).tracebacks
    assert tb.exc_type == "ZeroDivisionError" and [f.func for f in tb.frames] == ["<module>", "f"]


TORCH_LOAD = """
import torch
def restore(model, state):
    model.load_state_dict(state)
restore(torch.nn.Linear(4, 2), torch.nn.Linear(4, 3).state_dict())
"""


def test_message_lines_below_the_last_frame_of_a_cut_traceback_are_output(tmp_path):
    """torch's ``load_state_dict`` raises ``RuntimeError: Error(s) in loading state_dict for Linear:`` and a
    ``\\tsize mismatch for …`` line per tensor. A paste that cut the exception's first line leaves those lines
    below the last frame's code: Python prints one code line per frame (3.11+: then carets), so an indented
    line deeper than that code is the exception's message, not code, and rules see it. The report's own words
    (``size mismatch for``, ``Missing key(s) in state_dict``: only torch's ``load_state_dict`` prints them, as the
    message of a RuntimeError) end the traceback as that RuntimeError."""
    p = _python(tmp_path, TORCH_LOAD)
    assert "\tsize mismatch for weight" in p.stderr
    tb = _scan(p.stderr).tracebacks[-1]
    assert tb.exc_type == "RuntimeError" and tb.frames[-1].func == "load_state_dict"
    cut = "\n".join(line for line in p.stderr.splitlines() if not line.startswith("RuntimeError"))
    res = _scan(cut)
    assert res.tracebacks[-1].exc_type == "RuntimeError" and res.tracebacks[-1].frames[-1].func == "load_state_dict"
    assert "torch.state_dict.mismatch" in res.rule_ids()
    # a thread's paste (tabs expanded to spaces) cut the same way
    res = _scan_log("pytorch/peft_old_adapter_enable_lora_qkv_size_mismatch")
    assert "torch.state_dict.mismatch" in res.rule_ids()
    assert res.tracebacks[0].frames[-1].func == "from_pretrained"


def test_lines_python_prints_under_a_frame_stay_the_frames(tmp_path):
    """What Python does print under a frame's code (carets, ``capture_locals``' ``name = value`` at the code's
    indentation) and a statement the code line leaves open do not end the traceback."""
    p = _python(
        tmp_path,
        """
        import traceback
        def div(a, b):
            return a / b
        try:
            div(1, 0)
        except ZeroDivisionError as exc:
            print("".join(traceback.TracebackException.from_exception(exc, capture_locals=True).format()))
        """,
    )
    assert "    a = 1" in p.stdout
    tb = _scan(p.stdout).tracebacks[-1]
    assert tb.exc_type == "ZeroDivisionError" and tb.frames[-1].func == "div"
    # a statement spanning lines (Python 3.13 prints all of them): its first line leaves a bracket open
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "run.py", line 3, in <module>',
            "    model = build(",
            "        size=3,",
            "    )",
            "ValueError: size must be even",
        ]
    )
    (tb,) = _scan(log).tracebacks
    assert tb.exc_type == "ValueError" and tb.frames[0].code == "model = build("


def test_a_paste_indented_by_tabs_keeps_its_exception_line():
    """A paste that indents the whole traceback by a tab indents its frames so too: its tab is no message."""
    log = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n    f()\n\tsize mismatch for w: x\n'
    assert _scan(log).tracebacks[0].exc_type == "RuntimeError" and "torch.state_dict.mismatch" in _scan(log).rule_ids()
    tabbed = "\n".join("\t" + line for line in log.splitlines()[:3]) + "\n\tValueError: bad\n"
    (tb,) = _scan(tabbed).tracebacks
    assert tb.exc_type == "ValueError" and tb.frames[0].code == "f()"


def test_exceptions_the_standard_library_prints_around_a_traceback(tmp_path):
    """Real output of the standard library's own wrappers: ``multiprocessing``'s ``Process SpawnProcess-1:``
    line, ``concurrent.futures``' ``_RemoteTraceback`` string chained to the caller's re-raise, a
    ``logging.exception`` prefix on the first line only, and Python 3.11's exception group (``| `` lines, the
    group's own line ``ExceptionGroup: msg (2 sub-exceptions)``)."""
    p = _python(
        tmp_path,
        """
        import multiprocessing as mp
        def work():
            raise ValueError("bad shard 3")
        if __name__ == "__main__":
            p = mp.get_context("spawn").Process(target=work)
            p.start()
            p.join()
        """,
    )
    (tb,) = _scan(p.stderr).tracebacks
    assert (tb.exc_type, tb.frames[-1].func) == ("ValueError", "work")
    p = _python(
        tmp_path,
        """
        from concurrent.futures import ProcessPoolExecutor
        def work(x):
            return {}[x]
        if __name__ == "__main__":
            with ProcessPoolExecutor(1) as ex:
                ex.submit(work, "k").result()
        """,
    )
    remote, local = _scan(p.stderr).tracebacks
    assert (remote.exc_type, remote.frames[-1].func, remote.chained) == ("KeyError", "work", False)
    assert local.chained and local.frames[0].func == "<module>"
    p = _python(
        tmp_path,
        """
        import logging
        logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        def load():
            return open("/nonexistent/cfg.yaml")
        try:
            load()
        except OSError:
            logging.getLogger("trainer").exception("could not start")
        """,
    )
    (tb,) = _scan(p.stderr).tracebacks
    assert (tb.exc_type, tb.frames[-1].func) == ("FileNotFoundError", "load")
    p = _python(
        tmp_path,
        """
        def a():
            raise ValueError("v")
        def b():
            raise TypeError("t")
        errs = []
        for f in (a, b):
            try:
                f()
            except Exception as e:
                errs.append(e)
        raise ExceptionGroup("many", errs)
        """,
    )
    group, first, second = _scan(p.stderr).tracebacks
    assert (group.exc_type, group.message) == (
        "ExceptionGroup",
        "many (2 sub-exceptions)",
    )  # before: "ExceptionGroup: many …"
    assert [(t.exc_type, t.frames[-1].func) for t in (first, second)] == [("ValueError", "a"), ("TypeError", "b")]
