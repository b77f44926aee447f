"""A setting the run was given, refused (issue 13, kcfg2): read without a signature.

A runtime or library that reads a variable of the process's environment and says its value is wrong (CANN's
EE1001 for ASCEND_RT_VISIBLE_DEVICES, HCCL's "HCCL_BUFFSIZE is too SMALL", torch's "The value of
TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL") names the setting to change: ``cfg:setting_refused``
lifts the configuration and keeps it among the three. CUDA's invalid device ordinal for an index taken from the
launcher's local rank is more processes per node than visible devices: ``cfg:ranks_exceed_devices`` lowers the
device runtime and the device, which counted the devices and refused the index. ``engine/reason.py``
(``refused_settings``) reads the facts, ``05-reasoning.toml`` (``# --- kcfg2 ---``) says what they mean.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import context_checks, context_facts, top3, train_log_with_rules, train_log_without_rules

VISIBLE = "ascend/gpustack_vllm_ascend_visible_devices_not_ascending"
NPROC = "distributed/torchrun_nproc_per_node_exceeds_gpus_invalid_ordinal"
NPROC_LAUNCH = "distributed/dist_gi4_launch_set_device_invalid_device_ordinal_nproc_per_node_gt_gpus"
CUDNN_PATH = "environment/torch_cudnn_incompatible_via_ld_library_path"
CUDNN_OLDER = [
    "jax/jax_cudnn_805_older_than_810_dnn_not_found",
    "jax/jax_dnn_library_init_failed_cudnn_85_runtime_older_than_86_build",
]


def test_visible_devices_refused_is_the_setting_without_rules() -> None:
    # CANN's EE1001 after torch_npu's set_device: "set ASCEND_RT_VISIBLE_DEVICES:0,2,4,6,1,3,5,7 error, it must be
    # configured in ascending order"; before, only libraries' frames read as the installation (config out of three)
    diag, label = train_log_without_rules(VISIBLE)
    assert label["category"] == "config"
    assert diag.root_causes[0].category == "config", top3(diag)
    # CANN's own line states it, so kpta3's cue holds and the same verdict is not counted a second time
    config = context_checks(diag, "config")
    assert config.get("context:cue:npu_setting_refused") == "passed" and "context:cfg:setting_refused" not in config
    assert context_checks(diag, "environment").get("context:cue:npu_setting_refused") == "failed"


def test_invalid_ordinal_of_the_local_rank_is_the_launch() -> None:
    # torch.cuda.set_device(local_rank) refused with "invalid device ordinal": --nproc_per_node=8 on 4 GPUs; before,
    # the device runtime's error (type backend) led and the launch was second
    diag, label = train_log_without_rules(NPROC)
    assert label["category"] == "config"
    assert diag.root_causes[0].category == "config", top3(diag)
    assert context_checks(diag, "backend").get("context:cfg:ranks_exceed_devices") == "failed"


def test_invalid_ordinal_read_as_a_generic_runtime_error_keeps_the_launch_first() -> None:
    # the same launch (args.local_rank) where the exception reads as a plain RuntimeError: no backend to lower,
    # the configuration stays first
    diag, label = train_log_without_rules(NPROC_LAUNCH)
    assert label["category"] == "config"
    assert diag.root_causes[0].category == "config", top3(diag)


@pytest.mark.parametrize("name", [NPROC, NPROC_LAUNCH])
def test_with_every_rule_the_launch_stays_first(name: str) -> None:
    # the rule that knows the message keeps its reading: the configuration first, the runtime lowered
    diag, label = train_log_with_rules(name)
    assert label["category"] == "config"
    assert diag.root_causes[0].category == "config", top3(diag)
    assert "cfg:ranks_exceed_devices" in context_facts(diag)


def test_loaded_other_cudnn_keeps_the_search_path_among_the_three() -> None:
    # torch's cuDNN check "compiled against (8, 3, 2) but linked against (8, 0, 3)": LD_LIBRARY_PATH put a system
    # cuDNN before the wheel's own; before, the configuration was out of the three with and without the rules
    for diag, label in (train_log_without_rules(CUDNN_PATH), train_log_with_rules(CUDNN_PATH)):
        assert label["category"] == "config"
        assert top3(diag)[0] == "environment" and "config" in top3(diag), top3(diag)


@pytest.mark.parametrize("name", CUDNN_OLDER)
def test_loaded_older_cudnn_stays_the_installation(name: str) -> None:
    # XLA's "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0" where an older cuDNN was
    # installed: the configuration at most joins the three, the installation keeps its place
    for diag, label in (train_log_without_rules(name), train_log_with_rules(name)):
        assert label["category"] == "environment"
        assert "environment" in top3(diag)[:2], top3(diag)
    assert train_log_with_rules(name)[0].root_causes[0].category == "environment"


def test_real_torch_refuses_its_debug_variable(tmp_path: Path) -> None:
    # real torch on the CPU: importing it with TORCH_DISTRIBUTED_DEBUG=VERBOSE raises ValueError("The value of
    # TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.") in torch.distributed's set_debug_level_from_env
    pytest.importorskip("torch")
    env = dict(os.environ, TORCH_DISTRIBUTED_DEBUG="VERBOSE")
    p = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240
    )
    assert p.returncode != 0 and "TORCH_DISTRIBUTED_DEBUG must be" in p.stderr, p.stderr[-2000:]
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert diag.root_causes[0].category == "config", top3(diag)
    assert context_checks(diag, "config").get("context:cfg:setting_refused") == "passed"


@pytest.mark.parametrize(
    "text",
    [
        "EE1001: The argument is invalid.Reason: set ASCEND_RT_VISIBLE_DEVICES:0,2,1 error, it must be configured",
        "(EZ9999):  HCCL_BUFFSIZE is too SMALL, maxBs = 512, HCCL_BUFFSIZE=200MB.",
        "ValueError: The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.",
        "RuntimeError: environment variable `OMP_PREFIX` is invalid.",
        "ValueError: XLA_PYTHON_CLIENT_MEM_FRACTION=1.5 must be between 0.0 and 1.0",
        "RuntimeError: invalid value for PYTORCH_CUDA_ALLOC_CONF: expandable",
    ],
)
def test_setting_refused_words(text: str) -> None:
    assert load_ruleset().reasoning.patterns["setting_refused"].search(text)


@pytest.mark.parametrize(
    "text",
    [
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",  # a hint for debugging, not the setting refused
        "Set NCCL_DEBUG=INFO for more details",
        "CUDA_HOME environment variable is not set",  # a missing toolkit path: the installation's
        "jaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: the shape is invalid",  # a status code
        "CUDA_ERROR_INVALID_VALUE is invalid",
        "AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001",  # C++ constant
        "TILE_M (128) must be <= Ms (64)",  # a kernel's constant, no value given as a setting
    ],
)
def test_not_a_setting_refused(text: str) -> None:
    assert not load_ruleset().reasoning.patterns["setting_refused"].search(text)


def test_a_pack_extends_the_named_words(tmp_path: Path) -> None:
    """The words are data (``[patterns] setting_refused``): a team's pack that names its scheduler's refusal
    (``'<<setting_refused>>|…'``, the built-in words and its own, sharing the built-in ``<<setting_var>>``) makes
    a real run's refused variable the setting's fault; the built-in words alone do not read that line, and a pack
    naming a part nobody defined is skipped with a warning, leaving the built-in words."""
    prog = (
        "import os\n"
        "n = os.environ.get('TEAM_SHARD_COUNT', '3')\n"
        "raise SystemExit(f'scheduler: TEAM_SHARD_COUNT={n} not accepted (shards divide the 8 hosts)')\n"
    )
    (tmp_path / "launch.py").write_text(prog)
    p = subprocess.run([sys.executable, "launch.py"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 1 and "not accepted" in p.stderr
    team = "[patterns]\nsetting_refused = '<<setting_refused>>|<<setting_var>>=\\S+ not accepted\\b'\n"
    extended = load_ruleset([("team.toml", team)])
    assert "cfg:setting_refused" in context_facts(diagnose(texts={"stderr": p.stderr}, exit_code=1, ruleset=extended))
    assert "cfg:setting_refused" not in context_facts(diagnose(texts={"stderr": p.stderr}, exit_code=1))
    words = extended.reasoning.patterns["setting_refused"]
    assert words.search("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL")  # the built-in stay
    with pytest.warns(UserWarning, match="unknown part <<no_such_part>>"):
        broken = load_ruleset([("bad.toml", "[patterns]\nsetting_refused = '<<no_such_part>>'\n")])
    assert (
        broken.reasoning.patterns["setting_refused"].pattern
        == load_ruleset().reasoning.patterns["setting_refused"].pattern
    )
