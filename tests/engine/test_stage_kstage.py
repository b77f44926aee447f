"""The stage read from the structure of a traceback, without any rule's signature (kstage): a module's top
level that runs because it is imported is start-up (pytest's report of it: collection); the program's own
constructors outside any step of the run, before any progress, are start-up; the functions that set a run
up (Megatron's, transformers' DeepSpeed set-up, Flax's train state) are start-up; a rule's default
``runtime`` yields to frames that show the run setting itself up. Train logs of the thread corpus (with and
without the rules that explained them) and real runs (Python, torch on the CPU, pytest via pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import run_failing, train_log_with_rules, train_log_without_rules


@pytest.mark.parametrize(
    ("name", "stage"),
    [
        # a library's module imported: its top level raised
        ("environment/pyopenssl_old_with_new_cryptography_symbol_removed", "startup"),  # OpenSSL/crypto.py imported
        ("jax/mjx_import_py38_collections_abc_callable_not_subscriptable", "startup"),  # mujoco.mjx from <stdin>
        ("jax/jax_chacha_import_register_cpu_custom_call_target_removed_jax_0_4_24", "startup"),
        # pytest's report of an import from a module's top level: collection
        ("jax/jax_pr6_ott_import_prngkeyarray_removed_jax0424_fixed_ott045", "collection"),
        # the program's own constructors before any step
        ("distributed/dist_colossalai_geminiplugin_unexpected_kwarg_device_stale_chat_strategy", "startup"),
        ("mindspore/mindrlhf_gpt2_model_list_gpt_no_lm_head", "startup"),  # the trainer's and the model's __init__
        # set-up functions
        ("distributed/belle_deepspeed_fp16_config_mismatch_training_args", "startup"),  # transformers' deepspeed_init
        ("distributed/dist_megatron_deepspeed_zero_init_unexpected_kwarg_stale_deepspeed", "startup"),
        ("jax/jax_flax071_init_returns_dict_no_unfreeze", "startup"),  # create_train_state
        # torch.autograd_usage says "runtime"; the frames show reset_parameters under the model's __init__
        ("pytorch/pyg_dimenet_bessel_leaf_inplace_reset", "startup"),
        # pandas builds a merge operation (_MergeOperation.__init__) inside a call at any point: not start-up
        ("pytest_python/rfplasmid_merge_object_int64_contig_filename_dots", "runtime"),
    ],
)
def test_train_log_stage_from_its_frames(name: str, stage: str):
    diag, label = train_log_with_rules(name)
    assert label["stage"] == stage
    assert diag.profile.stage == stage


def test_an_import_is_startup_without_the_rules_that_explained_it():
    diag, label = train_log_without_rules("jax/blackjax_import_jax06_core_shape_removed")
    assert label["stage"] == "startup"
    assert diag.profile.stage == "startup"


# --- real runs ---


def test_a_module_whose_top_level_raises_on_import_is_startup(tmp_path: Path):
    (tmp_path / "helpers.py").write_text("SETTINGS = {}\nLIMIT = SETTINGS['limit']\n")
    diag, err = run_failing(tmp_path, "import helpers\nprint(helpers.LIMIT)\n", as_file=True)
    assert "in <module>" in err and "KeyError" in err
    assert diag.profile.stage == "startup"


def test_the_same_error_in_a_function_the_program_calls_is_not_startup(tmp_path: Path):
    diag, err = run_failing(tmp_path, "def main():\n    return {}['limit']\n\nmain()\n", as_file=True)
    assert "KeyError" in err
    assert diag.profile.stage == "runtime"


TORCH_MODEL = """
import torch

class Layer(torch.nn.Module):
    def __init__(self, init_now):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(3))
        if init_now:
            self.reset()

    def reset(self):
        self.w.add_(1.0)  # in place on a leaf that requires grad, outside torch.no_grad()

    def forward(self, x):
        self.reset()
        return x * self.w
"""


def test_torch_error_in_a_models_constructor_is_startup(tmp_path: Path):
    pytest.importorskip("torch")
    diag, err = run_failing(tmp_path, TORCH_MODEL + "\nLayer(True)\n", as_file=True)
    assert "leaf Variable that requires grad" in err
    assert diag.profile.stage == "startup"


def test_the_same_torch_error_in_the_forward_of_a_step_is_runtime(tmp_path: Path):
    pytest.importorskip("torch")
    body = TORCH_MODEL + "\nlayer = Layer(False)\nfor _ in range(2):\n    layer(torch.ones(3)).sum().backward()\n"
    diag, err = run_failing(tmp_path, body, as_file=True)
    assert "leaf Variable that requires grad" in err
    assert diag.profile.stage == "runtime"


def test_pytest_collecting_a_test_module_whose_import_fails_is_collection(pytester):
    pytester.makepyfile(
        broken_helpers="CONFIG = {}\nTIMEOUT = CONFIG['timeout']\n",
        test_uses_helpers="import broken_helpers\n\ndef test_ok():\n    assert broken_helpers.TIMEOUT\n",
    )
    result = pytester.runpytest("-p", "no:faildiag", "-p", "no:cacheprovider")
    report = "\n".join(result.outlines)
    assert "ERROR collecting" in report and "KeyError" in report
    diag = diagnose(texts={"pytest.log": report}, exit_code=int(result.ret), command="pytest")
    assert diag.profile.stage == "collection"


def test_a_pack_adds_its_own_step_functions(tmp_path: Path):
    """The step names are data (``[frames] step_functions``): a team's pack naming its own loop makes a
    constructor called inside that loop mid-run, while the built-in names stay (a later pack extends them)."""
    from pytest_faildiag.engine.reason import stage_from_frames
    from pytest_faildiag.parse.scan import ScanResult, scan_text
    from pytest_faildiag.rules import load_ruleset

    body = (
        "class Buffer:\n    def __init__(self, size):\n        self.items = [0] * size\n        self.items[size]\n\n"
        "def run_rollout(n):\n    return Buffer(n)\n\nrun_rollout(4)\n"
    )
    _, err = run_failing(tmp_path, body, as_file=True)
    result = ScanResult()
    scan_text(err, "stderr", load_ruleset(), result)
    frames = result.tracebacks[-1].frames
    assert stage_from_frames(frames, load_ruleset().reasoning)[0] == "startup"
    team = load_ruleset([("team.toml", '[frames]\nstep_functions = ["run_rollout"]\n')]).reasoning
    assert stage_from_frames(frames, team)[0] is None
    assert team.step_functions is not None and team.step_functions.match("training_step")
