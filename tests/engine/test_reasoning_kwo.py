"""Reasoning for the failures no rule knows (issue 13, kwo): five general facts, each shown on train logs
diagnosed with the rules that explained them left out, and on output of real runs here.

- ``cue:unknown_keyword``: Python's "got an unexpected keyword argument" (and a framework's "keyword argument x is
  not recognized") — the caller names a parameter the installed signature lacks: written against another release.
- ``raiser:untested_assert``: an AssertionError where no test ran and no frame of the program raised it — an
  ``assert`` is an invariant of the code that states it, here a library's.
- ``cue:unsupported_version``: what is "not supported" is a release of Python, a compiler or a framework, not an
  operation: the installed versions, not a kernel.
- ``type:backend`` (NCCL's and nccl-tests' CUDACHECK: "Cuda failure '<CUDA error string>'"): the CUDA runtime
  refused a call below the collective library, not the connection between the ranks.
- ``lookup:checkpoint``: a KeyError while a checkpoint is loaded — the file's content lacks the key.

Each train log is diagnosed twice, as ``bench/ablate_rules.py`` and ``bench/confusion.py --without-rules`` do:
once with every rule, then with the findings of the rules whose causes that diagnosis listed dropped between the
scan and the analysis. The reasoning alone must then name the home, said on the cause as a ``context:`` check.
"""

from __future__ import annotations

import sys

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    context_checks,
    context_facts,
    fake_site_library,
    run_failing,
    run_fake_library_call,
    top3,
    train_log_without_rules,
)


@pytest.mark.parametrize(
    ("name", "fact", "home", "moved_down"),
    [
        # TrainingArguments(eval_strategy=...) under a transformers older than the keyword (raised in the script)
        ("pytorch/hf_trainingargs_eval_strategy_old_transformers_pin", "cue:unknown_keyword", "environment", "model"),
        # Megatron-DeepSpeed passes a keyword the installed deepspeed's zero.Init lacks (raised in the program's frame)
        (
            "distributed/dist_megatron_deepspeed_zero_init_unexpected_kwarg_stale_deepspeed",
            "cue:unknown_keyword",
            "environment",
            "model",
        ),
        # marshmallow 4 removed Field(default=...): only the exception line of pytest's collection error
        (
            "pytest_python/py_marshmallow4_removed_field_kwargs_collection_errors",
            "cue:unknown_keyword",
            "environment",
            "model",
        ),
        # werkzeug 2.1 removed the test client's as_tuple keyword
        (
            "pytest_python/py_flask_test_client_as_tuple_removed_werkzeug21_unpinned",
            "cue:unknown_keyword",
            "environment",
            "test_code",
        ),
        # hf_hub_download(local_dir=...) under a huggingface_hub that predates the keyword
        ("pytorch/hf_hub_download_local_dir_old_huggingface_hub", "cue:unknown_keyword", "environment", "model"),
        # inductor's codegen asserts (a bare AssertionError, no test, no program frame): torch's invariant
        ("pytorch/pt_unsloth_inductor_codegen_invalid_match", "raiser:untested_assert", "library", "model"),
        # nvcc's host_config.h: "unsupported GNU version! gcc versions later than 11 are not supported!"
        ("environment/pt_jit_ext_gcc12_unsupported_by_nvcc", "cue:unsupported_version", "environment", "operator"),
        # torch 2.3: "Dynamo is not supported on Python 3.12+"
        (
            "pytorch/gc2_chattts_compile_dynamo_unsupported_python312_torch23",
            "cue:unsupported_version",
            "environment",
            "operator",
        ),
        # nccl-tests: "Test CUDA failure common.cu:941 'system not yet initialized'" (no fabric manager running)
        ("distributed/nccl_tests_system_not_yet_initialized_fabricmanager", "type:backend", "backend", None),
        # optimizer.load_state_dict of the scheduler's state dict: KeyError 'param_groups' in torch's loader
        (
            "pytorch/pt_resume_optimizer_keyerror_param_groups_save_checkpoint_swapped_optimizer_scheduler",
            "lookup:checkpoint",
            "checkpoint",
            "model",
        ),
    ],
)
def test_train_log_fact_puts_the_home_first_without_the_rules(
    name: str, fact: str, home: str, moved_down: str | None
) -> None:
    """Before these facts each log's home was second, third or not among the three (bench/confusion.py
    --without-rules); now it leads, the fact a passed check on it and a failed one on the home it moved down."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == home
    assert top3(diag)[0] == home, (name, top3(diag))
    assert context_checks(diag, home)[f"context:{fact}"] == "passed", name
    if moved_down is not None:
        assert context_checks(diag, moved_down)[f"context:{fact}"] == "failed", name


@pytest.mark.parametrize(
    "name",
    [
        "distributed/nccl_nvls_invalid_argument_fabricmanager",
        "distributed/nccl_nvls_invalid_argument_fabricmanager_restart",
    ],
)
def test_train_log_nccl_cuda_failure_offers_the_device_runtime(name: str) -> None:
    """NCCL's own "Cuda failure 'invalid argument'" under a communicator's set-up: the device runtime joins the
    three hypotheses (before: not among them), beside the collective layer the NCCL error lines put first."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == "backend"
    assert "backend" in top3(diag), top3(diag)
    assert context_checks(diag, "backend")["context:type:backend"] == "passed"


def test_train_log_unknown_keyword_not_read_for_positional_count_errors() -> None:
    """ "missing 1 required positional argument" is as often a call written wrongly as a changed signature: the
    keyword fact does not hold there (equinox's filter_grad called with its argument as a keyword: the program's)."""
    diag, _label = train_log_without_rules("jax/jax_equinox_filter_grad_first_arg_passed_as_keyword_typeerror")
    assert "cue:unknown_keyword" not in context_facts(diag)


# ---------------------------------------------------------------------------------------------------------------
# real runs
# ---------------------------------------------------------------------------------------------------------------


def test_real_unexpected_keyword_lifts_the_installed_versions(tmp_path) -> None:
    diag, err = run_failing(tmp_path, "import json\njson.dumps({}, indnt=2)\n")
    assert "got an unexpected keyword argument 'indnt'" in err
    assert context_checks(diag, "environment")["context:cue:unknown_keyword"] == "passed"
    assert context_checks(diag, "model")["context:cue:unknown_keyword"] == "failed"


def test_real_positional_count_error_is_not_an_unknown_keyword(tmp_path) -> None:
    diag, err = run_failing(tmp_path, "def f(a):\n    return a\nf(1, 2)\n")
    assert "takes 1 positional argument but 2 were given" in err
    assert "cue:unknown_keyword" not in context_facts(diag)


_LIBRARY = "def check(x):\n    assert x > 0\n    return x\n"


def test_real_library_assert_without_a_test_is_the_library(tmp_path) -> None:
    diag, err = run_fake_library_call(tmp_path, _LIBRARY, "fakelib.check(-1)")
    assert "AssertionError" in err
    # pytest.assertion (any AssertionError) still names the code under test first, softened by the fact; the
    # library comes right after it
    assert top3(diag)[:2] == ["model", "library"], top3(diag)
    assert context_checks(diag, "library")["context:raiser:untested_assert"] == "passed"
    assert context_checks(diag, "model")["context:raiser:untested_assert"] == "failed"


def test_real_program_assert_is_not_an_untested_library_assert(tmp_path) -> None:
    diag, _err = run_failing(tmp_path, "x = -1\nassert x > 0\n")
    assert "raiser:untested_assert" not in context_facts(diag)


def test_real_library_assert_under_a_test_is_not_untested(tmp_path) -> None:
    site = fake_site_library(tmp_path, _LIBRARY)
    (tmp_path / "test_it.py").write_text(
        f"import sys\nsys.path.insert(0, {site!r})\nimport fakelib\n\ndef test_it():\n    fakelib.check(-1)\n"
    )
    import subprocess

    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=240,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    diag = diagnose(texts={"stdout": p.stdout}, exit_code=p.returncode)
    assert "raiser:untested_assert" not in context_facts(diag)


def test_real_optimizer_state_without_param_groups_is_the_checkpoint(tmp_path) -> None:
    pytest.importorskip("torch")
    diag, err = run_failing(
        tmp_path,
        "import torch\n"
        "opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)\n"
        "opt.load_state_dict({'state': {}})\n",
    )
    assert "KeyError: 'param_groups'" in err
    assert top3(diag)[0] == "checkpoint", top3(diag)
    assert context_checks(diag, "checkpoint")["context:lookup:checkpoint"] == "passed"


def test_real_plain_key_error_is_not_a_checkpoint(tmp_path) -> None:
    diag, _err = run_failing(tmp_path, "settings = {'lr': 0.1}\nprint(settings['batch_size'])\n")
    assert "lookup:checkpoint" not in context_facts(diag)
