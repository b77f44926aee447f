"""Four catalogue facts from the train misses of batches 51 and 52 (#13), each shown on real output: pickle's
"Ran out of input" (an empty or truncated file, whose home the loading code says; read by data.pickle_truncated), PEFT's target_modules='all-linear'
(new in 0.8.0), PyTorch's CPU fallback for an operator a device backend lacks, and pickle refusing a local object
that a test defined. Each test fails on the rules from before the commit that added the fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import KB_DATA, fired, run_failing, train_log_led_by

# train log, the rule that leads it, the type it reads as, a generic rule that stands aside for it, words the
# leading cause's summary fills in from the log
TRAIN_LOGS = [
    # pickle's data files cut short by a failed download: the data
    ("pytest_python/atis_keras_empty_pickle_after_failed_download", "data.pickle_truncated", "runtime_error", None, ()),
    (
        "pytest_python/lighttrack_posetrack_negative_pickle_corrupted_eoferror",
        "data.pickle_truncated",
        "runtime_error",
        None,
        (),
    ),
    (
        "environment/peft_all_linear_target_modules_not_found_old_peft",
        "peft.all_linear_before_0_8",
        "runtime_error",
        "peft.no_matching_target_modules",
        (),
    ),
    (
        "pytorch/torch_directml_multinomial_not_supported_cpu_fallback",
        "torch.backend_op_cpu_fallback",
        "unsupported_op",
        None,
        ("aten::multinomial", "DML"),
    ),
    (
        "pytorch/torch_directml_native_dropout_not_supported_cpu_fallback",
        "torch.backend_op_cpu_fallback",
        "unsupported_op",
        None,
        ("aten::native_dropout", "DML"),
    ),
    # only the exception line was pasted: the qualified name (TestCommon.test_data_loader.<locals>) shows a test
    (
        "pytest_python/torchvision_prototype_test_data_loader_lambda_unpicklable_under_spawn",
        "pytest.unpicklable_test_local_object",
        "runtime_error",
        "torch.msg.unpicklable_worker_state",
        (),
    ),
]


@pytest.mark.parametrize(("name", "rule", "typ", "aside", "words"), TRAIN_LOGS, ids=[t[0] for t in TRAIN_LOGS])
def test_a_train_log_reads_as_the_fact_says(name: str, rule: str, typ: str, aside: str | None, words) -> None:
    diag, _ = train_log_led_by(name, rule)
    assert diag.profile.type == typ
    assert aside is None or not fired(diag, aside)
    assert all(w in diag.root_causes[0].summary for w in words), diag.root_causes[0].summary


def test_a_programs_own_empty_pickle_is_its_data(tmp_path: Path) -> None:
    diag, stderr = run_failing(tmp_path, "import pickle; open('d.pkl', 'wb').close(); pickle.load(open('d.pkl', 'rb'))")
    assert "EOFError: Ran out of input" in stderr
    top = diag.root_causes[0]
    assert (top.rule, top.category) == ("data.pickle_truncated", "dataset"), [
        (c.rule, c.category) for c in diag.root_causes
    ]
    assert not fired(diag, "torch.checkpoint.corrupt")


def test_torch_load_of_an_empty_legacy_file_is_the_checkpoint(tmp_path: Path) -> None:
    """torch.load reads the legacy format's magic number with pickle: the same words, and its frames
    (torch/serialization.py) put the checkpoint first."""
    diag, stderr = run_failing(
        tmp_path, "import torch; open('e.pt', 'wb').close(); torch.load('e.pt', weights_only=False)"
    )
    assert "EOFError: Ran out of input" in stderr and "serialization.py" in stderr
    top = diag.root_causes[0]
    assert (top.rule, top.category) == ("data.pickle_truncated", "checkpoint"), [
        (c.rule, c.category) for c in diag.root_causes
    ]
    assert diag.profile.stage == "checkpoint"


def test_a_real_peft_log_naming_other_modules_stays_the_adapter_configuration() -> None:
    """The real peft output kept with pack 47 (Llama-style names on a BERT model) is not the release fact."""
    diag = diagnose([str(KB_DATA / "hf_dynamo_catalogue" / "peft_target_modules_not_in_model.log")], exit_code=1)
    assert not fired(diag, "peft.all_linear_before_0_8")
    assert (diag.root_causes[0].rule, diag.root_causes[0].category) == ("peft.no_matching_target_modules", "config")


def test_a_lambda_a_test_hands_a_spawned_process_is_the_tests_code(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_spawned="""
        import multiprocessing as mp


        def test_workers_start():
            p = mp.get_context("spawn").Process(target=lambda: None)
            p.start()
            p.join()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    out = "\n".join(result.outlines + result.errlines)
    assert result.ret == 1 and "Can't pickle local object 'test_workers_start.<locals>.<lambda>'" in out
    diag = diagnose(texts={"pytest": out}, exit_code=result.ret)
    top = diag.root_causes[0]
    assert (top.rule, top.category) == ("pytest.unpicklable_test_local_object", "test_code")


def test_a_local_object_of_the_programs_own_function_stays_the_programs_code(tmp_path: Path) -> None:
    """The same refusal for a function of a script (not a test's): the program's code, as before."""
    diag, stderr = run_failing(
        tmp_path,
        """
        import multiprocessing as mp


        def main():
            p = mp.get_context("spawn").Process(target=lambda: None)
            p.start()


        if __name__ == "__main__":
            main()
        """,
        as_file=True,
    )
    assert "Can't pickle local object 'main.<locals>.<lambda>'" in stderr
    assert not fired(diag, "pytest.unpicklable_test_local_object")
    assert diag.root_causes[0].category == "model"
