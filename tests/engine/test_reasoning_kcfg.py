"""The user's settings and the data as homes, read without a signature (issue 13, kcfg).

A launcher's variable that is missing (torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
for each process it starts), a device ordinal that names no visible device, a host Gloo cannot find an
address for: the launch settings. A convolution's input with another sample format's channel count, samples
a DataLoader cannot batch because their sizes differ, NaN in the input scikit-learn checks, a file that is
not in its reader's format: the data. ``engine/reason.py`` (``settings_and_data``) reads the structural facts,
``05-reasoning.toml`` (``# --- config and dataset homes (kcfg) ---``) says what each fact means.

The train logs are diagnosed with the rules that know their message left out (their findings dropped between
the scan and the analysis, as ``bench/ablate_rules.py`` does): the reasoning alone must find the home. The
other tests run real torch here and read what it printed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.ablate_rules import dropping
from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import THREADS, cats, context_checks, run_failing


def _without_rules(name: str, rule_ids: set[str]) -> tuple[Any, dict]:
    """A train log diagnosed with the findings of ``rule_ids`` dropped (the rules that know its message)."""
    split = json.loads((THREADS / "split.json").read_text())["split"]
    assert split[name] == "train", name
    log = THREADS / f"{name}.log"
    label = json.loads(log.with_suffix(".json").read_text())
    with dropping(rule_ids):
        diag = diagnose([str(log)], exit_code=label.get("exit_code"), command=label.get("command"))
    assert not any(c.rule in rule_ids for c in diag.root_causes), name
    return diag, label


@pytest.mark.parametrize(
    ("name", "dropped", "fact", "home", "refuted"),
    [
        # the env:// rendezvous run with python instead of torchrun: "environment variable RANK expected, but not set"
        (
            "distributed/hrnet_env_rank_not_set_no_launcher",
            {"dist.env_rendezvous_unlaunched", "env.missing_variable"},
            "cfg:launcher_env",
            "config",
            "environment",
        ),
        # a launcher helper's os.environ["RANK"] in a script run without the launcher: KeyError: 'RANK'
        (
            "distributed/dist_colossalai_launch_from_torch_rank_env_missing_run_with_python",
            {"launcher.env_var_missing"},
            "cfg:launcher_env",
            "config",
            "environment",
        ),
        # more processes per node than GPUs: cuda runtime error "invalid device ordinal"
        (
            "distributed/dist_gi4_launch_set_device_invalid_device_ordinal_nproc_per_node_gt_gpus",
            {"torch.invalid_device"},
            "cue:device_ordinal",
            "config",
            "library",
        ),
        # gloo: "Unable to find address for: <hostname>" (the container's network, GLOO_SOCKET_IFNAME)
        (
            "distributed/dist_gloo_unable_to_find_address_hostname_docker_net_host_socket_ifname",
            {"dist.socket_ifname"},
            "cue:host_address",
            "config",
            "environment",
        ),
        # an .h5ad input that is not HDF5: "Unable to synchronously open file (file signature not found)"
        (
            "pytest_python/py_h5py_file_signature_not_found_malformed_h5ad_input",
            {"hdf5.not_hdf5"},
            "cue:file_format",
            "dataset",
            "environment",
        ),
        # scikit-learn's check of its input: "Input contains NaN, infinity or a value too large for dtype('float64')"
        (
            "pytest_python/py_sklearn_input_contains_nan_excel_blank_spaces_in_dataset",
            {"sklearn.non_finite"},
            "cue:nonfinite_input",
            "dataset",
            "model",
        ),
        # an RGBA PNG into a model whose first conv takes RGB: "to have 3 channels, but got 4 channels instead"
        (
            "pytorch/pt_conv_expected_3_channels_got_4_rgba_png_input",
            {"torch.msg.image_channels"},
            "data:sample_channels",
            "dataset",
            "model",
        ),
        # non-square images batched by default_collate: "stack expects each tensor to be equal size"
        (
            "pytorch/pt_trmisr_collate_nonsquare_images",
            {"torch.collate_size", "torch.msg.dataloader_worker_exception"},
            "data:unequal_samples",
            "dataset",
            "model",
        ),
    ],
)
def test_train_logs_the_fact_puts_the_home_first_without_the_rules(
    name: str, dropped: set[str], fact: str, home: str, refuted: str
) -> None:
    """Before the facts, each of these put its true home second or outside the three hypotheses shown (the
    rules that know the message left out); with them the home leads, said on the cause as a passed check, and
    the home the message's usual reading named is moved down (a failed check)."""
    diag, label = _without_rules(name, dropped)
    assert label["category"] == home
    assert cats(diag, 1) == [home], (name, cats(diag))
    assert context_checks(diag, home)[f"context:{fact}"] == "passed", name
    assert context_checks(diag, refuted)[f"context:{fact}"] == "failed", name


def test_train_log_datasets_cast_error_is_a_decode_failure() -> None:
    """datasets' DatasetGenerationCastError (data files whose columns do not cast to the features) is read as
    its DatasetGenerationError family (the data's format), not as a bare runtime error whose priors name the
    installation first."""
    diag, label = _without_rules(
        "pytorch/py_datasets_cast_error_extra_columns_in_some_jsonl_files",
        {"datasets.cast_error", "datasets.generation_error"},
    )
    assert label["category"] == "dataset"
    assert cats(diag, 1) == ["dataset"]
    assert any(c.rule == "differential:decode" for c in diag.root_causes)


_TORCH = """
    import sys
    import torch
    from torch.utils.data import DataLoader

    case = sys.argv[1] if len(sys.argv) > 1 else "{case}"
    if case == "collate":
        # two images of another orientation, batched by the default collate
        list(DataLoader([torch.zeros(3, 4, 5), torch.zeros(3, 5, 4)], batch_size=2))
    elif case == "collate_lists":
        list(DataLoader([[1, 2], [1, 2, 3]], batch_size=2))
    elif case == "rgba":
        torch.nn.Conv2d(3, 8, 3)(torch.zeros(1, 4, 8, 8))
    elif case == "inner":
        torch.nn.Conv2d(64, 8, 3)(torch.zeros(1, 32, 8, 8))
    elif case == "stack_in_model":
        torch.stack([torch.zeros(2, 3), torch.zeros(3, 2)])
    elif case == "rendezvous":
        import os
        for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
            os.environ.pop(var, None)
        torch.distributed.init_process_group("gloo", init_method="env://")
    elif case == "launcher_key":
        import os
        os.environ.pop("LOCAL_RANK", None)
        local_rank = int(os.environ["LOCAL_RANK"])
    elif case == "other_key":
        import os
        os.environ.pop("MY_APP_TOKEN", None)
        token = os.environ["MY_APP_TOKEN"]
"""


def _facts(tmp_path, case: str) -> tuple[list[str], Any]:
    """Run torch here for ``case``; the facts of this section that the reasoning found, and the diagnosis."""
    err, rc = run_failing(tmp_path, _TORCH.replace("{case}", case))
    log = tmp_path / f"{case}.log"
    log.write_text(err)
    diag = diagnose([str(log)], exit_code=rc)
    names = {v.name for c in diag.root_causes for v in c.validation_checks}
    facts = [f for f in ("cfg:launcher_env", "data:sample_channels", "data:unequal_samples") if f"context:{f}" in names]
    return facts, diag


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("collate", ["data:unequal_samples"]),
        ("collate_lists", ["data:unequal_samples"]),
        ("rgba", ["data:sample_channels"]),
        ("inner", []),  # a layer's width inside the network (64 vs 32 channels) is not a sample's format
        ("stack_in_model", []),  # torch.stack in the program's own code, not a DataLoader's batch
        ("rendezvous", ["cfg:launcher_env"]),
        ("launcher_key", ["cfg:launcher_env"]),
        ("other_key", []),  # a variable no launcher sets
    ],
)
def test_real_torch_output_names_the_fact_only_where_it_holds(tmp_path, case: str, expected: list[str]) -> None:
    facts, _diag = _facts(tmp_path, case)
    assert facts == expected, case
