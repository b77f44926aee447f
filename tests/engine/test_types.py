"""The profile's ``type`` is the symptom, as the contract defines it, whatever path decides it.

Paths, strongest first: a rule's type (the best finding that names one); the failing exception class's
type when the rule that named one is only a weak signal (an exit status, a bare "timed out after N");
else, where no rule named a type, the class's type, then the words of the message (``type:`` contexts in
05-reasoning.toml: communication, unsupported_op, crash, oom, backend, in that order); else the fallback
(an exception or an error: runtime_error; a signal: crash). Each test makes the failure for real here: a
child or worker killed by a signal, a process pool whose worker died, a memory limit, a c10d store that
nobody joins, a torchrun worker killed, and Python raising a device runtime's error text in a subprocess.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import without

THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _run(tmp_path: Path, code: str, *, python: str = sys.executable, timeout: int = 120, args: tuple = ()):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.run([python, str(script), *args], capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    return p.stdout + p.stderr, p.returncode


def _diagnose(out: str, rc: int):
    # the shell's view of a process ended by a signal: 128 + N
    return diagnose(texts={"stdout": out}, exit_code=128 - rc if rc < 0 else rc)


def _raise_in_subprocess(tmp_path: Path, cls: str, message: str):
    """A real Python process raising ``cls(message)``; a dotted name is defined in that module, so Python
    prints it qualified as the framework would (``jaxlib.xla_extension.XlaRuntimeError: …``)."""
    if "." in cls:
        mod, name = cls.rsplit(".", 1)
        pkg = tmp_path.joinpath(*mod.split("."))
        pkg.parent.mkdir(parents=True, exist_ok=True)
        for parent in [tmp_path.joinpath(*mod.split(".")[:i]) for i in range(1, len(mod.split(".")))]:
            (parent / "__init__.py").touch()
        pkg.with_suffix(".py").write_text(f"class {name}(RuntimeError):\n    pass\n")
        head = f"from {mod} import {name}"
    else:
        name, head = cls, ""
    out, rc = _run(
        tmp_path,
        f"""
        {head}
        def step():
            raise {name}({message!r})
        step()
        """,
    )
    assert rc == 1, out
    return _diagnose(out, rc)


# --- signals: a worker or child the program depends on vs the program's own exit 137 ----------------------


def test_a_child_process_killed_by_sigkill_is_a_crash(tmp_path):
    out, rc = _run(
        tmp_path,
        """
        import subprocess, sys
        subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], check=True)
        """,
    )
    assert "died with <Signals.SIGKILL: 9>" in out
    assert _diagnose(out, rc).profile.type == "crash"


def test_a_spawned_worker_killed_by_sigkill_is_a_crash_like_a_torchrun_worker(tmp_path):
    pytest.importorskip("torch")
    out, rc = _run(
        tmp_path,
        """
        import os, signal
        import torch.multiprocessing as mp
        def work(i):
            if i == 1:
                os.kill(os.getpid(), signal.SIGKILL)
        if __name__ == "__main__":
            mp.spawn(work, nprocs=2)
        """,
    )
    assert "terminated with signal SIGKILL" in out, out[-500:]
    diag = _diagnose(out, rc)
    assert diag.profile.type == "crash"  # was "hang": proc.sigkill's reading of the program's own exit 137
    assert diag.root_causes[0].category == "resource"


def test_the_programs_own_sigkill_after_progress_stays_a_stopped_run(tmp_path):
    # no line says who died: the run was stopped from outside (the GPU corpus labels this a hang)
    out, rc = _run(
        tmp_path, "import os, signal\nprint('step 1 loss 0.5', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert rc == -signal.SIGKILL
    assert _diagnose(out, rc).profile.type == "hang"


def test_a_process_pool_whose_worker_died_is_a_crash(tmp_path):
    out, rc = _run(
        tmp_path,
        """
        import ctypes
        from concurrent.futures import ProcessPoolExecutor
        def work(x):
            ctypes.string_at(0)  # SIGSEGV in the worker
        if __name__ == "__main__":
            with ProcessPoolExecutor(2) as ex:
                print(list(ex.map(work, range(2))))
        """,
    )
    assert "BrokenProcessPool" in out and "Segmentation fault" not in out
    assert _diagnose(out, rc).profile.type == "crash"  # py.process_pool_worker_died (30-python.toml) knows it
    # the exception class's path alone, with the pack that knows the message left out
    diag = diagnose(texts={"stdout": out}, exit_code=128 - rc if rc < 0 else rc, ruleset=without("30-python.toml"))
    assert diag.profile.type == "crash"
    assert diag.root_causes[0].rule == "differential:crash"


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")
def test_a_torchrun_worker_killed_stays_a_crash_beside_the_launchers_exception(tmp_path):
    torch = pytest.importorskip("torch")
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun is not installed beside this Python")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "w.py").write_text(
        "import os, signal\nif os.environ['RANK'] == '1':\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    p = subprocess.run(
        [str(torchrun), "--nproc_per_node=2", f"--master_port={port}", "w.py"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    out = p.stdout + p.stderr
    assert "ChildFailedError" in out and "SIGKILL" in out, (torch.__version__, out[-800:])
    launcher = out[out.rindex("Traceback (most recent call last)") :]  # the launcher's report alone
    for text in (out, launcher):
        # ChildFailedError is the launcher's report: it implies no type that outranks the worker's signal
        assert diagnose(texts={"stdout": text}, exit_code=p.returncode).profile.type == "crash"


# --- a device runtime's code wrapped in an exception ----------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "message", "want"),
    [
        # no rule knows these messages: the code's family decides
        ("RuntimeError", "CUDA error: the launch was refused by a policy nobody documented", "backend"),
        ("RuntimeError", "ACL error 599990, the device reported something no table lists", "backend"),
        ("RuntimeError", "Failed to allocate memory for the output buffer of the fused kernel", "oom"),
        # XLA wrapping a driver API code: the code says memory, the XLA status says INTERNAL
        (
            "jaxlib.xla_extension.XlaRuntimeError",
            "INTERNAL: Failed to allocate 1073741824 bytes for new constant: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
            "oom",
        ),
        # a rule's type outranks the words: a lost device context is a crash, a collective's report communication
        ("RuntimeError", "CUDA error: misaligned address", "crash"),
        # the HIP runtime's status raised by a framework: the ROCm build lacks the GPU's arch (backend)
        (
            "RuntimeError",
            "HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
            "backend",
        ),
        (
            "jaxlib.xla_extension.XlaRuntimeError",
            "INTERNAL: CustomCall failed: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure",
            "crash",
        ),
        (
            "RuntimeError",
            "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, unhandled cuda error, NCCL version 2.14.3",
            "communication",
        ),
        ("NotImplementedError", "Could not run 'mylib::op' with arguments from the 'CUDA' backend.", "unsupported_op"),
    ],
)
def test_a_wrapped_device_runtime_code_gives_the_type_the_code_means(tmp_path, cls, message, want):
    diag = _raise_in_subprocess(tmp_path, cls, message)
    assert diag.profile.type == want, [c.rule for c in diag.root_causes[:3]]


def test_a_device_runtime_code_without_a_rule_draws_the_backend_differential(tmp_path):
    diag = _raise_in_subprocess(
        tmp_path, "RuntimeError", "CUDA error: the launch was refused by a policy nobody documented"
    )
    assert diag.root_causes[0].rule == "differential:backend"
    assert "backend" in [c.category for c in diag.root_causes[:3]]


def test_a_memory_limit_that_refuses_a_mapping_is_oom(tmp_path):
    pytest.importorskip("resource")
    out, rc = _run(
        tmp_path,
        """
        import mmap, resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        mmap.mmap(-1, 4 << 30)
        """,
    )
    assert "[Errno 12] Cannot allocate memory" in out, out
    assert _diagnose(out, rc).profile.type == "oom"


def test_a_real_log_whose_no_kernel_image_line_no_rule_reads_is_backend():
    # a train log of the thread corpus: the REPL prompt before the exception hides it from the rules
    log = THREADS / "jax" / "jax_no_kernel_image_driver470_cuda1162_parallel_compile.log"
    diag = diagnose([log])
    assert diag.profile.type == "backend"


# --- c10d's own errors: communication, even when a weak timeout wording matched ---------------------------


def _store(tmp_path: Path, master: bool):
    pytest.importorskip("torch.distributed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return _run(
        tmp_path,
        f"""
        from datetime import timedelta
        import torch.distributed as dist
        dist.TCPStore("127.0.0.1", {port}, world_size=2, is_master={master}, timeout=timedelta(seconds=1),
                      wait_for_workers=True)
        """,
    )


def test_a_c10d_client_that_cannot_reach_the_store_is_communication_not_a_hang(tmp_path):
    out, rc = _store(tmp_path, master=False)
    assert "DistNetworkError" in out and "timed out after" in out, out[-500:]
    diag = _diagnose(out, rc)
    # "timed out after 1000ms" also matches the weak exit-124 rule (a hang); the c10d class outranks it
    assert "proc.timeout_exit" in [c.rule for c in diag.root_causes]
    assert diag.profile.type == "communication"


def test_a_c10d_store_nobody_joins_is_communication(tmp_path):
    out, rc = _store(tmp_path, master=True)
    assert "DistStoreError" in out, out[-500:]
    assert _diagnose(out, rc).profile.type == "communication"


def test_the_dispatchers_no_kernel_message_logged_without_its_class_is_unsupported_op(tmp_path):
    pytest.importorskip("torch")
    out, rc = _run(
        tmp_path,
        """
        import logging, sys
        import torch
        lib = torch.library.Library("faildiagdemo", "DEF")
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CUDA")  # a kernel for CUDA only
        try:
            torch.ops.faildiagdemo.twice(torch.ones(2))
        except NotImplementedError as exc:
            logging.error("step failed: %s", str(exc).splitlines()[0])
            sys.exit(1)
        """,
    )
    assert "ERROR:root:step failed: Could not run 'faildiagdemo::twice' with arguments from the 'CPU' backend" in out
    diag = _diagnose(out, rc)
    assert diag.profile.type == "unsupported_op"
    assert diag.root_causes[0].category == "operator"


@pytest.mark.parametrize(
    ("sig", "rule", "first"),
    [(signal.SIGBUS, "proc.sigbus", "resource"), (signal.SIGFPE, "proc.sigfpe", "library")],
)
def test_a_process_killed_by_sigbus_or_sigfpe_is_a_crash(tmp_path, sig, rule, first):
    """signal(7): a real child dies of SIGBUS / SIGFPE and the shell reports it as 128+N ("Bus error (core
    dumped)", exit 135; "Floating point exception", exit 136). Both are crashes, with the catalogue's usual
    causes first (mapped memory that could not be backed; an integer division by zero in native code)."""
    script = tmp_path / "die.py"
    script.write_text(f"import os, signal\nprint('step 1 loss 0.5', flush=True)\nos.kill(os.getpid(), {int(sig)})\n")
    p = subprocess.run(
        ["bash", "-c", f"ulimit -c 0; '{sys.executable}' '{script}'; exit $?"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode == 128 + int(sig), (p.returncode, p.stderr)
    d = _diagnose(p.stdout + p.stderr, p.returncode)
    assert d.profile.type == "crash"
    assert any(c.rule == rule for c in d.root_causes)
    assert d.root_causes[0].category == first
