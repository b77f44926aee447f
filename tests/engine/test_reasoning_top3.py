"""Three distinct hypotheses that cover where causes really live (issue 13).

Each test shows one mechanism of ``engine/reason.py`` on real evidence: output of real processes run here
(coreutils, Python), or real logs of the thread corpus's train split (never dev). Where a test needs a log
that no rule knows, it diagnoses a real train log with the pack that knows its message left out: the
reasoning alone must then reach what the rule would have said.
"""

from __future__ import annotations

import subprocess
import sys

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import run_failing as _run
from tests.engine.corpus_logs import train_log as _train_log
from tests.engine.corpus_logs import without as _without


def _cats(diag, n: int = 3) -> list[str]:
    return [c.category for c in diag.root_causes[:n]]


def test_a_stage_the_family_does_not_list_still_names_a_hypothesis(tmp_path):
    """A decode error's family (data, config, the locale, the code) lists no checkpoint; the frames show
    the program loading its checkpoint, and the stage lifts ``checkpoint``, so it joins the differential
    with the facts that lifted it (a passed ``context:stage:checkpoint`` check). The same error while
    reading records does not offer it."""
    body = """
        import json

        def {func}(path):
            with open(path) as f:
                return json.load(f)

        open("state.json", "w").close()  # a file another run was killed while writing
        {func}("state.json")
    """
    err, rc = _run(tmp_path, body.format(func="load_checkpoint"))
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert diag.profile.stage == "checkpoint"
    assert "checkpoint" in _cats(diag)
    cause = next(c for c in diag.root_causes if c.category == "checkpoint")
    assert cause.rule == "differential:decode"
    assert [v.status for v in cause.validation_checks if v.name == "context:stage:checkpoint"] == ["passed"]

    err, rc = _run(tmp_path, body.format(func="read_records"))
    plain = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "checkpoint" not in [c.category for c in plain.root_causes]


def test_a_checkpoint_error_no_rule_knows_offers_the_checkpoint_first():
    """A real train log (a state dict saved from DataParallel loaded into a bare model) without the rule
    that knows PyTorch's state-dict message: a bare RuntimeError, whose generic family lists no checkpoint.
    Its words speak of the state dict, so the checkpoint still leads."""
    # 23-torch-ownership.toml's wrapper-prefix rule knows the message too (kpt6)
    diag, label = _train_log(
        "pytorch/pt_yolov1_dataparallel_module_prefix", "10-pytorch.toml", "23-torch-ownership.toml"
    )
    assert not any(c.rule.startswith("torch.") for c in diag.root_causes)  # no rule explains it here
    assert label["category"] == "checkpoint"
    assert _cats(diag, 1) == ["checkpoint"]


def test_a_log_whose_last_line_says_what_failed_is_a_failure_not_a_hang(tmp_path):
    """Real coreutils output names its failure without the words the scanner flags (error, exception):
    ``ls: cannot access '…': No such file or directory``. Its last line is its message, so it is a runtime
    error whose missing path puts the configuration among the causes, not a hang. A real run that printed
    progress and stopped without a word is still a hang, even when its chatter (an INFO line) uses a
    failure word."""
    p = subprocess.run(["ls", str(tmp_path / "no-such-folder")], capture_output=True, text=True)
    assert p.returncode != 0 and "cannot access" in p.stderr
    excerpt = diagnose(texts={"log": p.stderr})  # pasted as an excerpt: no exit status
    assert excerpt.profile.type == "runtime_error"
    assert "config" in _cats(excerpt)
    assert "hang" not in {c.id.split(".")[0] for c in excerpt.root_causes}

    script = tmp_path / "train.py"
    script.write_text(
        "import logging, sys, time\n"
        "logging.basicConfig(level=logging.INFO, format='%(levelname)s %(message)s')\n"
        "for step in range(3):\n    print(f'step {step} loss 0.5', flush=True)\n"
        "logging.info('could not find the optional plugin; using the default one')\n"
        "time.sleep(60)\n"
    )
    try:
        subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=3)
        raise AssertionError("the run should have been stopped")
    except subprocess.TimeoutExpired as stopped:
        out = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else stopped.stdout
    assert "step 2" in out
    assert diagnose(texts={"log": out}).profile.type == "hang"


def test_an_out_of_memory_message_no_rule_knows_reads_as_oom():
    """XLA's words for a TPU's memory running out, in a real train log, without the JAX pack: the message
    says memory ran out, so the type is ``oom`` and the oom family's differential applies, which offers
    the launch configuration (the labelled cause: tokens per device) beside the batch that does not fit."""
    with_rule, label = _train_log("jax/trax_tpu_hbm_oom_tokens_per_device")
    diag, _ = _train_log("jax/trax_tpu_hbm_oom_tokens_per_device", "70-jax.toml")
    assert not any(c.rule.startswith("jax.") for c in diag.root_causes)
    assert diag.profile.type == with_rule.profile.type == label["type"] == "oom"
    assert {c.rule for c in diag.root_causes} == {"differential:oom"}
    assert label["category"] in _cats(diag)


def test_a_device_runtime_message_no_rule_knows_reads_as_the_backend():
    """``no kernel image is available for execution on the device`` printed by JAX (a real train log), with
    the packs whose CUDA rules know the message left out: the message is the device runtime's own, so the
    type is ``backend`` and the backend family ranks the runtime itself (the labelled cause) and the
    driver/toolkit builds first."""
    diag, label = _train_log(
        "jax/jax_no_kernel_image_driver470_cuda1162_parallel_compile",
        "10-pytorch.toml",
        "15-cuda-nccl-catalogue.toml",
    )
    assert diag.profile.type == label["type"] == "backend"
    assert _cats(diag, 1) == [label["category"]]
    assert "environment" in _cats(diag)


def test_three_distinct_hypotheses_show_even_when_the_family_names_two():
    """A JAX tracer error's family names two causes (the program, a library that traces unsafe code); the
    generic family completes a third, weighed below both, so a person always sees three places to look."""
    diag, label = _train_log("jax/graphcast_xarray_jax_tracer_array_conversion")
    cats = _cats(diag)
    assert len(set(cats)) == 3
    # the two the family names lead, in either order (JAX's note on where the traced value came from names
    # graphcast's release here, so the library leads: kwo3's _trace_origin)
    assert set(cats[:2]) == {"model", "library"} and label["category"] in cats
    third = diag.root_causes[2]
    assert third.rule == "differential:trace" and third.confidence < diag.root_causes[1].confidence


def test_a_segfault_the_shell_reports_reads_as_a_crash_without_its_rule(tmp_path):
    """A real segmentation fault, as the shell reports its child's death. Without the pack that knows the
    signals' messages, the words still say the process died on a signal: type ``crash``, whose family puts
    a library's native code first (here: ctypes reading address 0), not a hang and not ``unknown``."""
    p = subprocess.run(
        ["bash", "-c", f"'{sys.executable}' -c 'import ctypes; ctypes.string_at(0)'; true"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert "Segmentation fault" in p.stderr
    assert diagnose(texts={"log": p.stderr}).profile.type == "crash"  # the rule's reading
    diag = diagnose(texts={"log": p.stderr}, ruleset=_without("30-python.toml"))
    assert not any(c.rule.startswith("proc.") for c in diag.root_causes)
    assert diag.profile.type == "crash"
    assert _cats(diag, 1) == ["library"] and {c.rule for c in diag.root_causes} == {"differential:crash"}


def test_nccls_own_warn_line_is_read_as_its_failure_without_its_rules():
    """NCCL reports its errors at its WARN level and its progress at INFO. A real train log that ends in
    ``NCCL WARN Cuda failure 'invalid argument'`` and INFO lines, without the packs that know NCCL: the WARN
    line says what failed, so the run failed at communication (the type its rules give it), not a hang."""
    with_rules, label = _train_log("distributed/nccl_nvls_invalid_argument_fabricmanager")
    diag, _ = _train_log(
        "distributed/nccl_nvls_invalid_argument_fabricmanager", "15-cuda-nccl-catalogue.toml", "20-distributed.toml"
    )
    assert not any(c.rule.startswith("nccl.") for c in diag.root_causes)
    assert diag.profile.type == with_rules.profile.type == label["type"] == "communication"


def test_a_unittest_run_lifts_the_tests_code_as_a_pytest_run_does():
    """A real train log of numpy's own unittest suite: ``MemoryError`` in ``test_zeros_big``, the test
    allocating more than a 32-bit process holds (the labelled cause: the test's code). Not pytest's log,
    but unittest's report shows that tests ran (``run:tests``), which lifts the tests' code as ``run:pytest``
    does: test_code is the second hypothesis, above the launch configuration, and says why."""
    diag, label = _train_log("pytest_python/py_numpy_memoryerror_win32_test_zeros_big")
    assert diag.profile.stack != "pytest" and label["category"] == "test_code"
    assert _cats(diag)[:2] == ["resource", "test_code"]
    cause = diag.root_causes[1]
    assert [v.status for v in cause.validation_checks if v.name == "context:run:tests"] == ["passed"]
