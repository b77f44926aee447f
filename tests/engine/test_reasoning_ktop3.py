"""Top-3 hypotheses that cover the distinct homes the evidence allows (issue 13, ktop3).

Each test shows one mechanism of ``engine/reason.py`` (the ``top-3 homes (ktop3)`` block of
``05-reasoning.toml``) on real evidence: logs of the thread corpus's train split (never dev), diagnosed with
the packs that know their message left out where the reasoning alone must carry them, and output of real
Python processes run here.
"""

from __future__ import annotations

import subprocess
import sys

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import diversify, frame_owner
from pytest_faildiag.model import RootCause, ValidationCheck
from pytest_faildiag.parse.scan import Frame
from pytest_faildiag.rules import load_ruleset
from tests.engine.corpus_logs import cats, context_checks, run_failing, train_log


def _cause(category: str, conf: float, lifted: bool = False) -> RootCause:
    c = RootCause(f"x.{category}", category, conf, category, [], rule="differential:x")
    if lifted:
        c.validation_checks.append(ValidationCheck("context:run:pytest", "passed", "lifted"))
    return c


def test_a_kept_home_takes_only_the_weakest_place_and_only_from_a_guess():
    """The kept home (``program_unshown``) replaces the third hypothesis when only a prior put it there; a
    stronger guess that stands above a hypothesis the evidence lifted stays, and so does the lifted one."""
    ranked = [_cause("model", 0.3), _cause("environment", 0.21), _cause("test_code", 0.16, lifted=True)]
    ranked.append(_cause("library", 0.14))
    assert [c.category for c in diversify(ranked, keep=["library"])[:3]] == ["model", "environment", "test_code"]

    ranked = [_cause("model", 0.3), _cause("environment", 0.21, lifted=True), _cause("config", 0.16)]
    ranked.append(_cause("library", 0.14))
    out = diversify(ranked, keep=["library"])
    assert [c.category for c in out[:3]] == ["model", "environment", "library"]
    assert out[2].confidence == 0.16  # at least the guess's confidence; the guess follows right after
    assert out[3].category == "config"


def test_a_collection_error_no_rule_knows_keeps_the_installed_versions_among_the_three():
    """A real train log: every test module fails at import with marshmallow 4's TypeError for a removed
    keyword (labelled environment). Without the rules that know the message, pytest's report shows no frame
    of the program: library is the kept home, but the installed versions' prior stands above the tests'
    code that the pytest run lifted, so it is the tests' code at the third place that the kept home could
    take, and a lifted hypothesis keeps it."""
    diag, label = train_log(
        "pytest_python/py_marshmallow4_removed_field_kwargs_collection_errors",
        "30-python.toml",
        "31-python-apps-catalogue.toml",
        "40-pytest.toml",
    )
    assert label["category"] == "environment"
    assert all(c.rule.startswith("differential:") for c in diag.root_causes)  # no rule explains it here
    assert "environment" in cats(diag)


def test_a_hang_whose_last_line_is_a_librarys_compiled_code_keeps_the_library():
    """A real train log of a hang, a library's bug: Horovod's own trace lines (``operations.cc:1159]``) are the
    last lines the run printed. The hang family ranks the library low, but nothing shows the program's code where
    the run stopped, so the library takes the third place (the data pipeline's prior put that one there)."""
    diag, label = train_log("distributed/dist_horovod_alltoall_hang_finalize_gpu_queue_nccl_2_8_3_bug")
    assert diag.profile.type == "hang" and label["category"] == "library"
    assert "library" in cats(diag)


def test_a_backtrace_stopped_in_a_lock_inlined_into_its_frame_reads_as_a_fault():
    """The known misreading of reason._native_stop: a real train log of a hang whose gdb backtrace stops in glibc's
    ``__internal_atexit`` (its lock taken inline, so no waiting function names the frame) reads as a fault's
    backtrace; the library still keeps a place, as nothing shows the program's code there."""
    diag, label = train_log("pytorch/pt_dataloader_worker_hang_gdb_atexit_lock_fork_pin_memory_thread")
    assert label["type"] == "hang" and diag.profile.type == "crash"
    assert "library" in cats(diag)


def test_a_nccl_tests_hang_after_nccls_own_lines_keeps_the_library():
    """A real train log: nccl-tests stops after NCCL's INFO lines (NCCL 2.25.1's shared-memory limit on a new
    GPU, labelled library). Without the catalogue's rule for that INFO line, the hang keeps NCCL's code (a
    library) among the three."""
    diag, label = train_log("distributed/nccl_tests_rtx5090_maxsharedmem_nccl2251", "15-cuda-nccl-catalogue.toml")
    assert diag.profile.type == "hang" and label["category"] == "library"
    assert not any(c.rule.startswith("nccl.") for c in diag.root_causes)
    assert "library" in cats(diag)


def test_a_hang_whose_last_line_is_the_programs_own_does_not_keep_the_library():
    """The contrast: a real train log whose run printed its own line last (``rank=0: before forward``); the
    program's code leads and the library is not pushed in."""
    diag, _label = train_log("distributed/neuronsp_debug_barrier_hotpath_hang")
    assert diag.profile.type == "hang"
    assert cats(diag, 1) == ["model"]
    assert "library" not in cats(diag)


def test_a_librarys_checkout_under_its_repository_name_is_the_library():
    """``/opt/pytorch/pytorch/torch/nn/modules/conv.py``: torch's source checkout sits in a folder named
    after its repository (pytorch/pytorch), not after the package; its frames are torch's, not the
    program's. A folder of the program's named like that is not a library."""
    libs = load_ruleset().reasoning.libraries
    assert frame_owner(Frame("/opt/pytorch/pytorch/torch/nn/modules/conv.py", 608, "_conv_forward"), libs) == (
        "library",
        "torch",
    )
    assert frame_owner(Frame("/src/vision/torchvision/ops/boxes.py", 1, "nms"), libs) == ("library", "torchvision")
    assert frame_owner(Frame("/home/user/pytorch/train/models.py", 3, "f"), libs) == ("user", None)


def test_torch_raising_from_its_checkout_keeps_the_library_among_the_three():
    """A real train log: oneDNN could not create a conv3d primitive inside torch run from its source
    checkout (labelled library). Without the catalogue's rule for oneDNN's message, torch's frames say a
    library raised below the program's ``test.py``, and the library is among the three."""
    diag, label = train_log(
        "pytorch/pt_cpu_onednn_conv3d_could_not_create_primitive_avx2_large_input", "35-system-catalogue.toml"
    )
    assert label["category"] == "library"
    assert not any(c.rule.startswith("onednn.") for c in diag.root_causes)
    assert context_checks(diag, "library").get("context:raiser:library") == "passed"
    assert "library" in cats(diag)


def test_pytests_indented_e_line_names_the_exception():
    """A real train log: pytest's long report prints ``E       AssertionError:`` indented under the test's
    source. That line names the exception (an assertion the test made): the assertion family's differential
    applies, the tests' code among its first hypotheses, even without the catalogue's rules for
    numpy.testing's message. Its frames were left out of the paste, not absent: the program's code is not
    moved down as if nothing showed it (no ``context:raiser:unseen``)."""
    diag, label = train_log(
        "pytest_python/py_pytest_arrays_not_equal_float_noise_exact_compare_in_test", "36-scipy-catalogue.toml"
    )
    assert label["category"] == "test_code"
    assert all(c.rule == "differential:assertion" for c in diag.root_causes)
    assert "test_code" in cats(diag, 2)
    assert "context:raiser:unseen" not in {v.name for c in diag.root_causes for v in c.validation_checks}


def test_a_file_named_like_a_test_run_as_the_program_is_the_programs_code(tmp_path):
    """A real process: ``python test_repro.py`` whose functions raise. Python prints the main program's
    ``<module>`` frame first; no runner imported the file, so no test ran: its frames are the program's
    (``raiser:user``), and the tests' code is not a hypothesis."""
    script = tmp_path / "test_repro.py"
    script.write_text("def test_case():\n    raise ValueError('bad shape for the input')\n\ntest_case()\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0 and "ValueError" in p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert "test_code" not in [c.category for c in diag.root_causes]
    assert context_checks(diag, "model").get("context:raiser:user") == "passed"

    # the same function called by a runner's frames (here a plain script importing the test module) is a test
    err, rc = run_failing(tmp_path, "import test_repro\n")
    called = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "test_code" in [c.category for c in called.root_causes]


def test_a_kernel_that_faulted_names_the_operator():
    """Two real train logs whose device runtime says a kernel raised while it executed: CUDA's
    "unspecified launch failure" (cudaErrorLaunchFailure, llama.cpp's mul_mat kernel) and CANN's "aicpu
    execution is abnormal … Kernel task happen error" (an AI CPU kernel), both labelled operator. Without
    the packs that know these messages, ``cue:kernel_fault`` lifts the operator among the three; CANN's words
    are an error line of their own after the exception, read like the resource cues."""
    diag, label = train_log(
        "pytorch/pt_llamacpp_server_unspecified_launch_failure_mul_mat_kernel_bug_fixed_pr8123",
        "15-cuda-nccl-catalogue.toml",
        "10-pytorch.toml",
    )
    assert label["category"] == "operator"
    assert not any(c.rule.startswith("cuda.") for c in diag.root_causes)
    assert context_checks(diag, "operator").get("context:cue:kernel_fault") == "passed"
    assert "operator" in cats(diag)

    diag, label = train_log(
        "ascend/pta_aicpu_rightshift_507018_zero_dim_int64_shift_tensor", "50-ascend.toml", "55-cann-catalogue.toml"
    )
    assert label["category"] == "operator"
    assert all(c.rule.startswith("differential:") for c in diag.root_causes)
    assert context_checks(diag, "operator").get("context:cue:kernel_fault") == "passed"
    assert "operator" in cats(diag)


def test_memory_named_in_camel_case_is_an_oom():
    """A real train log: TensorRT's builder logs "Error Code 2: OutOfMemory" for a workspace larger than the
    GPU (labelled oom, config). Without the rule that knows TensorRT's message, the CamelCase name still says
    memory ran out: the oom family applies, and the configured size is among its first hypotheses."""
    diag, label = train_log(
        "environment/env_tensorrt_engine_build_outofmemory_workspace_larger_than_gpu", "35-system-catalogue.toml"
    )
    assert label["type"] == "oom" and label["category"] == "config"
    assert not any(c.rule.startswith("tensorrt.") for c in diag.root_causes)
    assert diag.profile.type == "oom"
    assert "config" in cats(diag)
