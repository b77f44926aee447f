"""The run wrapper behind ``faildiag run``: run a command, pass its output through, keep the evidence.

What it does while the command runs, and why:

* **Output** is read from pipes in raw chunks and written straight to our own stdout/stderr (bytes as they
  come, so ``\r`` progress bars still work) and to ``<out>/logs/{stdout,stderr}.log``. The stored files
  are bounded: the first ``head_bytes`` go to the file, after that a rolling tail lives in two
  alternating segment files on disk; at the end they are joined as head + "[faildiag: N bytes omitted]"
  + tail. Memory use is one read buffer per stream, whatever the command prints.
* **Exit status** is interpreted the way a shell would report it (128+N for a signal) and ``faildiag run``
  exits with it; a SIGKILL is checked against the kernel OOM killer (cgroup ``memory.events`` /
  ``memory.oom_control`` counters before and after, ``dmesg`` when it is readable).
* **Signals** SIGINT/SIGTERM/SIGHUP/SIGQUIT received by us are forwarded to the child's process group (the
  child runs in its own group so a Ctrl-C reaches it once, through us).
* **Timeline**: a monitor thread samples RSS and CPU of the process tree (psutil) every ``interval``
  seconds, GPU memory (``nvidia-smi``) every ``gpu_interval`` seconds, into ``<out>/timeline.jsonl``.
* **Hang detection** (``hang_timeout``): no output, no CPU time growth of the tree and no file growing in
  the watched folders for that long → every Python process in the tree dumps its threads (a generated
  ``sitecustomize`` registers ``faulthandler`` on SIGUSR1; it chains to any other ``sitecustomize``),
  ``py-spy dump`` when installed, the process tree and GPU memory are written, and the run is stopped
  (SIGTERM to the group, a grace period, SIGKILL).

One module per concern, this one tying them together (``run_command``, ``finish_run``): ``options`` (what
to run, what was seen), ``childenv`` (the child's environment), ``launch`` (own process group, signals
forwarded, the terminal handed over), ``supervise`` (pumps, monitor, stopping a hung tree through
``proc.stop_group``), ``oomkill`` (OOM-killer evidence), ``launchers`` (torchelastic and other launcher
artefacts), ``lockbuild`` (the environment lock), ``runrecord`` (``run.json``, the last-green lock),
``rundiag`` (the diagnosis); ``tee`` (pass-through + bounded logs), ``monitor`` (timeline, hang detector)
and ``stacks`` (stack dumps, process table) were apart already. The names below stay importable from here.

Nothing is written outside the output folder, and nothing in it through a symlink: the folder is checked
(``fsio.check_output_root``), every folder below it is checked or created private (``fsio.safe_mkdir``;
the folders the child writes into by name, ``stacks``, ``elastic`` and ``nccl``, are made fresh), every
file is created new (``fsio.open_output_file``, ``fsio.safe_atomic_write``). The one exception is the
generated ``sitecustomize.py``: it lives in a ``mkdtemp`` folder for the run and is removed after it.
Errors of the wrapper itself never change the command's exit status: they become notes in ``run.json``.
"""

from __future__ import annotations

import shutil
import threading
from typing import Any

from ..fsio import safe_mkdir
from ..store import read_last_green
from .childenv import child_env
from .launch import run_child
from .launchers import MAX_FILES_WALKED, RANK_LOG_BYTES, copy_rank_logs, gather_paths
from .lockbuild import FINGERPRINT, LockBuilder, env_fingerprint
from .oomkill import oom_verdict, read_oom_kills
from .options import RunOptions, RunResult, command_text, signal_of
from .proc import shell_status
from .rundiag import diagnose_result
from .runrecord import LAST_GREEN, write_run_files
from .supervise import stop_tree
from .tee import BoundedLog

__all__ = [
    "FINGERPRINT",
    "LAST_GREEN",
    "MAX_FILES_WALKED",
    "RANK_LOG_BYTES",
    "LockBuilder",
    "RunOptions",
    "RunResult",
    "child_env",
    "command_text",
    "copy_rank_logs",
    "diagnose_result",
    "env_fingerprint",
    "finish_run",
    "gather_paths",
    "oom_verdict",
    "read_last_green",
    "read_oom_kills",
    "run_command",
    "shell_status",
    "signal_of",
    "stop_tree",
    "warm_imports",
    "write_run_files",
]


def run_command(opts: RunOptions) -> RunResult:
    """Run ``opts.command`` to completion (or until a hang is detected) and return what happened.

    Never raises for the command's own failures; a command that cannot start gives exit status 127
    (not found) or 126 (not executable), as a shell does. Every file and folder of ours is opened before
    the command starts: an output folder that cannot be written (``fsio.OutputFolderRefused``, OSError)
    raises before anything ran.
    """
    logs = safe_mkdir(opts.out, "logs")
    result = RunResult(command=list(opts.command), returncode=None, exit_status=0)
    inject = None
    if opts.hang_timeout:
        from .stacks import install_stack_handler

        inject = install_stack_handler()
    out_log = err_log = None
    try:
        env, result.env_set = child_env(opts, inject=inject)
        out_log = BoundedLog(logs / "stdout.log", opts.head_bytes, opts.tail_bytes)
        err_log = BoundedLog(logs / "stderr.log", opts.head_bytes, opts.tail_bytes)
        return run_child(opts, env, result, (out_log, err_log))
    finally:
        for log in (out_log, err_log):
            if log is not None:
                log.close()  # already closed after a run; a command that never started leaves empty logs
        if inject is not None:
            shutil.rmtree(inject, ignore_errors=True)


def warm_imports() -> None:
    """Import, while the command runs, what the end of the run needs (redaction for run.json): the time
    between the command's exit and ours is latency the user sees."""

    def load() -> None:
        from .. import redact  # noqa: F401

    threading.Thread(target=load, name="faildiag-warm", daemon=True).start()


def finish_run(
    result: RunResult,
    opts: RunOptions,
    lock: dict[str, Any] | None,
    *,
    diagnose_failure: bool = True,
    redacted_lock: dict[str, Any] | None = None,
):
    """Write run.json (+ last-green lock or the snapshot); returns the Diagnosis or None."""
    if redacted_lock is not None and not result.failed:
        write_run_files(result, opts.out, redacted_lock, redacted=True)
    else:
        write_run_files(result, opts.out, lock)
    if not result.failed or not diagnose_failure or result.start_error:
        return None
    from ..engine import write_snapshot

    diag = diagnose_result(result, opts, lock)
    write_snapshot(diag, opts.out, lock=lock)
    return diag
