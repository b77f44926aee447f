"""kpt6: torch ownership facts (rules/23-torch-ownership.toml), each read from torch's own source.

* torch.load onto a device this process lacks (torch/serialization.py, _validate_device): the file is sound and
  torch names the fix, the load's map_location: the setting's home leads, the checkpoint's is refuted.
* binary_cross_entropy's CUDA assert (aten/src/ATen/native/cuda/Loss.cu, THCUNN's BCECriterion.cu) checks its
  input, the model's prediction: not a bad label or index of the data.
* torch.hub's hash check (torch/hub.py, download_url_to_file) hashes the bytes just served: the publisher of the
  URL's hash is a home beside the download's.
* load_state_dict's missing/unexpected keys starting with "module." (torch/nn/parallel: the wrapper keeps the network
  as ``module``): the program's save or load code wraps one side, the file is complete.
* the sampling kernels' asserts (MultinomialKernel.cu, Distributions.cu' Bernoulli) check probabilities, the model's
  output: NaN/Inf logits or filters that removed every candidate, not the data.
* torch 2.0's LRScheduler base (torch/optim/lr_scheduler.py): Lightning refusing one of torch's own schedulers is a
  Lightning release older than the torch; refusing the program's own class is the program's scheduler.
* torch.hub.load's own checks (torch/hub.py): hubconf's declared dependencies (environment), an entry point the
  hubconf lacks (the call's name), the trust question (the call's trust_repo), a ref GitHub does not list.

Real outputs under tests/data/kb/kpt6/ (README there says how they were made) and train logs of the corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, pack_rules, top3, train_diagnosis

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kpt6"


def _real(name: str):
    return diagnose([str(DATA / name)], exit_code=1)


def test_the_pack_loads_with_its_rules():
    assert {r.id for r in pack_rules("23-torch-ownership.toml")} == {
        "torch.load.map_location_setting",
        "torch.cuda.bce_prediction_assert",
        "torch.hub.published_hash_mismatch",
        "torch.state_dict.wrapper_prefix",
        "torch.cuda.sampling_probability_assert",
        "torch.optim.builtin_scheduler_refused",
        "torch.optim.custom_scheduler_refused",
        "torch.hub.missing_dependencies",
        "torch.hub.no_callable_in_hubconf",
        "torch.hub.untrusted_repository",
        "torch.hub.ref_not_found",
    }


# --- torch.load onto a missing device: the load's map_location --------------------------------------------------


@pytest.mark.parametrize("name", ["load_cuda.log", "load_hpu.log"])
def test_real_load_onto_a_missing_device_puts_the_load_setting_first(name):
    d = _real(name)
    assert d.profile.type == "runtime_error"
    assert d.profile.stage == "checkpoint"
    top = d.root_causes[0]
    assert (top.category, top.id, top.rule) == ("config", "config.load_map_location", "torch.load.map_location_setting")
    # the file itself is refuted: its home is no longer first and says why
    ckpt = next(c for c in d.root_causes if c.category == "checkpoint")
    assert any(v.name == "context:cfg:load_map_location" and v.status == "failed" for v in ckpt.validation_checks)
    assert "environment" in top3(d)


def test_train_cpu_only_machine_loading_a_gpu_checkpoint():
    d = train_diagnosis("pytorch/cdecnet_cpu_only_deserialize_cuda_checkpoint")
    assert d.root_causes[0].category == "config"
    assert fired(d, "torch.load.map_location_setting")


# --- binary_cross_entropy's device assert: the prediction left [0, 1] -------------------------------------------


def test_train_thcunn_bce_assert_is_the_prediction_not_the_data():
    d = train_diagnosis("pytorch/freeanchor_bce_assert_lr_too_high_single_gpu")
    assert d.profile.type == "crash"
    cats = top3(d)
    assert cats[0] == "config", cats
    assert "model" in cats[:2], cats
    assert "dataset" not in cats[:2], cats
    assert d.root_causes[0].id == "config.lr_diverged"


def test_aten_bce_assert_text_is_read_too(tmp_path):
    """The ATen kernel's own words (Loss.cu since torch 1.8), as a CUDA run prints them: no label or index cause leads."""
    log = tmp_path / "bce.log"
    log.write_text(
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [12,0,0], thread: [64,0,0] Assertion "
        "`input_val >= zero && input_val <= one` failed.\n"
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 40, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    d = diagnose([str(log)], exit_code=1)
    assert d.profile.type == "crash"
    assert fired(d, "torch.cuda.bce_prediction_assert")
    cats = top3(d)
    assert cats[0] in ("config", "model"), cats
    assert "dataset" not in cats[:2], cats


def test_a_class_index_assert_keeps_its_data_reading(tmp_path):
    """The fact is about BCE's input only: an NLL class-index assert still offers the labels first or second."""
    log = tmp_path / "nll.log"
    log.write_text(
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
        "thread: [3,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    d = diagnose([str(log)], exit_code=1)
    assert not fired(d, "torch.cuda.bce_prediction_assert")
    assert "dataset" in top3(d)[:2]


# --- torch.hub's hash check: the publisher's home --------------------------------------------------------------


def test_real_hub_hash_offers_the_publisher_beside_the_download():
    d = _real("hub_hash.log")
    assert d.profile.stage == "checkpoint"
    assert fired(d, "torch.hub.published_hash_mismatch")
    cats = top3(d)
    assert {"checkpoint", "library", "environment"} == set(cats), cats


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("pytorch/pt_videofeat_inceptionv4_invalid_hash_network", "checkpoint"),
        ("pytorch/torchvision_efficientnet_weights_wrong_hash_in_filename", "checkpoint"),
    ],
)
def test_train_hub_hash_logs_keep_the_download_first_and_the_publisher_in_the_first_three(name, first):
    """One message cannot tell a transfer gone wrong from a wrong published hash: the publisher joins the first
    three (torchvision's wrong hash was not among them before), the download's home stays first."""
    d = train_diagnosis(name)
    cats = top3(d)
    assert cats[0] == first, cats
    assert "library" in cats[:2], cats


# --- load_state_dict's "module." keys: the program's wrapper ---------------------------------------------------


@pytest.mark.parametrize("name", ["prefix_load.log", "prefix_load_rev.log"])
def test_real_wrapper_prefix_puts_the_program_first(name):
    """Saved from nn.DataParallel and loaded bare (Unexpected "module." keys), and the reverse (Missing ones)."""
    d = _real(name)
    assert d.profile.stage == "checkpoint"
    top = d.root_causes[0]
    assert (top.category, top.id) == ("model", "model.state_dict_wrapper_prefix")
    assert any(v.name == "state-dict-prefix" and v.status == "passed" for v in top.validation_checks)


def test_train_dataparallel_checkpoint_loaded_into_the_bare_network():
    d = train_diagnosis("pytorch/deepthinking_state_dict_dataparallel_module_prefix")
    assert d.root_causes[0].category == "model"
    assert fired(d, "torch.state_dict.wrapper_prefix")


def test_a_size_mismatch_without_the_prefix_is_not_read_as_the_wrapper(tmp_path):
    log = tmp_path / "size.log"
    log.write_text(
        "RuntimeError: Error(s) in loading state_dict for Net:\n"
        "\tsize mismatch for fc.weight: copying a param with shape torch.Size([10, 64]) from checkpoint, the shape in "
        "current model is torch.Size([12, 64]).\n"
    )
    d = diagnose([str(log)], exit_code=1)
    assert not fired(d, "torch.state_dict.wrapper_prefix")


# --- sampling kernels' asserts: the probabilities, not the data ------------------------------------------------


@pytest.mark.parametrize(
    "assertion",
    [
        "binarySearchForMultinomial: block: [0,31,0], thread: [0,0,0] Assertion `cumdist[size - 1] > "
        "static_cast<scalar_t>(0)` failed.",
        "sampleMultinomialOnce: block: [0,0,0], thread: [0,0,0] Assertion `!_isinf(val)` failed.",
        "sampleMultinomialOnce: block: [3,0,0], thread: [0,0,0] Assertion `val >= zero` failed.",
    ],
)
def test_multinomial_kernel_asserts_are_the_models_probabilities(tmp_path, assertion):
    """The kernel's own assert texts (aten/src/ATen/native/cuda/MultinomialKernel.cu) as a CUDA run prints them."""
    log = tmp_path / "sample.log"
    log.write_text(
        f"/pytorch/aten/src/ATen/native/cuda/MultinomialKernel.cu:112: {assertion}\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    d = diagnose([str(log)], exit_code=1)
    assert d.profile.type == "crash"
    assert fired(d, "torch.cuda.sampling_probability_assert")
    assert d.root_causes[0].category == "model"
    assert "dataset" not in top3(d)[:2]


def test_the_bce_assert_is_not_read_as_a_sampling_assert(tmp_path):
    """`val >= zero` is a substring of BCE's `input_val >= zero`: the backquoted keyword keeps them apart."""
    log = tmp_path / "bce.log"
    log.write_text(
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [1,0,0], thread: [6,0,0] Assertion "
        "`input_val >= zero && input_val <= one` failed.\n"
    )
    d = diagnose([str(log)], exit_code=1)
    assert fired(d, "torch.cuda.bce_prediction_assert")
    assert not fired(d, "torch.cuda.sampling_probability_assert")


# --- Lightning's scheduler check and torch 2's LRScheduler base ------------------------------------------------


def test_train_builtin_scheduler_refused_is_lightning_older_than_torch():
    d = train_diagnosis("pytorch/lightning_lambdalr_scheduler_api_torch2_mismatch")
    top = d.root_causes[0]
    assert (top.category, top.rule) == ("environment", "torch.optim.builtin_scheduler_refused")
    assert not fired(d, "torch.optim.custom_scheduler_refused")


def test_real_custom_scheduler_refused_is_the_programs_scheduler():
    """pytorch_lightning 1.9.0 with torch 2.13 refusing the program's own schedule class (no torch base class)."""
    d = _real("pl_custom_sched.log")
    top = d.root_causes[0]
    assert (top.category, top.rule) == ("model", "torch.optim.custom_scheduler_refused")
    assert not fired(d, "torch.optim.builtin_scheduler_refused")
    assert "environment" in top3(d)


# --- torch.hub.load's own checks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "category", "rule"),
    [
        ("hub_missing_dep.log", "environment", "torch.hub.missing_dependencies"),
        ("hub_no_callable.log", "config", "torch.hub.no_callable_in_hubconf"),
        ("hub_offline.log", "environment", "py.offline_hub"),
    ],
)
def test_real_hub_load_failures(name, category, rule):
    d = _real(name)
    assert d.profile.stage == "startup"
    top = d.root_causes[0]
    assert (top.category, top.rule) == (category, rule)


def test_real_hub_trust_question_unanswered_is_the_calls_trust_repo():
    """trust_repo=False in a run whose stdin is closed: the question on stdout, EOFError on stderr."""
    d = diagnose([str(DATA / "hub_untrusted.stdout.log"), str(DATA / "hub_untrusted.stderr.log")], exit_code=1)
    top = d.root_causes[0]
    assert (top.category, top.id) == ("config", "config.hub_trust_repo")
    assert "harness" in [c.category for c in d.root_causes[:5]]


def test_hub_ref_not_in_the_repository(tmp_path):
    """torch/hub.py's own words (_validate_not_a_forked_repo); the API answer cannot be produced offline."""
    log = tmp_path / "ref.log"
    log.write_text(
        "ValueError: Cannot find v9.9 in https://github.com/someuser/somerepo. If it's a commit from a forked repo, "
        "please call hub.load() with forked repo directly.\n"
    )
    d = diagnose([str(log)], exit_code=1)
    top = d.root_causes[0]
    assert (top.category, top.rule) == ("config", "torch.hub.ref_not_found")
    assert "v9.9" in top.summary and "someuser/somerepo" in top.summary
