"""Supervising a started command until it ends: output pumps, the monitor (timeline, hang detector), stack
collection and stopping on a hang, and the result's fields once it ended.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .launchers import gather_paths
from .oomkill import oom_verdict, read_oom_kills
from .options import RunOptions, RunResult, signal_of
from .proc import shell_status, stop_group
from .tee import BoundedLog, Pump


def stop_tree(proc: subprocess.Popen[bytes], grace: float) -> str:
    """Stop a hung run: its process group and the processes of its tree that left the group (setsid), through
    ``proc.stop_group`` (SIGTERM, ``grace`` seconds, SIGKILL). Returns the signal that ended it."""
    import psutil

    from .stacks import tree

    strays = tree(proc.pid)

    def also(sig: int) -> None:  # members that left the group (setsid) are still part of the run
        for p in strays if sig == signal.SIGTERM else (tree(proc.pid) or strays):
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass

    return stop_group(proc, grace, kill_wait=10.0, also=also)


def supervise(
    proc: subprocess.Popen[bytes],
    opts: RunOptions,
    result: RunResult,
    start_wall: float,
    t0: float,
    oom_before: dict[str, int],
    bounded: tuple[BoundedLog, BoundedLog],
) -> RunResult:
    from .monitor import Monitor
    from .stacks import STACK_WAIT_S, collect_stacks

    out = opts.out
    logs = out / "logs"
    counter = [0]
    count_lock = threading.Lock()

    def on_data(n: int) -> None:
        with count_lock:
            counter[0] += n

    out_log, err_log = bounded
    pumps = [
        Pump(proc.stdout.fileno(), _fileno(sys.stdout) if opts.echo else None, out_log, on_data),  # type: ignore[union-attr]
        Pump(proc.stderr.fileno(), _fileno(sys.stderr) if opts.echo else None, err_log, on_data),  # type: ignore[union-attr]
    ]
    for p in pumps:
        p.start()
    hang = threading.Event()
    hang_info: dict[str, Any] = {}

    def on_hang(detail: str) -> None:
        hang_info["detail"] = detail
        hang.set()  # from here on the main thread waits for this thread before it reads the result
        try:
            texts, notes = collect_stacks(proc.pid, out, monitor.ranks)
            hang_info["stacks"], hang_info["notes"] = texts, notes
        except Exception as exc:  # still stop the run
            hang_info["notes"] = [f"stack collection failed: {type(exc).__name__}: {exc}"]
        hang_info["stopped_by"] = stop_tree(proc, opts.grace)

    monitor = Monitor(proc.pid, opts, lambda: counter[0], on_hang)
    monitor.start()
    while True:
        try:
            proc.wait()
            break
        except KeyboardInterrupt:  # only if a handler could not be installed (not the main thread)
            continue
    if hang.is_set():
        monitor.join(timeout=opts.grace + STACK_WAIT_S + 30)  # let it finish collecting and stopping
    monitor.stop_event.set()
    for p in pumps:
        p.join(timeout=5)  # a grandchild may still hold the pipe open; do not wait for it forever
    for p, pipe in zip(pumps, (proc.stdout, proc.stderr), strict=True):
        if not p.is_alive() and pipe is not None:  # a pump still reading keeps its pipe (closing under it races)
            pipe.close()
    monitor.join(timeout=5)
    out_log.close()
    err_log.close()
    result.duration_s = round(time.monotonic() - t0, 3)
    result.returncode = proc.returncode
    result.exit_status = shell_status(proc.returncode)
    result.signal = signal_of(result.exit_status)
    result.stdout_bytes, result.stderr_bytes = out_log.total, err_log.total
    result.omitted_bytes = {"stdout.log": out_log.omitted, "stderr.log": err_log.omitted}
    result.timeline = list(monitor.samples)
    result.ranks = dict(monitor.ranks)
    result.notes += monitor.notes
    if hang.is_set():
        result.hung = True
        result.hang_detail = hang_info.get("detail", "")
        result.stacks = hang_info.get("stacks", {})
        result.notes += hang_info.get("notes", [])
        result.notes.append(
            f"the run was stopped with {hang_info.get('stopped_by', 'SIGTERM')} after the hang was detected"
        )
        result.exit_status = 124  # as timeout(1) does: the command did not finish on its own
    if result.signal == "SIGKILL" or result.exit_status == 137:
        result.oom = oom_verdict(oom_before, read_oom_kills(), monitor.seen_pids, result.exit_status)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    result.wrapper_cpu_s = round(ru.ru_utime + ru.ru_stime, 3)
    result.collected = gather_paths(opts, start_wall, logs)
    _tidy_stacks(out / "stacks")
    for empty in (out / "elastic", out / "nccl"):
        try:
            empty.rmdir()  # only when the run left nothing there
        except OSError:
            pass
    return result


def _fileno(stream: Any) -> int | None:
    try:
        stream.flush()
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _tidy_stacks(folder: Path) -> None:
    """Processes that never dumped leave empty files: remove them."""
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        try:
            if p.is_file() and p.stat().st_size == 0:
                p.unlink()
        except OSError:
            pass
    try:
        folder.rmdir()  # only when empty
    except OSError:
        pass
