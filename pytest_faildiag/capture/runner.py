"""The run wrapper behind ``faildiag run``: run a command, pass its output through, keep the evidence.

What it does while the command runs, and why:

* **Output** is read from pipes in raw chunks and written straight to our own stdout/stderr (bytes as they
  come, so ``\\r`` progress bars still work) and to ``<out>/logs/{stdout,stderr}.log``. The stored files
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

The parts live next door: ``tee`` (pass-through + bounded logs), ``monitor`` (timeline, hang detector),
``stacks`` (stack dumps, process table). This module runs the command and turns the outcome into files
and a diagnosis.

Nothing is written outside the output folder, and nothing in it through a symlink: the folder is checked
(``fsio.check_output_root``), every folder below it is checked or created private (``fsio.safe_mkdir``;
the folders the child writes into by name, ``stacks``, ``elastic`` and ``nccl``, are made fresh), every
file is created new (``fsio.open_output_file``, ``fsio.safe_atomic_write``). The one exception is the
generated ``sitecustomize.py``: it lives in a ``mkdtemp`` folder for the run and is removed after it.
Errors of the wrapper itself never change the command's exit status: they become notes in ``run.json``.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fsio import open_output_file, safe_atomic_write, safe_mkdir
from ..store import LAST_GREEN_LOCK, read_last_green, write_last_green
from .proc import shell_status, signal_group, signal_name
from .tee import HEAD_BYTES, TAIL_BYTES, BoundedLog, Pump

if TYPE_CHECKING:
    import psutil

# psutil and the monitor/stack modules are imported after the command started: every millisecond
# before ``Popen`` is latency added to the user's run
MAX_FILES_WALKED = 5000

# --------------------------------------------------------------------------------------------------
# options and result
# --------------------------------------------------------------------------------------------------

@dataclass
class RunOptions:
    command: list[str]
    out: Path
    hang_timeout: float | None = None
    watch: list[Path] = field(default_factory=list)
    nccl_debug: bool = False
    collect: list[Path] = field(default_factory=list)
    echo: bool = True
    interval: float = 1.0
    gpu_interval: float = 10.0
    grace: float = 5.0
    head_bytes: int = HEAD_BYTES
    tail_bytes: int = TAIL_BYTES


@dataclass
class RunResult:
    command: list[str]
    returncode: int | None  # Popen's: negative for a signal; None when the command could not start
    exit_status: int  # what a shell reports and what `faildiag run` exits with
    signal: str | None = None
    hung: bool = False
    hang_detail: str = ""
    duration_s: float = 0.0
    start_error: str | None = None
    oom: dict[str, Any] | None = None
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    omitted_bytes: dict[str, int] = field(default_factory=dict)
    stacks: dict[str, str] = field(default_factory=dict)  # name -> dump text (rank-prefixed)
    timeline: list[dict[str, float]] = field(default_factory=list)
    ranks: dict[int, str] = field(default_factory=dict)  # pid -> rank
    collected: list[str] = field(default_factory=list)
    env_set: dict[str, str] = field(default_factory=dict)
    wrapper_cpu_s: float = 0.0  # CPU time of `faildiag run` itself (all its threads) up to the run's end
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.hung or self.exit_status != 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("timeline")
        d["stacks"] = sorted(self.stacks)
        d["ranks"] = {str(k): v for k, v in self.ranks.items()}
        return d


def signal_of(status: int) -> str | None:
    """The signal a shell status names (137 → SIGKILL); None for a plain exit."""
    return signal_name(status) if status > 128 else None


# --------------------------------------------------------------------------------------------------
# environment of the child
# --------------------------------------------------------------------------------------------------





def child_env(opts: RunOptions, base: dict[str, str] | None = None, *,
              inject: Path | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """The child's environment and the variables we added (never overriding what the user set).

    ``inject`` is the folder holding the generated ``sitecustomize.py`` (``stacks.install_stack_handler``),
    put first on ``PYTHONPATH`` when a hang timeout is set. The folders the child writes into by name are
    created fresh: a file planted there (``elastic/error.json -> ~/.bashrc``) would be written through."""
    env = dict(os.environ if base is None else base)
    added: dict[str, str] = {}
    out = opts.out.resolve()

    def setdefault(key: str, value: str) -> None:
        if key not in env:
            env[key] = value
            added[key] = value

    setdefault("PYTHONUNBUFFERED", "1")  # a crash must not lose the last lines sitting in a pipe buffer
    setdefault("PYTHONFAULTHANDLER", "1")  # a segfault/abort prints the Python stack of every thread
    elastic = out / "elastic" / "error.json"
    if "TORCHELASTIC_ERROR_FILE" not in env:
        safe_mkdir(out, "elastic", fresh=True)
        setdefault("TORCHELASTIC_ERROR_FILE", str(elastic))
    if opts.nccl_debug:
        safe_mkdir(out, "nccl", fresh=True)
        setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
        setdefault("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000")
        setdefault("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", str(out / "nccl" / "nccl_trace_rank_"))
        setdefault("TORCH_FR_BUFFER_SIZE", "2000")  # the same settings under their newer names
        setdefault("TORCH_FR_DUMP_TEMP_FILE", str(out / "nccl" / "nccl_trace_rank_"))
    if opts.hang_timeout and inject is not None:
        stacks = safe_mkdir(out, "stacks", fresh=True)
        env["FAILDIAG_STACK_DIR"] = str(stacks)
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(inject) + (os.pathsep + old if old else "")
        added["PYTHONPATH"] = env["PYTHONPATH"]
        added["FAILDIAG_STACK_DIR"] = str(stacks)
    return env, added


# --------------------------------------------------------------------------------------------------
# process tree, OOM killer, GPU
# --------------------------------------------------------------------------------------------------





def _cgroup_oom_files() -> list[Path]:
    """cgroup v2 ``memory.events`` or v1 ``memory.oom_control`` files of our own cgroup (the child inherits it)."""
    out: list[Path] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, rel = parts
        rel = rel.lstrip("/")
        if ctrls == "":
            for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                out.append(Path(base, rel, "memory.events"))
        elif "memory" in ctrls.split(","):
            out.append(Path("/sys/fs/cgroup/memory", rel, "memory.oom_control"))
    out += [Path("/sys/fs/cgroup/memory.events"), Path("/sys/fs/cgroup/memory/memory.oom_control")]
    seen: list[Path] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen


def read_oom_kills() -> dict[str, int]:
    """oom_kill counters by file; empty when the machine exposes none."""
    counts: dict[str, int] = {}
    for p in _cgroup_oom_files():
        try:
            m = re.search(r"^oom_kill (\d+)", p.read_text(), re.M)
        except OSError:
            continue
        if m:
            counts[str(p)] = int(m.group(1))
    return counts


def oom_verdict(before: dict[str, int], after: dict[str, int], pids: set[int], status: int) -> dict[str, Any]:
    """Did the kernel OOM killer end the run? From the counters' change, then the kernel log."""
    verdict: dict[str, Any] = {"killed": None, "detail": "the machine exposes no cgroup oom_kill counter"}
    for path, n in after.items():
        if path in before:
            delta = n - before[path]
            verdict = {"killed": delta > 0, "detail": f"{path}: oom_kill {before[path]} → {n} during the run"}
            if delta > 0:
                return verdict
    if status == 128 + signal.SIGKILL:
        line = _dmesg_oom_line(pids)
        if line:
            return {"killed": True, "detail": f"kernel log: {line}"}
    return verdict


def _dmesg_oom_line(pids: set[int]) -> str | None:
    try:
        cp = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=3, errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None
    for line in reversed(cp.stdout.splitlines()[-5000:]):
        m = re.search(r"(?:Out of memory|Memory cgroup out of memory): Killed process (\d+)", line)
        if m and int(m.group(1)) in pids:
            return line.strip()[:300]
    return None


# --------------------------------------------------------------------------------------------------
# stopping and signals
# --------------------------------------------------------------------------------------------------

def stop_tree(proc: subprocess.Popen[bytes], grace: float) -> str:
    """SIGTERM to the group (and strays of the tree), wait ``grace`` seconds, then SIGKILL. Returns the signal that ended it."""
    from .stacks import tree

    strays = tree(proc.pid)
    _signal_group(proc.pid, signal.SIGTERM, strays)
    try:
        proc.wait(timeout=grace)
        return "SIGTERM"
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc.pid, signal.SIGKILL, tree(proc.pid) or strays)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return "SIGKILL"


def _signal_group(pgid: int, sig: int, procs: list[psutil.Process]) -> None:
    import psutil

    signal_group(pgid, sig)
    for p in procs:  # members that left the group (setsid) are still part of the run
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


class _Forwarder:
    """Forward the signals a user sends to `faildiag run` to the child's process group."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

    def __init__(self) -> None:
        self.pgid: int | None = None  # set once the child started; signals before that wait for it
        self.old: dict[int, Any] = {}
        self.received: list[int] = []

    def attach(self, pgid: int) -> None:
        self.pgid = pgid
        for signum in self.received:
            self._send(signum)

    def __enter__(self) -> _Forwarder:
        if threading.current_thread() is threading.main_thread():
            for s in self.SIGNALS:
                try:
                    self.old[s] = signal.signal(s, self._forward)
                except (OSError, ValueError):
                    pass
        return self

    def _forward(self, signum: int, frame: Any) -> None:
        self.received.append(signum)
        if self.pgid is not None:
            self._send(signum)

    def _send(self, signum: int) -> None:
        try:
            os.killpg(self.pgid, signum)  # type: ignore[arg-type]
        except OSError:
            pass

    def __exit__(self, *exc: object) -> None:
        for s, h in self.old.items():
            try:
                signal.signal(s, h)
            except (OSError, ValueError):
                pass


# --------------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------------

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
        return _run_child(opts, env, result, (out_log, err_log))
    finally:
        for log in (out_log, err_log):
            if log is not None:
                log.close()  # already closed after a run; a command that never started leaves empty logs
        if inject is not None:
            shutil.rmtree(inject, ignore_errors=True)


def _run_child(opts: RunOptions, env: dict[str, str], result: RunResult,
               logs: tuple[BoundedLog, BoundedLog]) -> RunResult:
    oom_before = read_oom_kills()
    start_wall = time.time()
    t0 = time.monotonic()
    with _Forwarder() as forwarder:
        try:
            proc = subprocess.Popen(opts.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                    process_group=0, bufsize=0)
        except FileNotFoundError:
            result.exit_status, result.start_error = 127, f"command not found: {opts.command[0]}"
            return result
        except PermissionError:
            result.exit_status, result.start_error = 126, f"permission denied: {opts.command[0]}"
            return result
        except OSError as exc:
            result.exit_status, result.start_error = 126, f"cannot run {opts.command[0]}: {exc.strerror or exc}"
            return result
        forwarder.attach(proc.pid)
        restore_terminal = _hand_terminal_to(proc.pid)
        try:
            return _supervise(proc, opts, result, start_wall, t0, oom_before, logs)
        finally:
            if restore_terminal:
                restore_terminal()


def _hand_terminal_to(pgid: int) -> Callable[[], None] | None:
    """Make the child's group the terminal's foreground group, as a shell does for a job.

    Why: the child runs in its own process group (so a hung tree can be stopped as one); a background
    group that reads the terminal (``input()``, ``pdb``) would be stopped by SIGTTIN. With the terminal
    handed over, Ctrl-C reaches the child directly, as without `faildiag run`. Returns the function that
    gives the terminal back, or None when stdin is not our terminal in the foreground.
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or os.tcgetpgrp(fd) != os.getpgrp():
            return None
    except (OSError, ValueError, AttributeError):
        return None

    def set_foreground(group: int) -> bool:
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may not call tcsetpgrp otherwise
        try:
            os.tcsetpgrp(fd, group)
            return True
        except OSError:
            return False
        finally:
            signal.signal(signal.SIGTTOU, old)

    if not set_foreground(pgid):
        return None
    try:
        os.killpg(pgid, signal.SIGCONT)  # in case it touched the terminal before it owned it
    except OSError:
        pass
    ours = os.getpgrp()
    return lambda: set_foreground(ours)


def _supervise(proc: subprocess.Popen[bytes], opts: RunOptions, result: RunResult, start_wall: float, t0: float,
               oom_before: dict[str, int], bounded: tuple[BoundedLog, BoundedLog]) -> RunResult:
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
        result.notes.append(f"the run was stopped with {hang_info.get('stopped_by', 'SIGTERM')} after the hang was detected")
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


_LOG_DIR_ARG = re.compile(r"^--log[-_]dir(?:=(?P<v>.+))?$")
_LOG_DIR_PRINTED = re.compile(rb"log directory set to: (?P<v>\S+)")
_ERROR_FILE_PRINTED = re.compile(rb"error_file\s*:\s*(?P<v>/\S+)")


def gather_paths(opts: RunOptions, since: float, logs: Path) -> list[str]:
    """Evidence the launchers left outside our folder: torchrun's log dir, error files, --collect folders,
    Ascend plog files written during the run, NCCL flight-recorder dumps."""
    found: list[str] = []

    def add(p: str | Path) -> None:
        s = str(p)
        if s not in found and os.path.exists(s):
            found.append(s)

    launcher_dirs: list[str] = []
    args = opts.command
    script = next((i for i, a in enumerate(args) if a.endswith(".py") and i > 0), len(args))
    for i, a in enumerate(args[:script]):  # the launcher's own options, not the training script's
        m = _LOG_DIR_ARG.match(a)
        if m:
            v = m["v"] or (args[i + 1] if i + 1 < len(args) else None)
            if v:
                launcher_dirs.append(v)
    tail = _read_tail(logs / "stderr.log") + _read_tail(logs / "stdout.log")
    for m in _LOG_DIR_PRINTED.finditer(tail):
        launcher_dirs.append(m["v"].decode(errors="replace"))
    ranks_dest = opts.out / "ranks"
    for d in launcher_dirs:
        if not copy_rank_logs(Path(d), ranks_dest):
            add(d)  # not torchelastic's layout: let the engine search it as it is
    if ranks_dest.is_dir():
        add(ranks_dest)
    for m in _ERROR_FILE_PRINTED.finditer(tail):
        add(m["v"].decode(errors="replace"))
    for c in opts.collect:
        add(c)
    elastic = opts.out / "elastic"
    if elastic.is_dir() and any(elastic.iterdir()):
        add(elastic)
    nccl = opts.out / "nccl"
    if nccl.is_dir() and any(nccl.iterdir()):
        add(nccl)
    plog_root = os.environ.get("ASCEND_PROCESS_LOG_PATH") or os.path.expanduser("~/ascend/log")
    for p in _recent_files(Path(plog_root), since, limit=200):
        add(p)
    return found


_ELASTIC_RANK_FILE = re.compile(r"attempt_(?P<attempt>\d+)/(?P<rank>\d+)/(?P<name>stdout\.log|stderr\.log|error\.json)$")
RANK_LOG_BYTES = 4 << 20


def copy_rank_logs(log_dir: Path, dest: Path) -> bool:
    """Copy torchelastic's per-rank files (``<log-dir>/<run>/attempt_N/<local rank>/stderr.log``) into
    ``dest`` with each line prefixed ``[rankN]:``, so the engine can tell ranks apart and order them,
    and the snapshot keeps them after the launcher's folder is cleaned. Each copy keeps the first and
    last ``RANK_LOG_BYTES``. The rank is the local rank: one node's view. Returns whether any was found."""
    found = False
    walked = 0
    for dirpath, _dirs, files in os.walk(log_dir):
        for fn in files:
            walked += 1
            if walked > MAX_FILES_WALKED:
                return found
            src = Path(dirpath, fn)
            m = _ELASTIC_RANK_FILE.search(src.as_posix())
            if not m:
                continue
            found = True
            stem = f"attempt{m['attempt']}-rank{m['rank']}"
            try:
                safe_mkdir(dest.parent, dest.name)
                if m["name"] == "error.json":
                    with open(src, "rb") as f, open_output_file(dest / f"{stem}.error.json", "wb") as out:
                        shutil.copyfileobj(f, out)
                else:
                    _copy_prefixed(src, dest / f"{stem}.{m['name']}", f"[rank{m['rank']}]:".encode())
            except OSError:
                continue
    return found


def _copy_prefixed(src: Path, dst: Path, prefix: bytes) -> None:
    size = src.stat().st_size
    with open(src, "rb") as f, open_output_file(dst, "wb") as out:
        head = f.read(RANK_LOG_BYTES)
        parts = [head]
        if size > 2 * RANK_LOG_BYTES:
            f.seek(size - RANK_LOG_BYTES)
            parts.append(f"\n[faildiag: {size - 2 * RANK_LOG_BYTES} bytes omitted here]\n".encode())
            parts.append(f.read())
        elif size > RANK_LOG_BYTES:
            parts.append(f.read())
        for line in b"".join(parts).splitlines(keepends=True):
            out.write(line if line.startswith(b"[rank") else prefix + line)  # already attributed


def _read_tail(path: Path, n: int = 256 << 10) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - n))
            head = b""
            if f.tell() > 0:
                with open(path, "rb") as g:
                    head = g.read(n)
            return head + f.read()
    except OSError:
        return b""


def _recent_files(root: Path, since: float, limit: int) -> list[Path]:
    """Log files under ``root`` written during the run (plog folders accumulate old runs' logs)."""
    out: list[Path] = []
    if not root.is_dir():
        return out
    seen = 0
    for dirpath, _dirs, files in os.walk(root):
        for fn in files:
            seen += 1
            if seen > MAX_FILES_WALKED * 4:  # years of old runs' logs: stop looking
                return out
            p = Path(dirpath, fn)
            try:
                if p.suffix == ".log" and p.stat().st_mtime >= since - 1:
                    out.append(p)
            except OSError:
                continue
            if len(out) >= limit:
                return out
    return out


def warm_imports() -> None:
    """Import, while the command runs, what the end of the run needs (redaction for run.json): the time
    between the command's exit and ours is latency the user sees."""

    def load() -> None:
        try:
            from .. import redact  # noqa: F401
        except ImportError:  # pragma: no cover
            pass

    threading.Thread(target=load, name="faildiag-warm", daemon=True).start()


def command_text(command: Sequence[str]) -> str:
    return shlex.join(command)


# --------------------------------------------------------------------------------------------------
# environment lock (optional module) and the diagnosis
# --------------------------------------------------------------------------------------------------

_LOCK_SCRIPT = "import json, sys\nfrom pytest_faildiag.capture.envlock import build_lock\njson.dump(build_lock(), sys.stdout, default=str)\n"


class LockBuilder(threading.Thread):
    """Build the environment lock while the command runs, in a subprocess at the lowest CPU priority.

    Why a niced subprocess: the lock costs ~0.2 s of CPU (package metadata, git, probes); in a thread of
    ours it would compete with the user's job on a busy machine and hold our GIL. Niced, it uses a free
    core when there is one and otherwise waits. A run that ends before the lock is done waits at most
    ``result(timeout)`` for it, then goes on without one (noted)."""

    def __init__(self, out: Path | None = None, cwd: str | None = None) -> None:
        super().__init__(name="faildiag-lock", daemon=True)
        self.cwd = cwd or os.getcwd()
        self.out = out
        self.lock: dict[str, Any] | None = None
        self.redacted: dict[str, Any] | None = None
        self.note: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.fingerprint = ""
        self.reused = False

    def begin(self) -> None:
        """Start building, unless the last green run's lock still describes this environment (same
        interpreter, same package folders, same git commit, same environment variables): then that lock
        is this run's too, and a run repeated in the same folder pays nothing for it."""
        self.fingerprint = env_fingerprint(self.cwd)
        if self.out is not None:
            green = read_last_green(self.out)
            try:
                saved = (self.out / FINGERPRINT).read_text(encoding="utf-8").strip()
            except OSError:
                saved = ""
            if green is not None and saved == self.fingerprint:
                self.lock = self.redacted = green
                self.reused = True
                return
        self.start()

    def save_fingerprint(self) -> None:
        """After a passing run's lock was written: remember which environment it describes."""
        if self.out is not None and self.fingerprint and not self.reused:
            try:
                safe_atomic_write(self.out, FINGERPRINT, self.fingerprint + "\n")
            except OSError:
                pass

    def run(self) -> None:
        import importlib.util

        if importlib.util.find_spec("pytest_faildiag.capture.envlock") is None:
            self.note = "the environment lock module is not available"
            return
        cmd = [sys.executable, "-c", _LOCK_SCRIPT]
        nice = shutil.which("nice")
        if nice:
            cmd = [nice, "-n", "19", *cmd]
        env = dict(os.environ)
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                         cwd=self.cwd, env=env)
            out, _ = self.proc.communicate()
            lock = json.loads(out) if out else None
        except (OSError, ValueError) as exc:
            self.note = f"environment lock failed: {exc}"
            return
        if not isinstance(lock, dict):
            self.note = "environment lock failed: no lock was produced"
            return
        from ..redact import redact_obj

        self.lock, self.redacted = lock, redact_obj(lock)

    def cancel(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass

    def result(self, timeout: float = 1.0) -> dict[str, Any] | None:
        """The lock; when the niced build has not finished ``timeout`` s after the run, the job no longer
        needs the CPU: build it here at normal priority instead (an unprivileged process cannot un-nice)."""
        if self.reused or not self.ident:
            return self.lock
        self.join(timeout)
        if not self.is_alive():
            return self.lock
        self.cancel()
        try:
            from ..redact import redact_obj
            from .envlock import build_lock

            lock = build_lock(cwd=self.cwd)
            self.lock, self.redacted = lock, redact_obj(lock)
        except Exception as exc:  # never raises by contract; if it does, go on without a lock
            self.note = f"environment lock failed: {type(exc).__name__}: {exc}"
        return self.lock


LAST_GREEN = LAST_GREEN_LOCK
FINGERPRINT = ".faildiag/last-green.fingerprint"
_VOLATILE_ENV = {"_", "OLDPWD", "PWD", "SHLVL", "TERM_SESSION_ID", "WINDOWID", "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY"}


def env_fingerprint(cwd: str) -> str:
    """A cheap digest of what the environment lock depends on (a few dozen stat calls, no imports):
    the interpreter, the modification times of the import path's folders (an install or removal
    changes them), the git commit of ``cwd``, and the environment variables."""
    import hashlib

    h = hashlib.sha256()
    h.update(f"{sys.executable}|{sys.version}|{cwd}".encode())
    for entry in sys.path:
        try:
            h.update(f"|{entry}:{os.stat(entry or '.').st_mtime_ns}".encode())
        except OSError:
            h.update(f"|{entry}:-".encode())
    git = Path(cwd)
    for folder in (git, *git.parents):
        head = folder / ".git" / "HEAD"
        if head.is_file():
            try:
                ref = head.read_text().strip()
                h.update(ref.encode())
                if ref.startswith("ref: "):
                    h.update((folder / ".git" / ref[5:]).read_bytes())
                h.update(str((folder / ".git" / "index").stat().st_mtime_ns).encode())
            except OSError:
                pass
            break
    for k in sorted(os.environ):
        if k not in _VOLATILE_ENV:
            h.update(f"|{k}={os.environ[k]}".encode())
    return h.hexdigest()


def write_run_files(result: RunResult, out: Path, lock: dict[str, Any] | None, *, redacted: bool = False) -> None:
    """``run.json`` always; ``last-green.lock.json`` after a passing run (the baseline for the next failure).

    Written without importing the engine: a passing run should not pay for loading the rules."""
    from ..redact import redact_obj

    safe_atomic_write(out, "run.json", _dump(redact_obj(result.to_json())))
    if not result.failed and lock:
        write_last_green(out, _dump(lock if redacted else redact_obj(lock)))


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def diagnose_result(result: RunResult, opts: RunOptions, lock: dict[str, Any] | None = None):
    """Turn a failed or hung run into a Diagnosis (engine imported here, only when needed)."""
    from ..engine import diagnose
    from ..model import Evidence
    from ..parse.logread import InputError

    texts: dict[str, str] = {}
    if result.hung:
        texts["watchdog.txt"] = result.hang_detail + "\n"
    texts.update(result.stacks)
    logs = [str(opts.out / "logs" / n) for n in ("stdout.log", "stderr.log")]
    extra: list[Evidence] = []
    context: dict[str, Any] = {"timeline": result.timeline}
    if result.oom is not None:
        context["oom_killer"] = result.oom
        if result.oom.get("killed"):
            extra.append(Evidence("direct", "oom killer", result.oom["detail"]))
    green = read_last_green(opts.out)
    if green:
        context["last_green_lock"] = green
    context["extra_evidence"] = extra
    kwargs = dict(texts=texts, exit_code=None if result.hung else result.exit_status,
                  command=command_text(result.command), lock=lock, context=context, probe_machine=True,
                  cwd=os.getcwd())
    try:
        diag = diagnose([*logs, *result.collected], **kwargs)
    except InputError:  # a collected path was unusable (binary, unreadable): our own logs still are
        diag = diagnose(logs, **kwargs)
    if result.hung:
        _name_every_rank(diag)
        diag.profile.type = "hang"
        diag.profile.exit_code = result.exit_status
        stopped = next((n for n in result.notes if n.startswith("the run was stopped with")), "")
        diag.profile.signal = "SIGKILL" if "SIGKILL" in stopped else "SIGTERM"
    diag.notes.extend(result.notes)
    return diag


def _name_every_rank(diag) -> None:
    """A hang's top cause names where one rank waits; add where each other rank was (the odd one out is the
    usual culprit)."""
    from ..model import Evidence

    if not diag.root_causes:
        return
    top = diag.root_causes[0]
    have = {e.excerpt for e in top.evidence}
    for st in (diag.extra.get("stuck") or [])[:16]:
        if st.get("rank") is not None and st["detail"] not in have:
            top.evidence.append(Evidence("direct", st["source"], st["detail"], st.get("line")))
            have.add(st["detail"])


def finish_run(result: RunResult, opts: RunOptions, lock: dict[str, Any] | None, *, diagnose_failure: bool = True,
               redacted_lock: dict[str, Any] | None = None):
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
