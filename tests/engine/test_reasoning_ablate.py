"""Reasoning that holds where no rule knows the message (issue 13), decided on train logs with their rules left out.

Each test shows one general mechanism of ``engine/reason.py`` / ``rules/05-reasoning.toml`` on real evidence:
output of real processes run here, or real logs of the thread corpus's train split (never dev), diagnosed
with the pack that knows their message left out, so the reasoning alone has to reach the cause.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import train_log as _train_log
from tests.engine.corpus_logs import without as _without


def _checks(diag, category: str, name: str) -> list[str]:
    cause = next(c for c in diag.root_causes if c.category == category)
    return [v.status for v in cause.validation_checks if v.name == name]


def test_pip_finding_no_distribution_reads_as_the_installation_without_its_rule(tmp_path):
    """Real pip output made here: an install of a requirement no index holds ("Could not find a version
    that satisfies the requirement …", "No matching distribution found"). With the pack that knows pip's
    messages left out, nothing names the cause; the message says something the program needs is not
    there, so the installation leads, and the check says so on both the lifted and the lowered cause."""
    env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--isolated",
            "--no-index",
            "--find-links",
            str(tmp_path),
            "faildiag-no-such-dist==99",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert p.returncode != 0 and "No matching distribution" in p.stderr, p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode, ruleset=_without("35-system-catalogue.toml"))
    assert not any(c.rule.startswith("pip.") for c in diag.root_causes)
    assert diag.root_causes[0].category == "environment"
    assert _checks(diag, "environment", "context:cue:absent") == ["passed"]
    assert _checks(diag, "model", "context:cue:absent") == ["failed"]


def test_a_runtime_library_that_cannot_be_loaded_reads_as_the_installation_without_its_rule():
    """A real train log: Intel MKL cannot load its CPU-specific library. Without the system catalogue's
    MKL rule the generic runtime family ties the program, the installation and a library; the absence
    ("Cannot load libmkl_…") puts the installation first."""
    diag, label = _train_log("environment/mkl_fatal_cannot_load_avx2_env", "35-system-catalogue.toml")
    assert label["category"] == "environment"
    assert not any(c.rule == "mkl.runtime_load" for c in diag.root_causes)
    assert diag.root_causes[0].category == "environment"
    assert _checks(diag, "environment", "context:cue:absent") == ["passed"]


def test_a_missing_pytest_fixture_from_a_plugin_reads_as_the_installation_without_its_rule():
    """A real train log: a fixture a pytest plugin provides is 'not found' (the plugin's release lacks
    it). Without the pytest pack, the absence lifts the installation over the program's code."""
    diag, label = _train_log("pytest_python/pt_requests_mock_fixture_unreleased_version", "40-pytest.toml")
    assert label["category"] == "environment"
    assert diag.root_causes[0].category == "environment"
    assert _checks(diag, "environment", "context:cue:absent") == ["passed"]


def test_a_value_the_code_computes_wrongly_is_not_read_as_absent(tmp_path):
    """Real Python output: a shape error of the program's own arithmetic says nothing is missing, so the
    absence fact does not hold and the installation is not lifted."""
    script = tmp_path / "job.py"
    script.write_text("def step(xs):\n    return xs[0] / (len(xs) - 3)\n\nstep([1, 2, 3])\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert all(v.name != "context:cue:absent" for c in diag.root_causes for v in c.validation_checks)
    assert diag.root_causes[0].category != "environment"


def test_pytests_own_words_for_the_test_suites_layout_put_the_tests_code_first():
    """A real train log: pytest's "import file mismatch" (two test modules share a basename). Without the
    pytest packs (40 and 41, which also reads the mismatch report) the generic family does not list the tests;
    pytest's report words lift them first."""
    diag, label = _train_log(
        "pytest_python/pt_import_mismatch_dup_basename_ttnn", "40-pytest.toml", "41-pytest-ownership.toml"
    )
    assert label["category"] == "test_code"
    assert not any(c.rule.startswith("pytest.") for c in diag.root_causes)
    assert diag.root_causes[0].category == "test_code"
    assert _checks(diag, "test_code", "context:cue:test_setup") == ["passed"]


def test_an_error_at_a_tests_setup_offers_the_tests_code_without_its_rule():
    """A real train log: "ERROR at setup of …" for a fixture that a plugin's new release removed (the
    tests still ask for it). Without the pytest pack the tests' code is among the three hypotheses."""
    diag, label = _train_log("pytest_python/pt_event_loop_fixture_removed_asyncio10", "40-pytest.toml")
    assert label["category"] == "test_code"
    assert "test_code" in [c.category for c in diag.root_causes[:3]]
    assert _checks(diag, "test_code", "context:cue:test_setup") == ["passed"]


def test_a_check_of_the_values_a_call_received_reads_as_the_programs_code_without_its_rule():
    """Real train logs: PyTorch's "Expected all tensors to be on the same device, but found …" and flax's
    "Initializer expected to generate shape … but got …". Without the packs that know them, the generic
    runtime family ties the program, the installation and a library; an input check says the caller's
    values did not fit, so the installation and the library are lowered and the program's code leads."""
    for name, pack in (
        ("pytorch/pt_batchnorm_created_in_forward_device_mismatch", "10-pytorch.toml"),
        ("jax/daxbench_scopeparamshape_obs_size_bug", "70-jax.toml"),
    ):
        diag, label = _train_log(name, pack)
        assert label["category"] == "model", name
        assert diag.root_causes[0].category == "model", name
        assert _checks(diag, "environment", "context:cue:input_check") == ["failed"], name
        assert _checks(diag, "library", "context:cue:input_check") == ["failed"], name


def test_version_words_of_a_driver_or_a_package_read_as_the_installation_without_their_rules():
    """Real train logs: CUDA's "driver version is insufficient for CUDA runtime version" (its
    cudaErrorInsufficientDriver) and packaging's "Invalid version: '…'" (an installed package's version
    string). Without the packs that know them, their version words lift the installation first."""
    for name, pack in (
        ("environment/cuda_driver_insufficient_old_driver_340", "10-pytorch.toml"),
        ("mindspore/ms_mindnlp_install_invalid_version_moxing", "35-system-catalogue.toml"),
    ):
        diag, label = _train_log(name, pack)
        assert label["category"] == "environment", name
        assert diag.root_causes[0].category == "environment", name
        assert _checks(diag, "environment", "context:cue:version") == ["passed"], name


def test_autograds_own_errors_read_as_the_programs_code_without_their_rule():
    """Real train logs: "modified by an inplace operation" and "backward through the graph a second time"
    without the ecosystem pack's autograd rule: autograd's words put the program's code first."""
    for name in ("pytorch/pt_nwpumoc_inplace_add_fpn", "pytorch/pt_sophia_backward_second_time_hessian"):
        diag, label = _train_log(name, "45-ecosystem.toml")
        assert label["category"] == "model", name
        assert not any(c.rule == "torch.autograd_usage" for c in diag.root_causes)
        assert diag.root_causes[0].category == "model", name
        assert _checks(diag, "model", "context:cue:autograd") == ["passed"], name


def test_a_second_backward_in_real_pytorch_output_reads_as_the_programs_code(tmp_path):
    """Real PyTorch output made here (CPU): a second backward through a freed graph, diagnosed without the
    pack that knows the message: the program's code leads, by autograd's words."""
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n\nw = torch.ones(3, requires_grad=True)\nloss = (w * w).sum()\n"
        "loss.backward()\nloss.backward()\n"
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode != 0 and "a second time" in p.stderr, p.stderr[-2000:]
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode, ruleset=_without("45-ecosystem.toml"))
    assert diag.root_causes[0].category == "model"
    assert _checks(diag, "model", "context:cue:autograd") == ["passed"]


def test_a_port_that_is_taken_reads_as_the_configured_port_without_its_rule(tmp_path):
    """Real Python output made here: a second bind to a port a first socket holds ("[Errno 98] Address
    already in use"). Without the distributed pack that knows it, the os_error family ranks the machine's
    set-up first; the port being taken puts the configured port (or the process that holds it) first."""
    script = tmp_path / "serve.py"
    script.write_text(
        "import socket\n\nfirst = socket.socket()\nfirst.bind(('127.0.0.1', 0))\nfirst.listen()\n"
        "port = first.getsockname()[1]\nsecond = socket.socket()\nsecond.bind(('127.0.0.1', port))\n"
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0 and "Address already in use" in p.stderr, p.stderr
    # 35-system-catalogue.toml's errno.address_in_use knows Python's EADDRINUSE too: both packs are left out
    rs = _without("20-distributed.toml", "35-system-catalogue.toml")
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode, ruleset=rs)
    assert diag.root_causes[0].category == "config"
    assert _checks(diag, "config", "context:cue:port_taken") == ["passed"]
    assert _checks(diag, "environment", "context:cue:port_taken") == ["failed"]


def test_a_taken_master_port_in_a_train_log_reads_as_the_configuration_without_its_rule():
    """A real train log: torch.distributed's store cannot bind its MASTER_PORT (another job holds it)."""
    diag, label = _train_log("distributed/cdialgpt_master_port_in_use", "20-distributed.toml")
    assert label["category"] == "config"
    assert diag.root_causes[0].category == "config"


def test_a_kernel_over_the_devices_block_limits_reads_as_the_operator_without_its_rule():
    """A real train log: Triton's "out of resource: shared memory, Required: …, Hardware limit: …". Without
    the ecosystem pack's rule the generic runtime family does not list the operator; the kernel's launch
    limits lift it first (not memory the program ran out of)."""
    diag, label = _train_log("pytorch/pt_dest3d_triton_shared_memory_num_stages", "45-ecosystem.toml")
    assert label["category"] == "operator"
    assert not any(c.rule == "torch.triton_resources" for c in diag.root_causes)
    assert diag.root_causes[0].category == "operator"
    assert _checks(diag, "operator", "context:cue:kernel_limits") == ["passed"]


def test_mlirs_failed_legalization_reads_as_an_unsupported_operator_without_its_rule():
    """A real train log: "failed to legalize operation 'mhlo.erf'" (a JAX device plugin's lowering has no
    pattern for the op). Without the XLA catalogue pack, MLIR's words name the type (unsupported_op) and
    the stage (compile), and the operator leads."""
    diag, label = _train_log("jax/jax_metal_erf_failed_to_legalize", "72-xla-mindspore-catalogue.toml")
    assert (label["type"], label["category"]) == ("unsupported_op", "operator")
    assert not any(c.rule == "xla.legalize_failed" for c in diag.root_causes)
    assert diag.profile.type == "unsupported_op"
    assert diag.profile.stage == "compile"
    assert diag.root_causes[0].category == "operator"


def test_running_out_of_file_descriptors_offers_the_programs_leak_without_its_rule(tmp_path):
    """Real Python output made here: a loop that opens files and never closes them under a low descriptor
    limit ("[Errno 24] Too many open files"). Without the ecosystem pack that knows it, the os_error
    family lists no cause in the program's code; EMFILE's usual cause (descriptors the code leaks) joins
    the three hypotheses, and the machine's set-up is lowered."""
    script = tmp_path / "leak.py"
    script.write_text(
        "import resource\n\nresource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\nkept = []\n"
        "for i in range(1000):\n    kept.append(open(__file__))\n"
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0 and "Too many open files" in p.stderr, p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode, ruleset=_without("45-ecosystem.toml"))
    assert "model" in [c.category for c in diag.root_causes[:3]]
    assert _checks(diag, "model", "context:cue:descriptors") == ["passed"]
    assert _checks(diag, "environment", "context:cue:descriptors") == ["failed"]
