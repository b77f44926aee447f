"""Where the cause of a JAX or MindSpore failure lives, read from real failures (#13, the weakest stacks).

The logs under ``tests/data/kb/weak_reasoning/`` are the real stderr of small programs run on CPU with
jax 0.10.2 / flax 0.12.8, MindSpore 2.10.0 and torch 2.13.0+cpu with torch_npu 2.13.0 (no CANN) (each program is quoted below beside its log; only the
machine's paths were rewritten to ``/home/user/...``), with the exit status in ``<name>.rc``. The TPU log
is a train log of the thread corpus (never a dev log). Each case states the general fact a reader uses:
who owns the code that raised, which setting or installed release the message names.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import load_ruleset

DATA = Path(__file__).resolve().parents[1] / "data"
LOGS = DATA / "kb" / "weak_reasoning"
TRAIN = DATA / "corpus" / "threads"

# name -> (the program that produced it, expected type, expected top category, rule that must fire or None)
CASES: dict[str, tuple[str, str, str, str | None]] = {
    # a flag XLA does not register: the job's setting (XLA_FLAGS), read before any code runs
    "jax_xla_flags_unknown": (
        'os.environ["XLA_FLAGS"] = "--xla_gpu_enable_fancy_thing=true"; jnp.ones(3) + 1',
        "runtime_error",
        "config",
        "xla.flags.unknown",
    ),
    # a backend no installed plugin provides: the installation (CPU-only jaxlib), not the code
    "jax_gpu_absent": ('jax.devices("gpu")', "backend", "environment", "jax.backend.platform_absent"),
    # a jax.config option this release does not define: code written for another JAX release
    "jax_config_unknown": (
        'jax.config.update("jax_enable_fancy_mode", True)',
        "runtime_error",
        "environment",
        "jax.config.unrecognized_option",
    ),
    # initialize() after a JAX call: the order of the program's own calls, not the coordinator settings
    "jax_dist_init_after_backend": (
        "print(jnp.ones(2)); jax.distributed.initialize(coordinator_address=..., num_processes=1, process_id=0)",
        "runtime_error",
        "model",
        "jax.cat.distributed_init_order",
    ),
    # tracer errors raised in the user's own jitted function: the user's code
    "jax_concretization_if": ("@jax.jit def f(x): if x.sum() > 0: ...", "runtime_error", "model", "jax.tracer"),
    "jax_tracer_int": ("@jax.jit def f(x, n): jnp.zeros(int(n))", "runtime_error", "model", "jax.tracer"),
    "jax_numpy_on_tracer": (
        "@jax.jit def loss(x): np.sum(np.asarray(x))",
        "runtime_error",
        "model",
        "jax.err.tracer_array_conversion",
    ),
    "jax_unexpected_tracer": (
        "@jax.jit def f(x): saved.append(x * 2); then saved[0] + 1",
        "runtime_error",
        "model",
        "jax.err.unexpected_tracer",
    ),
    "jax_static_unhashable": (
        "jax.jit(f, static_argnums=1)(x, jnp.ones(3))",
        "runtime_error",
        "model",
        "jax.cat.non_hashable_static",
    ),
    "jax_broadcast": ("jnp.ones((3, 4)) + jnp.ones((5,))", "runtime_error", "model", "jax.shape"),
    "jax_nan_debug": ("jax_debug_nans; jnp.sqrt(-1.0) under jit", "runtime_error", "model", "jax.nan"),
    "jax_prng_bad_key": ("jax.random.normal(42, (3,))", "runtime_error", "model", None),
    # a mesh of 4 devices and a batch of 6 rows: the job's sizes
    "jax_device_put_sharding_indivisible": (
        "device_put(jnp.ones((6, 2)), NamedSharding(mesh_of_4, P('data')))",
        "runtime_error",
        "config",
        "jax.cat.sharding_shape",
    ),
    # names removed from the installed jax: code written for another release
    "jax_tree_multimap_removed": ("jax.tree_multimap(...)", "runtime_error", "environment", None),
    "jax_keyarray_removed": ("def f(key: jax.random.KeyArray)", "runtime_error", "environment", None),
    "jax_host_callback_removed": ("from jax.experimental import host_callback", "runtime_error", "environment", None),
    # torch_npu imported without CANN on the loader path: the installation; a torch/torch_npu pair that
    # does not fit is the installation's too (environment), a broken torch_npu build the library's
    "pta_import_without_cann": (
        "import torch, torch_npu  (torch 2.13.0+cpu, torch_npu 2.13.0, no CANN installed)",
        "runtime_error",
        "environment",
        "pta.version_mismatch",
    ),
    # MindSpore re-raises a pipeline function's exception with its class: NameError is that code's defect
    "ms_dataset_user_fn_error": (
        "GeneratorDataset(gen).map(operations=lambda x: x / undefined_scale)",
        "runtime_error",
        "model",
        "ms.dataset.user_function_bug",
    ),
    # a settings API refused a value: the job's setting
    "ms_set_context_bad_mode": ("ms.set_context(mode=3)", "runtime_error", "config", "ms.cat.settings_argument"),
    # MindData names a column the source does not produce: the column lists (a suite's YAML, the code)
    "ms_column_missing": (
        'GeneratorDataset(gen, ["image", "label"]).map(operations=f, input_columns=["img"])',
        "runtime_error",
        "config",
        "ms.dataset.column_name",
    ),
    # a checkpoint API refused the file it was handed (a PyTorch .pth): the checkpoint, not the model code
    "ms_ckpt_not_ckpt_format": (
        'ms.load_checkpoint("model.pth")',
        "runtime_error",
        "checkpoint",
        "ms.cat.checkpoint_api_argument",
    ),
    # init() in a process no launcher started: the launch, not a connection
    "ms_comm_init_no_env": (
        "from mindspore.communication import init; init()  (plain python, no msrun/mpirun)",
        "communication",
        "config",
        "ms.cat.init_without_launcher",
    ),
    "ms_parallel_mode_bad": (
        'ms.set_auto_parallel_context(parallel_mode="fancy_parallel")',
        "runtime_error",
        "config",
        None,
    ),
    "ms_conv_rank": ("nn.Conv2d(3, 8, 3)(ones((3, 32, 32)))", "runtime_error", "model", None),
    "ms_add_dtype": ("ops.bitwise_and(float32, float32) in GRAPH_MODE", "runtime_error", "model", None),
    "ms_graph_fstring_dict": (
        "d[x] = 1 with a tensor key in construct() (jit_syntax_level=STRICT)",
        "runtime_error",
        "model",
        None,
    ),
    "ms_model_train_no_loss": (
        "Model(nn.Dense(3, 2), loss_fn=None).train(1, dataset of (x, y))",
        "runtime_error",
        "model",
        None,
    ),
    "ms_matmul_shape": ("nn.Dense(3, 4)(ones((2, 5)))", "runtime_error", "model", None),
    "ms_graph_try": ("try/except in construct() under GRAPH_MODE", "runtime_error", "model", None),
    "ms_ckpt_missing": ('ms.load_checkpoint("./weights/resnet50_best.ckpt")', "runtime_error", "checkpoint", None),
    "ms_ckpt_shape": (
        "load_param_into_net(nn.Dense(5, 4), ckpt of nn.Dense(3, 4))",
        "runtime_error",
        "checkpoint",
        None,
    ),
    "ms_removed_ms_function": ("@ms.ms_function", "runtime_error", "environment", None),
    "ms_device_ascend_absent": (
        'ms.set_context(device_target="Ascend") on a CPU machine',
        "backend",
        "environment",
        None,
    ),
    "ms_dataset_folder_missing": ('ds.ImageFolderDataset("./data/imagenet/train")', "runtime_error", "config", None),
}


def test_the_packs_load_without_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = load_ruleset()
    assert not [w for w in caught if "faildiag" in str(w.message)], [str(w.message) for w in caught]
    ids = {r.id for r in rs.rules}
    for rule in (
        "xla.flags.unknown",
        "jax.backend.platform_absent",
        "jax.config.unrecognized_option",
        "xla.oom.compile_hbm",
        "jax.cat.distributed_init_order",
        "ms.dataset.user_function_bug",
        "ms.cat.settings_argument",
        "ms.dataset.column_name",
        "ms.cat.checkpoint_api_argument",
        "ms.cat.init_without_launcher",
    ):
        assert rule in ids


def test_every_fixture_has_its_case():
    assert {p.stem for p in LOGS.glob("*.log")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_it_places_the_cause_of_a_real_failure(name: str):
    _program, typ, category, rule = CASES[name]
    log = LOGS / f"{name}.log"
    rc = int((LOGS / f"{name}.rc").read_text())
    diag = diagnose([str(log)], exit_code=rc)
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == typ, (diag.profile.type, cats)
    assert cats[0] == category, [(c.category, c.rule, round(c.confidence, 3)) for c in diag.root_causes[:4]]
    if rule is not None:
        assert any(c.rule == rule for c in diag.root_causes), [c.rule for c in diag.root_causes]


def test_a_tpu_compile_time_hbm_verdict_is_the_jobs_sizes_not_a_full_device():
    """XLA's TPU compiler accounts every buffer before running: "Used 18.74G of 8.00G hbm" is the
    configured per-device sizes, not another process or fragmentation (train log, trax#270)."""
    log = TRAIN / "jax" / "trax_tpu_hbm_oom_tokens_per_device.log"
    diag = diagnose([str(log)])
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == "oom"
    assert cats[:2] == ["config", "resource"], cats
    top = diag.root_causes[0]
    assert top.rule == "xla.oom.compile_hbm"
    assert "18.74G" in top.summary and "8.00G" in top.summary
    # the generic XLA OOM reading (preallocation, another process) gives way to the compiler's verdict
    assert not any(c.rule == "jax.oom" for c in diag.root_causes)


def test_a_held_tpu_names_the_job_s_own_processes_as_suspects():
    """libtpu lets one process per host open the chips: besides a stray earlier run, a launcher or library
    that initialised JAX in the parent holds them (train log, JetStream's head process)."""
    log = TRAIN / "jax" / "jetstream_xla2_head_holds_tpu_workers_in_use.log"
    diag = diagnose([str(log)])
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == "backend"
    assert "library" in cats[:3], cats
    assert any(c.id == "library.backend_initialised_in_parent" for c in diag.root_causes)


@pytest.mark.parametrize(
    "log",
    [
        TRAIN / "mindspore" / "ms_mindyolo_dataset_path_missing.log",  # train log (mindyolo), one line
        LOGS / "ms_dataset_folder_missing.log",  # real output made here
    ],
    ids=lambda p: p.stem,
)
def test_a_data_path_that_is_not_there_is_the_configuration_s_not_the_installation_s(log: Path):
    """ "Error loading data from <path>: <path> does not exist" / "The folder <path> does not exist": the
    data's location or the configured path, never an installed version (cue:missing_data_path)."""
    diag = diagnose([str(log)])
    cats = [c.category for c in diag.root_causes]
    assert cats[0] == "config", cats
    assert "environment" not in cats[:2], cats
    checks = {v.name for c in diag.root_causes for v in c.validation_checks}
    assert "context:cue:missing_data_path" in checks


def test_a_torch_torch_npu_pair_that_does_not_fit_reads_as_the_installation():
    """The convention: installed versions that do not fit together are `environment`; only a torch_npu
    build that is itself defective is the library's (real import of torch_npu without CANN, made here)."""
    diag = diagnose([str(LOGS / "pta_import_without_cann.log")], exit_code=1)
    pair = [c for c in diag.root_causes if "not a matching pair" in c.summary]
    assert pair and all(c.category == "environment" for c in pair)
    assert diag.root_causes[0].category == "environment"
    assert "library" in [c.category for c in diag.root_causes[:3]]  # a broken build stays an alternative


# XLA's error catalogue (openxla/xla docs/errors): the catalogue's own sample message of each code -> the
# category its documented first cause names, and the rule that reads it
XLA_DOCS = LOGS / "xla_docs"
XLA_CODES: dict[str, tuple[str, str, str]] = {
    "e0100": ("oom", "resource", "xla.e0100.buffer_allocation"),
    "e0101": ("oom", "resource", "xla.e0101.program_load"),
    "e0102": ("runtime_error", "checkpoint", "xla.e0102.input_buffer_mismatch"),
    "e0200_launch_group": ("crash", "config", "xla.e0200.launch_group_mismatch"),
    "e03xx_peer": ("crash", "config", "xla.e0200.launch_group_mismatch"),
    "e0200_bounds": ("crash", "operator", "xla.e0200.kernel_check"),
    "e0200_semaphore": ("crash", "operator", "xla.e0200.kernel_check"),
    "e1000_hbm": ("oom", "config", "xla.oom.compile_hbm"),
    "e1000_abort": ("oom", "config", "xla.e1000.compile_hbm_estimate"),
    "e1002": ("oom", "config", "xla.e1000.compile_hbm_estimate"),
    "e1001_vmem": ("oom", "operator", "xla.e1001.vmem"),
    "e2001": ("unsupported_op", "operator", "xla.e2xxx.mosaic"),
    "e2002": ("unsupported_op", "operator", "xla.e2xxx.mosaic"),
}


def test_every_xla_catalogue_sample_has_its_code():
    assert {p.stem for p in XLA_DOCS.glob("*.log")} == set(XLA_CODES)


@pytest.mark.parametrize("code", sorted(XLA_CODES))
def test_it_reads_an_xla_catalogue_code_as_the_catalogue_does(code: str):
    typ, category, rule = XLA_CODES[code]
    diag = diagnose([str(XLA_DOCS / f"{code}.log")])
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == typ, (diag.profile.type, cats)
    assert cats[0] == category, [(c.category, c.rule) for c in diag.root_causes[:4]]
    assert diag.root_causes[0].rule == rule
    # a specific reading silences the generic ones: no "preallocation / another process" for a TPU verdict,
    # no "compiler bug first" for a halt the catalogue explains
    assert not any(c.rule in ("jax.oom", "xla.e0200.core_halted") for c in diag.root_causes)


def test_a_core_halt_on_observed_hardware_errors_is_the_hardware():
    """E0200's first scenario: the runtime names the infrastructure ("observed errors are: [Hardware]");
    the catalogue documents the signature but prints no full sample, so the halt line above carries it."""
    halt = (XLA_DOCS / "e0200_bounds.log").read_text().split(": BoundsCheck")[0]
    diag = diagnose(texts={"stderr": halt + "; observed errors are: [Hardware]\n"})
    assert diag.profile.type == "crash"
    assert diag.root_causes[0].category == "hardware"
    assert diag.root_causes[0].rule == "xla.e0200.infrastructure"
    alone = diagnose(texts={"stderr": halt + "\n"})  # the halt with no scenario's words: the generic reading
    assert alone.root_causes[0].rule == "xla.e0200.core_halted"
    assert "hardware" in [c.category for c in alone.root_causes[:3]]


# torch_npu's own sentences about the CANN/driver release (verbatim from libtorch_npu.so's strings)
NPU_MESSAGES = LOGS / "torch_npu_messages"


@pytest.mark.parametrize("log", sorted(NPU_MESSAGES.glob("*.log")), ids=lambda p: p.stem)
def test_a_torch_npu_message_naming_an_old_cann_is_the_installation(log: Path):
    diag = diagnose([str(log)], exit_code=1)
    assert diag.profile.type == "runtime_error"
    top = diag.root_causes[0]
    assert (top.category, top.rule) == ("environment", "pta.cann_too_old"), [
        (c.category, c.rule) for c in diag.root_causes[:3]
    ]
    assert "config" in [c.category for c in diag.root_causes[:3]]  # the older path the message offers


def test_a_cpu_fallback_caution_is_not_read_as_an_old_cann_failure():
    """ "CAUTION: ... will fallback to run on the CPU ... Please try to update your CANN version." is a
    warning of a run that goes on: it never names the failure, even in a run that failed."""
    text = (NPU_MESSAGES / "caution_fallback_warning.txt").read_text()
    for rc in (0, 1):
        diag = diagnose(texts={"stderr": text}, exit_code=rc)
        assert not any(c.rule == "pta.cann_too_old" for c in diag.root_causes)
