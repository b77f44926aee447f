"""Run code nobody here wrote (archived agent tests, a foreign snapshot's command) with bounded reach.

Why a module of its own: retort ground-truthing reruns tests that AI agents wrote, and fix mode may rerun a
command recorded on another machine. Run with the operator's environment, such code read ``GITHUB_TOKEN``,
``AWS_SECRET_ACCESS_KEY`` and ``HF_TOKEN`` and could call home. :func:`run_untrusted` is the one way this project
starts such code, and its result says which protections held, so a report can state it instead of implying it.

What it does, and the name each protection has in :attr:`SandboxResult.held`:

- ``env allow-list``: the child's environment is built from an allow-list (``PATH``, ``LANG``/``LC_*``, ``TZ``,
  ``TERM``, ``PYTHONHASHSEED``), the names the caller asks to keep, and the values the caller sets. Never a
  deny-list: a secret under a name nobody thought of stays out as well.
- ``throw-away HOME and TMPDIR``: fresh private folders from :func:`tempfile.mkdtemp`, removed afterwards, so
  ``~/.netrc``, ``~/.npmrc``, ``~/.aws`` are not where the child looks, and what it writes to ``~`` vanishes.
- ``throw-away working copy``: the child works in a copy (made here with ``copy_cwd=True``, or declared by a
  caller that copied already with ``cwd_is_copy=True``).
- ``no network (netns)``: the child starts in a new, empty network namespace through util-linux ``unshare``
  (unprivileged, via a user namespace) when the kernel allows it; a probe decides on every call. Inside, the
  launcher lists the interfaces it sees, and only "loopback alone" counts as held. ``network=True`` skips this.
- ``CPU-time limit``, ``memory limit`` (``RLIMIT_DATA``: address-space limits break the JVM, Go and V8, which
  reserve far more than they use), ``file-size limit``, ``process limit`` (``RLIMIT_NPROC``; the kernel exempts
  root), ``no core dumps``: set by a small launcher in the child before the program starts, and reported back
  by that launcher over a private pipe, so "held" is what the child measured, not what we asked for.
- ``timeout``: a wall-clock limit.
- ``process group killed``: the child leads its own session; when it ends or times out, its group, its
  descendants and any process carrying the run's marker variable get SIGTERM, then SIGKILL, and are looked for
  again with psutil; held when none is left.
- ``host files out of reach``: never held. There is no filesystem isolation; the child can read and write the
  operator's files by absolute path. Listed so that no report implies otherwise.

Why a launcher process instead of ``preexec_fn``: ``preexec_fn`` runs Python between fork and exec and can
deadlock when other threads exist (retort diagnoses runs on a thread pool); the launcher is a fresh
single-threaded ``python -I -S`` that sets the limits, reports them, restores default signal handling and
``execve``s the program with exactly the environment built here.

Bad input never raises: a missing program or folder gives a result with ``returncode`` 127 and ``error`` set.
Standard library and psutil only.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from .capture.proc import signal_group

__all__ = ["PROTECTIONS", "SandboxResult", "netns_prefix", "run_untrusted", "sandbox_env"]

ENV = "env allow-list"
HOME = "throw-away HOME and TMPDIR"
COPY = "throw-away working copy"
NET = "no network (netns)"
CPU = "CPU-time limit"
MEMORY = "memory limit"
FSIZE = "file-size limit"
NPROC = "process limit"
CORE = "no core dumps"
TIMEOUT = "timeout"
KILLED = "process group killed"
HOST_FILES = "host files out of reach"
PROTECTIONS = (ENV, HOME, COPY, NET, CPU, MEMORY, FSIZE, NPROC, CORE, TIMEOUT, KILLED, HOST_FILES)

DEFAULT_MEMORY = 4 << 30
DEFAULT_FILE_SIZE = 1 << 30
DEFAULT_PROCESSES = 512
DEFAULT_OUTPUT = 8 << 20

# Names copied from our environment when set: none of them can hold a credential.
ALLOWED_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONHASHSEED")
ALLOWED_PREFIXES = ("LC_",)
MARKER = "FAILDIAG_SANDBOX_ID"

_RLIMIT_NAMES = {
    CPU: "RLIMIT_CPU",
    MEMORY: "RLIMIT_DATA",
    FSIZE: "RLIMIT_FSIZE",
    NPROC: "RLIMIT_NPROC",
    CORE: "RLIMIT_CORE",
}
_NETNS_FLAGS = (("--net", "--map-current-user"), ("--net", "--map-root-user"))

# The launcher: argv = [plan-json, status-fd, program argv...]. It runs before any untrusted code, reports
# what it applied on the status pipe, closes it, and only then executes the program.
_LAUNCHER = r"""
import json, os, resource, signal, socket, sys
plan, fd, argv = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
status = {"rlimits": {}, "interfaces": None}
for name, (soft, hard) in plan["rlimits"].items():
    res = getattr(resource, name, None)
    if res is None:
        status["rlimits"][name] = "not available on this platform"
        continue
    try:
        cur = resource.getrlimit(res)[1]
        if cur != resource.RLIM_INFINITY:
            hard = min(hard, cur)
            soft = min(soft, hard)
        resource.setrlimit(res, (soft, hard))
        status["rlimits"][name] = "" if resource.getrlimit(res) == (soft, hard) else "not applied"
    except (OSError, ValueError) as exc:
        status["rlimits"][name] = str(exc)
try:
    status["interfaces"] = sorted(n for _, n in socket.if_nameindex())
except OSError as exc:
    status["interfaces_error"] = str(exc)
try:
    status["netns"] = os.readlink("/proc/self/ns/net") if plan["isolated"] else None
except OSError:
    status["netns"] = None
data = json.dumps(status).encode()
while data:
    data = data[os.write(fd, data):]
os.close(fd)
for sig in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
    if hasattr(signal, sig):
        signal.signal(getattr(signal, sig), signal.SIG_DFL)
try:
    os.execve(plan["path"], argv, plan["env"])
except OSError as exc:
    sys.stderr.write("faildiag sandbox: cannot run %s: %s\n" % (argv[0], exc))
    os._exit(127)
"""


@dataclass
class SandboxResult:
    """What one sandboxed run did, and which protections held.

    ``returncode`` is None when the run was killed at the timeout (``timed_out``), negative for a signal, 127
    when the program or folder was not found (``error`` says which). ``output`` is stdout and stderr merged,
    its last ``output_limit`` bytes (``output_truncated`` when more came). ``held`` maps every name in
    :data:`PROTECTIONS` to whether it held; ``notes`` says why for each that did not. ``leftover`` lists
    processes of the run still alive after the kill (empty when ``process group killed`` held).
    """

    argv: list[str]
    returncode: int | None
    output: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    output_truncated: bool = False
    error: str = ""
    held: dict[str, bool] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    leftover: list[int] = field(default_factory=list)

    @property
    def protections_held(self) -> list[str]:
        return [name for name in PROTECTIONS if self.held.get(name)]

    @property
    def protections_missing(self) -> list[str]:
        """``"name: why"`` for each protection that did not hold."""
        return [f"{name}: {self.notes.get(name, 'not applied')}" for name in PROTECTIONS if not self.held.get(name)]

    def summary(self) -> str:
        """One line for a report: what held, what did not and why."""
        missing = "; ".join(self.protections_missing) or "none"
        return f"held: {', '.join(self.protections_held) or 'none'}; not held: {missing}"


@dataclass
class _Plan:
    """Everything decided before the child starts (kept together so each step stays a small function)."""

    argv: list[str]
    path: str
    cwd: Path
    env: dict[str, str]
    token: str
    prefix: list[str]
    rlimits: dict[str, tuple[int, int]]
    held: dict[str, bool]
    notes: dict[str, str]


def sandbox_env(
    home: Path, tmp: Path, env: Mapping[str, str | None] | None = None, keep_env: Sequence[str] = ()
) -> dict[str, str]:
    """The child's whole environment: allow-listed names, ``keep_env`` names, then ``env`` (None unsets).

    ``HOME``/``TMPDIR``/``TMP``/``TEMP`` point at the throw-away folders; a caller's ``env`` may override them
    (its choice, stated in the call).
    """
    keep = set(ALLOWED_ENV) | set(keep_env)
    out = {k: v for k, v in os.environ.items() if k in keep or k.startswith(ALLOWED_PREFIXES)}
    out.setdefault("PATH", os.defpath)
    out.update({"HOME": str(home), "TMPDIR": str(tmp), "TMP": str(tmp), "TEMP": str(tmp)})
    for key, value in (env or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = str(value)
    return out


def netns_prefix() -> tuple[list[str] | None, str]:
    """The ``unshare`` command line that gives a child an empty network namespace, or None and why not.

    Probes each flag set with a trivial program (milliseconds): kernels, containers (seccomp) and
    ``kernel.unprivileged_userns_clone=0`` differ, and only trying tells. ``--map-current-user`` first, so the
    child keeps its own uid (``--map-root-user`` makes it look like root, which changes permission tests).
    """
    exe = shutil.which("unshare")
    if exe is None:
        return None, "unshare (util-linux) is not installed"
    true = shutil.which("true")
    probe = [true] if true else [sys.executable, "-I", "-S", "-c", ""]
    last = ""
    for flags in _NETNS_FLAGS:
        try:
            done = subprocess.run(
                [exe, *flags, "--", *probe],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=10,
                env={"PATH": os.environ.get("PATH", os.defpath)},
            )
        except (OSError, subprocess.SubprocessError) as exc:
            last = f"{type(exc).__name__}: {exc}"
            continue
        if done.returncode == 0:
            return [exe, *flags, "--"], ""
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        last = lines[-1] if lines else f"exit status {done.returncode}"
    return None, f"the kernel refused a new network namespace ({last})"


def run_untrusted(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    timeout_s: float,
    env: Mapping[str, str | None] | None = None,
    keep_env: Sequence[str] = (),
    network: bool = False,
    cpu_s: float | None = None,
    memory_bytes: int = DEFAULT_MEMORY,
    file_bytes: int = DEFAULT_FILE_SIZE,
    max_processes: int = DEFAULT_PROCESSES,
    copy_cwd: bool = False,
    cwd_is_copy: bool = False,
    scratch_dir: Path | str | None = None,
    output_limit: int = DEFAULT_OUTPUT,
    term_grace_s: float = 2.0,
) -> SandboxResult:
    """Run ``argv`` in ``cwd`` with the protections in the module docstring; never raises on bad input.

    ``env``: variables the caller sets (None removes one); ``keep_env``: names copied from our environment
    (e.g. ``VIRTUAL_ENV``, ``JAVA_HOME``). ``network=True`` lets the child reach the network (a dependency
    install). ``cpu_s`` defaults to twice the timeout plus 10 s (CPU seconds are per process, threads add up).
    ``max_processes`` is a budget of processes/threads for the run. ``copy_cwd`` runs in a throw-away copy of
    ``cwd``; ``cwd_is_copy`` declares that ``cwd`` is one already. HOME, TMPDIR and the copy live under a
    ``mkdtemp`` folder in ``scratch_dir`` (default: the system's temp folder), removed before returning.
    """
    argv = [str(a) for a in argv]
    started = time.time()
    if not argv:
        return SandboxResult(argv, 127, error="no command given")
    if not Path(cwd).is_dir():
        return _not_started(argv, f"working folder not found: {cwd}")
    try:
        scratch = Path(tempfile.mkdtemp(prefix="faildiag-sandbox-", dir=scratch_dir))
    except OSError as exc:
        return _not_started(argv, f"cannot create a scratch folder: {exc}")
    try:
        plan = _prepare(
            argv,
            Path(cwd),
            scratch,
            env=env,
            keep_env=keep_env,
            network=network,
            limits=(cpu_s if cpu_s is not None else 2 * timeout_s + 10, memory_bytes, file_bytes, max_processes),
            copy_cwd=copy_cwd,
            cwd_is_copy=cwd_is_copy,
        )
        if isinstance(plan, SandboxResult):
            return plan
        return _execute(plan, timeout_s, output_limit, term_grace_s, started)
    finally:
        _remove_tree(scratch)


def _not_started(argv: list[str], why: str) -> SandboxResult:
    return SandboxResult(argv, 127, output=f"faildiag sandbox: {why}\n", error=why)


def _prepare(
    argv: list[str],
    cwd: Path,
    scratch: Path,
    *,
    env: Mapping[str, str | None] | None,
    keep_env: Sequence[str],
    network: bool,
    limits: tuple[float, int, int, int],
    copy_cwd: bool,
    cwd_is_copy: bool,
) -> _Plan | SandboxResult:
    """Folders, environment, program path, network wrapper and limits: everything decided before the start."""
    home, tmp = scratch / "home", scratch / "tmp"
    home.mkdir(mode=0o700)
    tmp.mkdir(mode=0o700)
    held: dict[str, bool] = {ENV: True, HOME: True, COPY: copy_cwd or cwd_is_copy, TIMEOUT: True}
    notes: dict[str, str] = {
        HOST_FILES: "no filesystem isolation: the child can read and write the operator's files by absolute path"
    }
    if not held[COPY]:
        notes[COPY] = "ran in the caller's folder, not a copy"
    if copy_cwd:
        try:
            cwd = _copy_tree(cwd, scratch / "work")
        except (OSError, shutil.Error) as exc:
            return _not_started(argv, f"could not copy the working folder: {exc}")
    child_env = sandbox_env(home, tmp, env, keep_env)
    token = secrets.token_hex(16)
    child_env[MARKER] = token
    if child_env.get("HOME") != str(home):
        held[HOME] = False
        notes[HOME] = "the caller set HOME itself"
    path = _resolve(argv[0], cwd, child_env["PATH"])
    if path is None:
        return _not_started(argv, f"command not found: {argv[0]}")
    prefix: list[str] = []
    if network:
        notes[NET] = "network allowed by the caller"
    else:
        found, why = netns_prefix()
        prefix = found or []
        if found is None:
            notes[NET] = why
    rlimits = _rlimits(*limits, in_userns=bool(prefix))
    return _Plan(argv, path, cwd, child_env, token, prefix, rlimits, held, notes)


def _copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True, ignore_dangling_symlinks=True)
    return dest


def _resolve(program: str, cwd: Path, path: str) -> str | None:
    """The program's absolute path as the child would find it (relative names with a slash: from ``cwd``)."""
    if "/" in program:
        candidate = Path(program) if Path(program).is_absolute() else cwd / program
        return str(candidate) if os.access(candidate, os.X_OK) and candidate.is_file() else None
    return shutil.which(program, path=path)


def _rlimits(
    cpu_s: float, memory: int, file_bytes: int, processes: int, *, in_userns: bool
) -> dict[str, tuple[int, int]]:
    """Soft/hard pairs per ``RLIMIT_*`` name; hard equals soft so the child cannot raise them back.

    CPU gets 5 s between soft (SIGXCPU, catchable) and hard (SIGKILL). ``RLIMIT_NPROC`` counts every task of
    the user: in a fresh user namespace only the run's own tasks count, elsewhere the user's current tasks are
    added to the budget (the limit would otherwise stop the run before it starts).
    """
    cpu = max(1, int(cpu_s + 0.999))
    nproc = processes + (0 if in_userns else _user_tasks())
    return {
        "RLIMIT_CPU": (cpu, cpu + 5),
        "RLIMIT_DATA": (memory, memory),
        "RLIMIT_FSIZE": (file_bytes, file_bytes),
        "RLIMIT_NPROC": (nproc, nproc),
        "RLIMIT_CORE": (0, 0),
    }


def _user_tasks() -> int:
    uid = os.getuid()
    total = 0
    for proc in psutil.process_iter(["uids", "num_threads"]):
        uids, threads = proc.info.get("uids"), proc.info.get("num_threads")
        if uids is not None and uids.real == uid:
            total += threads or 1
    return total


def _root_in_initial_namespace() -> bool:
    """The kernel does not enforce RLIMIT_NPROC for root of the initial user namespace."""
    if os.getuid() != 0:
        return False
    try:
        first = Path("/proc/self/uid_map").read_text().split()
    except OSError:
        return True
    return first[:3] == ["0", "0", "4294967295"]


def _execute(plan: _Plan, timeout_s: float, output_limit: int, grace: float, started: float) -> SandboxResult:
    """Start the launcher, collect output and the launcher's status until exit or timeout, then clean up."""
    read_fd, write_fd = os.pipe()
    launch_plan = {"rlimits": plan.rlimits, "env": plan.env, "path": plan.path, "isolated": bool(plan.prefix)}
    cmd = [
        *plan.prefix,
        sys.executable,
        "-I",
        "-S",
        "-c",
        _LAUNCHER,
        json.dumps(launch_plan),
        str(write_fd),
        *plan.argv,
    ]
    begin = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=plan.cwd,
            env=plan.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(write_fd,),
        )
    except OSError as exc:
        os.close(read_fd)
        return _not_started(plan.argv, f"{type(exc).__name__}: {exc}")
    finally:
        os.close(write_fd)
    collected = _collect(proc, read_fd, begin + timeout_s, output_limit)
    duration = time.monotonic() - begin
    status = _parse_status(collected.status)
    netns = status.get("netns") if plan.prefix and isinstance(status.get("netns"), str) else None
    leftover = _end_run(proc, _RunId(plan.token, proc.pid, started, netns), grace)
    tail = _drain(proc, output_limit, collected.output)
    result = SandboxResult(
        plan.argv,
        None if collected.timed_out else proc.returncode,
        output=tail.decode("utf-8", "replace"),
        duration_s=round(duration, 3),
        timed_out=collected.timed_out,
        output_truncated=collected.truncated,
        held=dict(plan.held),
        notes=dict(plan.notes),
        leftover=leftover,
    )
    _judge_launcher(result, status, plan)
    result.held[KILLED] = not leftover
    if leftover:
        result.notes[KILLED] = f"{len(leftover)} process(es) of the run could not be killed"
    for name in PROTECTIONS:
        result.held.setdefault(name, False)
    return result


@dataclass
class _Collected:
    output: bytearray
    status: bytes
    timed_out: bool
    truncated: bool


def _collect(proc: subprocess.Popen, status_fd: int, deadline: float, limit: int) -> _Collected:
    """Read output (keeping the last ``limit`` bytes) and the launcher status until exit or the deadline."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(status_fd, selectors.EVENT_READ, "status")
    out, status, truncated, timed_out = bytearray(), bytearray(), False, False
    try:
        while True:
            if proc.poll() is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            if not sel.get_map():  # both pipes closed: only the exit is left to wait for
                _wait_exit(proc, min(remaining, 0.25))
                continue
            for key, _ in sel.select(min(remaining, 0.25)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.data == "status":
                    status += chunk
                else:
                    out += chunk
                    if len(out) > 2 * limit:
                        del out[:-limit]
                        truncated = True
        status += _read_available(status_fd)
    finally:
        sel.close()
        os.close(status_fd)
    if len(out) > limit:
        del out[:-limit]
        truncated = True
    return _Collected(out, bytes(status), timed_out, truncated)


def _read_available(fd: int) -> bytes:
    """What is left in the status pipe once the child is gone (its writer is closed by then: no blocking)."""
    data = b""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while sel.select(0.05):
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        sel.close()
    return data


def _drain(proc: subprocess.Popen, limit: int, out: bytearray, wait_s: float = 2.0) -> bytes:
    """Output written just before the end; bounded in time, since an escaped process may hold the pipe."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    end = time.monotonic() + wait_s
    try:
        while (left := end - time.monotonic()) > 0 and sel.select(left):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
    finally:
        sel.close()
        proc.stdout.close()
    return bytes(out[-limit:])


def _parse_status(raw: bytes) -> dict:
    try:
        status = json.loads(raw.decode("utf-8", "replace")) if raw else None
    except ValueError:
        return {}
    return status if isinstance(status, dict) else {}


def _judge_launcher(result: SandboxResult, status: dict, plan: _Plan) -> None:
    """Turn the launcher's own report into held/not held for the limits and the network."""
    if not status:
        why = "the sandbox launcher reported nothing (it did not start)"
        for name in (*_RLIMIT_NAMES, NET):
            result.held[name] = False
            result.notes.setdefault(name, why)
        return
    applied = status.get("rlimits") or {}
    for name, rlimit in _RLIMIT_NAMES.items():
        problem = applied.get(rlimit, "not requested")
        result.held[name] = problem == ""
        if problem:
            result.notes[name] = f"{rlimit}: {problem}"
    if result.held.get(NPROC) and _root_in_initial_namespace():
        result.held[NPROC] = False
        result.notes[NPROC] = "RLIMIT_NPROC set but not enforced: the kernel exempts root"
    interfaces = status.get("interfaces")
    if plan.prefix:
        alone = isinstance(interfaces, list) and set(interfaces) <= {"lo"}
        result.held[NET] = alone
        if not alone:
            result.notes[NET] = f"interfaces seen inside: {interfaces or status.get('interfaces_error')}"


@dataclass(frozen=True)
class _RunId:
    """How to recognise the run's processes once they left its tree: marker value, group/session id, start
    time, and the network namespace the launcher reported (only for a fresh one: it cannot be left without
    privileges, so it catches a daemon that cleared its environment and started its own session)."""

    token: str
    group: int
    since: float
    netns: str | None


def _end_run(proc: subprocess.Popen, run: _RunId, grace: float) -> list[int]:
    """SIGTERM then SIGKILL to the run's group, descendants and marked processes; pids still alive after."""
    members = _descendants(proc.pid) + _marked(run)
    _signal_all(proc.pid, members, signal.SIGTERM)
    _wait(proc, members, grace)
    members = _alive(members + _marked(run))
    _signal_all(proc.pid, members, signal.SIGKILL)
    _wait(proc, members, 5.0)
    return [p.pid for p in _alive(members + _marked(run))]


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _marked(run: _RunId) -> list[psutil.Process]:
    """Processes started by the run: in its group or session (even if they left the tree), in its network
    namespace, or carrying its marker variable (even if they started a session of their own)."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["create_time"]):
        try:
            if proc.pid in (me, run.group) or (proc.info.get("create_time") or 0) < run.since - 1:
                continue
            if _belongs(proc, run):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _belongs(proc: psutil.Process, run: _RunId) -> bool:
    if run.group in (os.getpgid(proc.pid), os.getsid(proc.pid)):
        return True
    if run.netns is not None:
        try:
            if os.readlink(f"/proc/{proc.pid}/ns/net") == run.netns:
                return True
        except OSError:
            pass
    return proc.environ().get(MARKER) == run.token


def _signal_all(group: int, members: list[psutil.Process], sig: int) -> None:
    """The group through ``proc.signal_group``; the members one by one. Not ``proc.stop_group``: a sandboxed
    run's members are also found by marker and network namespace after the group is gone, waited for as a
    set (zombies a container's init never reaps included), and the survivors are reported."""
    signal_group(group, sig)
    for proc in members:
        try:
            proc.send_signal(sig)
        except psutil.Error:
            pass


def _wait_exit(proc: subprocess.Popen, timeout: float) -> None:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass


def _wait(proc: subprocess.Popen, members: list[psutil.Process], timeout: float) -> None:
    """Until the child and every member are gone or zombies (psutil.wait_procs would wait out the whole timeout
    on a zombie that is not our child: a container's init may never reap it)."""
    end = time.monotonic() + timeout
    _wait_exit(proc, timeout)
    while _alive(members) and time.monotonic() < end:
        time.sleep(0.05)


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    seen: dict[int, psutil.Process] = {}
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                seen[proc.pid] = proc
        except psutil.Error:
            continue
    return list(seen.values())


def _remove_tree(path: Path) -> None:
    """Remove the scratch folder even where the child made parts read-only (Go's module cache does)."""

    def retry(func, target, _exc) -> None:  # noqa: ANN001 - shutil's onerror signature
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            os.chmod(target, stat.S_IRWXU)
            func(target)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)
