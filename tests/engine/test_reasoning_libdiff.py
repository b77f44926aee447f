"""Where the evidence never shows the program's code (issue 13, libdiff).

A failure stated only in a library's or a tool's own log lines (no exception, no frame: ``raiser:log_only``)
does not lead with the program's code; and when no frame of the program or its tests is shown at all, the
libraries' code keeps a place among the three hypotheses (``program_unshown`` in ``engine/reason.py``, the
``program_unshown`` entry of ``05-reasoning.toml``).

The evidence is real: output of processes run here (gcc, Python) and logs of the thread corpus's train split
(never dev), some diagnosed with the pack that knows their message left out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import cats, run_failing, train_log

KB = Path(__file__).resolve().parents[1] / "data" / "kb"


def _checks(diag, category: str, name: str) -> list[str]:
    cause = next((c for c in diag.root_causes if c.category == category), None)
    return [] if cause is None else [v.status for v in cause.validation_checks if v.name == name]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler")
def test_a_tools_own_error_line_moves_the_programs_code_down(tmp_path):
    """The linker's own words, no exception and no frame: the program's code is still a hypothesis of the
    generic family, but the fact says nothing shows it on the way (a failed ``context:raiser:log_only``)."""
    src = tmp_path / "m.c"
    src.write_text("int main(void) { return 0; }\n")
    p = subprocess.run(
        ["gcc", str(src), "-lfaildiag_absent", "-o", str(tmp_path / "m")], capture_output=True, text=True, timeout=120
    )
    assert p.returncode != 0 and "faildiag_absent" in p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert cats(diag, 1) == ["environment"]
    assert _checks(diag, "model", "context:raiser:log_only") == ["failed"]


def test_the_same_words_raised_by_the_program_keep_its_code_a_hypothesis(tmp_path):
    """The contrast: the program raises with a traceback that shows its frame, so the fact does not hold."""
    err, rc = run_failing(
        tmp_path,
        """
        def link():
            raise RuntimeError("cannot find -lfaildiag_absent")

        link()
        """,
    )
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert all(v.name != "context:raiser:log_only" for c in diag.root_causes for v in c.validation_checks)


def test_a_librarys_own_error_line_no_rule_knows_does_not_lead_with_the_program():
    """A real train log: nccl-tests prints NCCL's own ``NCCL failure all_reduce.cu:95 'unhandled cuda
    error'``, no exception, no frame. Without the pack that knows NCCL's result codes the generic family
    ranks it, and its prior would name the program's code first; nothing shows that code, so the installed
    packages lead (the label: an NCCL 1.0 install, fixed by NCCL 2) and the program's code is moved down."""
    diag, label = train_log("distributed/nccl_tests_unhandled_cuda_nccl1", "15-cuda-nccl-catalogue.toml")
    assert label["category"] == "environment"
    assert all(c.rule.startswith("differential:") for c in diag.root_causes)  # no rule explains it here
    assert cats(diag, 1) == ["environment"]
    assert "model" not in cats(diag, 2)
    assert _checks(diag, "model", "context:raiser:log_only") == ["failed"]


def test_a_crash_is_not_a_log_report():
    """A signal handler's lines (glog's ``Check failed`` and its abort) say where the process died, not
    whose call drove native code there: the in-sample XLA log keeps the program's misuse a hypothesis."""
    diag = diagnose([str(KB / "jax_catalogue" / "xla_check_failed.log")], exit_code=134)
    assert diag.profile.type == "crash"
    assert "model" in cats(diag)
    assert all(v.name != "context:raiser:log_only" for c in diag.root_causes for v in c.validation_checks)


def test_a_hang_that_just_stops_is_not_a_log_report(tmp_path):
    """A run that stopped making progress reports nothing: no ``raiser:log_only``. A real process prints its
    progress and then waits forever; its log is read as it stands when the process is stopped."""
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import threading

            for step in range(1, 4):
                print(f"step {step} loss {2.5 - step / 10:.2f}", flush=True)
            threading.Event().wait()  # nobody ever sets it
            """
        )
    )
    log = tmp_path / "train.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while log.read_text().count("\n") < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait()
    diag = diagnose([str(log)])
    assert diag.profile.type == "hang"
    assert all(v.name != "context:raiser:log_only" for c in diag.root_causes for v in c.validation_checks)


def test_without_the_programs_frame_a_librarys_code_keeps_a_place_in_the_top_three(tmp_path):
    """The same real failure read twice, no rule knowing it: an index out of range. With its traceback the
    program's frame raised, and the index family's own homes (the data, the code, a configured size) are
    the three. Cut to its exception line (a launcher's summary, a thread's excerpt) nothing shows whose code
    indexed: a library's code takes the place of the weakest of the three, ahead of the one it displaced."""
    err, rc = run_failing(tmp_path, "sizes = [1, 2]\nprint(sizes[5])\n")
    full = diagnose(texts={"stderr": err}, exit_code=rc)
    assert all(c.rule == "differential:index" for c in full.root_causes)
    assert set(cats(full)) == {"model", "dataset", "config"}
    line = err.strip().splitlines()[-1]
    assert line.startswith("IndexError: ")
    cut = diagnose(texts={"stderr": line}, exit_code=rc)
    assert set(cats(cut, 2)) == {"dataset", "model"}
    assert cats(cut)[2] == "library"
    third, fourth = cut.root_causes[2], cut.root_causes[3]
    assert fourth.category == "config"  # the hypothesis that yielded its place follows right after
    assert third.confidence >= fourth.confidence


def test_a_rule_that_knows_the_message_keeps_its_own_homes():
    """The same train log as below with every pack loaded: PyTorch's OOM rule knows the message and lists
    its homes (a training library running the loop among them), so the reasoning does not add one to them:
    each of the three homes shown is the rule's own."""
    diag, _label = train_log("pytorch/pt_skorch_validation_step_no_grad_oom")
    shown: dict[str, str] = {}
    for c in diag.root_causes:
        shown.setdefault(c.category, c.rule)
    assert list(shown.values())[:3] == ["torch.cuda.oom"] * 3


def test_a_train_oom_whose_home_is_a_library_offers_it_among_the_three():
    """A real train log: an OOM message without a traceback (PyTorch's THC allocator), whose home was a
    library (skorch validated without no_grad, fixed upstream), with PyTorch's pack left out. The memory
    family lists a library last; with no frame of the program shown it keeps a place among the three."""
    diag, label = train_log("pytorch/pt_skorch_validation_step_no_grad_oom", "10-pytorch.toml")
    assert label["category"] == "library"
    assert diag.profile.type == "oom"
    assert all(c.rule.startswith("differential:") for c in diag.root_causes)
    assert cats(diag, 1) == ["resource"]
    assert "library" in cats(diag)


def test_an_ascend_op_error_no_rule_knows_keeps_the_library_among_the_three():
    """A real train log: an aclnn op's inner error code (561000) raised through torch_npu, no frame, with the
    Ascend packs left out. The device runtime and the installed CANN lead; the library that called the op
    on a device it does not support (the label) is kept among the three in place of the weakest hypothesis."""
    diag, label = train_log(
        "ascend/pta_mc2_dispatch_on_a2_561000", "50-ascend.toml", "54-ascend-ownership.toml", "55-cann-catalogue.toml"
    )
    assert label["category"] == "library"
    assert all(c.rule.startswith("differential:") for c in diag.root_causes)
    assert "library" in cats(diag)
    assert cats(diag, 1) != ["library"]


def test_pytests_report_of_a_raised_exception_is_not_a_librarys_log_line():
    """A pasted pytest report kept only its E-lines ("E   AssertionError: Arrays are not equal", no test header,
    no frame): that is an exception a test or the code under test raised, not a line a library or a tool logs
    for its own errors, so ``raiser:log_only`` does not move the program's code down."""
    diag, _label = train_log("pytest_python/py_pytest_arrays_not_equal_float_noise_exact_compare_in_test")
    assert all("context:raiser:log_only" not in [v.name for v in c.validation_checks] for c in diag.root_causes)
    assert {"test_code", "model"} <= set(cats(diag)[:2])
