"""The kjax12 block (rules/05-reasoning.toml ``# --- kjax12 ---``, rules/71-jax-libraries.toml, engine/reason.py
``script_not_collected``; docs/engine.md): facts found on the JAX train logs whose true home the engine ranked second.

- Flax 0.7.1 turned ``flax_return_frozendict`` off: Module.init/apply return plain dicts, so FrozenDict's own
  ``unfreeze``/``pretty_repr`` asked of them say the code was written for an older Flax (``cue:flax_frozendict_api``,
  rule ``flax.init_returns_plain_dict``).
- SIGILL and the frameworks' own CPU-feature guards (jaxlib's "was built using AVX instructions", TensorFlow's):
  the installed build does not fit the machine (``cue:cpu_isa``); CUDA's "an illegal instruction was encountered"
  is a GPU kernel's fault and is not read.
- A file named like a test whose top level is the outermost frame ran as the main program: pytest did not collect
  it, so its ``<module>`` frame does not set the collection stage; JAX's Mosaic compiler's words set compile.

Shown on train logs with and without the explaining rules, and on real runs of CPython here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fact_statuses, fired, top3, train_log_with_rules, train_log_without_rules


def _diagnose(text: str, exit_code: int | None = 1):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose(texts={"stderr": text}, exit_code=exit_code)


def _run(tmp_path: Path, argv: list[str]) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240)
    return p.stdout + p.stderr, p.returncode


# --- Flax 0.7.1's plain dicts ---------------------------------------------------------------------------------------

FLAX_LOG = "jax/jax_flax071_init_returns_dict_no_unfreeze"


def test_frozendict_method_on_a_plain_dict_reads_the_installed_flax():
    diag, label = train_log_without_rules(FLAX_LOG)
    assert label["category"] == "environment"
    assert "cue:flax_frozendict_api" in fact_statuses(diag)
    assert top3(diag)[0] == "environment"
    with_rules, _ = train_log_with_rules(FLAX_LOG)
    assert fired(with_rules, "flax.init_returns_plain_dict")
    assert top3(with_rules)[0] == "environment"


def test_cpython_s_own_error_for_unfreeze_on_a_dict(tmp_path):
    # what Flax 0.7.1+ code gets: init returned a dict, and CPython names the builtin class
    (tmp_path / "train.py").write_text(
        "def create_train_state():\n"
        "    variables = {'params': {'w': 1.0}}  # Module.init's result under Flax >= 0.7.1\n"
        "    return variables['params'].unfreeze()\n\n\ncreate_train_state()\n"
    )
    out, code = _run(tmp_path, [sys.executable, "train.py"])
    assert code == 1 and "'dict' object has no attribute 'unfreeze'" in out, out
    diag = _diagnose(out, code)
    assert "cue:flax_frozendict_api" in fact_statuses(diag)
    assert fired(diag, "flax.init_returns_plain_dict")
    assert top3(diag)[0] == "environment"


def test_another_missing_dict_method_is_not_read(tmp_path):
    (tmp_path / "prog.py").write_text("d = {'a': 1}\nd.unfrozen()\n")
    out, code = _run(tmp_path, [sys.executable, "prog.py"])
    assert code == 1 and "has no attribute 'unfrozen'" in out, out
    diag = _diagnose(out, code)
    assert "cue:flax_frozendict_api" not in fact_statuses(diag)
    assert not fired(diag, "flax.init_returns_plain_dict")


# --- an instruction the CPU lacks -----------------------------------------------------------------------------------


def test_sigill_at_import_reads_the_installed_build():
    for name in (
        "jax/jax_import_illegal_instruction_no_avx",
        "environment/jetson_nano_numpy_illegal_instruction_import_torch",
    ):
        diag, label = train_log_without_rules(name)
        assert label["category"] == "environment"
        assert "cue:cpu_isa" in fact_statuses(diag), name
        assert top3(diag)[0] == "environment", name


def test_a_real_sigill_under_faulthandler_and_the_shell(tmp_path):
    code = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"
    out, rc = _run(tmp_path, [sys.executable, "-X", "faulthandler", "-c", code])
    assert rc == -4 and "Fatal Python error: Illegal instruction" in out, (rc, out)
    diag = _diagnose(out, 128 + 4)
    assert "cue:cpu_isa" in fact_statuses(diag)
    assert top3(diag)[0] == "environment"
    # the shell's report of its child's death (bash prints it for a command that is not the last one)
    out, rc = _run(tmp_path, ["bash", "-c", f'{sys.executable} -c "{code}"; exit 132'])
    assert "Illegal instruction" in out, out
    diag = _diagnose(out, rc)
    assert "cue:cpu_isa" in fact_statuses(diag)
    assert top3(diag)[0] == "environment"


def test_cuda_s_illegal_instruction_is_a_gpu_kernel_not_the_cpu():
    diag = _diagnose(
        "RuntimeError: CUDA error: an illegal instruction was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.\n"
    )
    assert "cue:cpu_isa" not in fact_statuses(diag)


# --- a test-named file run as the program; Mosaic's compile ---------------------------------------------------------

PALLAS_LOG = "jax/pallas_tpu_matmul_block_k_below_128_unsupported_layout"


def test_a_pallas_kernel_refused_by_mosaic_in_a_script_named_like_a_test():
    # ``python test_multihead.py``: the script's top level is the outermost frame, pytest collected nothing
    diag, label = train_log_without_rules(PALLAS_LOG)
    assert label["category"] == "operator"
    assert "stage:collection" not in fact_statuses(diag)
    assert diag.profile.stage == label["stage"] == "compile"
    assert top3(diag)[0] == "operator"
    with_rules, _ = train_log_with_rules(PALLAS_LOG)
    assert top3(with_rules)[0] == "operator"
    assert with_rules.profile.stage == "compile"


def _module_error(tmp_path: Path) -> None:
    (tmp_path / "test_repro.py").write_text(
        "def build(n):\n    raise ValueError(f'bad size {n}')\n\n\nbuild(3)\n\n\ndef test_x():\n    pass\n"
    )


def test_a_test_named_script_run_by_python_is_not_collection(tmp_path):
    _module_error(tmp_path)
    out, code = _run(tmp_path, [sys.executable, "test_repro.py"])
    assert code == 1 and "ValueError: bad size 3" in out, out
    diag = _diagnose(out, code)
    assert diag.profile.stage != "collection"
    assert "stage:collection" not in fact_statuses(diag)


def test_the_same_module_imported_by_pytest_stays_collection(tmp_path):
    _module_error(tmp_path)
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:faildiag", "-p", "no:randomly", "-q"]
    out, code = _run(tmp_path, [*argv, "test_repro.py"])
    assert code == 2 and "ValueError: bad size 3" in out, out
    assert _diagnose(out, code).profile.stage == "collection"


# --- XLA's coordination service ------------------------------------------------------------------------------------

COORD_LOG = "jax/jax_distributed_init_tpu_multislice_coordinator_port_firewall"


def test_a_coordination_rpc_that_failed_is_the_connection():
    diag, label = train_log_without_rules(COORD_LOG)
    assert label["category"] == "communication"
    assert "cue:coordination_rpc" in fact_statuses(diag)
    assert top3(diag)[0] == "communication"
    with_rules, _ = train_log_with_rules(COORD_LOG)
    assert top3(with_rules)[0] == "communication"
    assert with_rules.profile.stage == label["stage"] == "startup"


def test_a_status_code_without_the_coordination_rpc_is_not_read():
    diag = _diagnose("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Deadline Exceeded\n")
    assert "cue:coordination_rpc" not in fact_statuses(diag)
    diag = _diagnose("DEADLINE_EXCEEDED: Deadline Exceeded\nRPC: /tensorflow.CoordinationService/Heartbeat\n")
    assert "cue:coordination_rpc" in fact_statuses(diag)


# --- Flax NNX's mutation from another trace level -------------------------------------------------------------------

NNX_LOG = "jax/keras_nnx_t5backbone_tracecontexterror"


def test_a_library_s_mutation_refused_by_flax_nnx_is_that_library_s():
    # keras_hub's T5 layer, built inside Keras' symbolic call, assigns to an NNX object of another trace level
    diag, label = train_log_without_rules(NNX_LOG)
    assert label["category"] == "library"
    assert "raiser:nnx_mutation_library" in fact_statuses(diag)
    assert top3(diag)[0] == "library"
    with_rules, _ = train_log_with_rules(NNX_LOG)
    assert top3(with_rules)[0] == "library"


def _nnx_text(caller: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 10, in <module>\n'
        "    main()\n"
        f'  File "{caller}", line 20, in update\n'
        "    self.count.value += 1\n"
        '  File "/home/user/venv/lib/python3.11/site-packages/flax/nnx/variablelib.py", line 167, in __setattr__\n'
        "    raise errors.TraceContextError(\n"
        "flax.errors.TraceContextError: Cannot mutate Variable from a different trace level\n"
    )


def test_the_program_s_own_mutation_is_not_read_as_a_library_s():
    lib = _diagnose(_nnx_text("/home/user/venv/lib/python3.11/site-packages/somelib/layers.py"))
    assert "raiser:nnx_mutation_library" in fact_statuses(lib)
    own = _diagnose(_nnx_text("/home/user/proj/model.py"))
    assert "raiser:nnx_mutation_library" not in fact_statuses(own)
