"""Hang handling for ``pytest --faildiag``: dump every thread's stack, record the process tree, fail the test.

How it works, per test phase (setup, call, teardown each get the full ``--faildiag-timeout``):

* On the main thread (always so under plain pytest and pytest-xdist workers) ``SIGALRM`` fires at T; its
  handler reads every thread's stack (with the GIL), records the process tree (psutil) and calls
  ``pytest.fail`` where the test was waiting, so the test fails with the stuck line in its traceback and
  the session goes on. Off the main thread a watchdog thread raises it asynchronously in the test's thread.
* ``faulthandler.dump_traceback_later(T + NATIVE_GRACE, file=<out>/.stacks-<pid>.txt)`` is the fallback:
  its C thread dumps the stacks even when native code holds the GIL (the handler cannot run then, and the
  frames stand still); native code that never returns cannot be interrupted from Python, but its stacks
  are on disk, and the journal lets ``faildiag recover`` name the test once CI kills the run.

When pytest-timeout is active for a test we do not arm our timer; through its ``pytest_timeout_set_timer``
/ ``pytest_timeout_cancel_timer`` hooks we arm only a Python timer thread that writes the stack dump just
before its deadline (never faulthandler: see ``NATIVE_GRACE``), so its timeout failure (or its
``os._exit`` with the thread method) comes with a stack dump file we can read.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from ..fsio import ensure_output_root, open_output_file
from .pytest_journal import annotate_main_thread, stacks_file
from .pytest_warn import warn

HANG_MARK = "faildiag: hang detected"
# where the trace function of a debugger lives (pdb: bdb; PyCharm and VS Code: pydevd, debugpy's copy of it)
DEBUGGER_MODULES = ("bdb", "pdb", "pydevd", "_pydevd_bundle", "_pydevd_frame_eval", "pydevd_frame_evaluator", "debugpy")
# faulthandler's dump runs in its own C thread and walks every thread's frames without the GIL: safe only
# while they do not move. So the Python-level dump (the SIGALRM handler, or a timer thread holding the GIL)
# comes first, at the deadline; faulthandler dumps only if that could not run this long after it (native
# code holding the GIL, whose frames then stand still). Dumping a busy thread's frames from the C thread
# crashed pytest-xdist workers at pytest-timeout deadlines (issue 21).
NATIVE_GRACE = 2.0


class FaildiagHang(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """Raised in the test's thread when it exceeds ``--faildiag-timeout``; pytest reports it as a failure."""

    def __init__(self, msg: str = f"{HANG_MARK}: the test exceeded its faildiag timeout") -> None:
        super().__init__(msg, pytrace=True)


HANG_KEY: pytest.StashKey[dict[str, Any]] = pytest.StashKey()
TIMEOUT_PLUGIN_KEY: pytest.StashKey[float] = pytest.StashKey()


def format_current_stacks(main_frame: Any = None, *, skip_current: bool = False) -> str:
    """All threads' stacks in faulthandler's layout (the engine parses that), innermost first. Holds the GIL
    (``sys._current_frames``): never races a running thread. ``main_frame``: the frame a signal interrupted,
    for the main thread (so the signal handler's own frames are not on top of the stuck line);
    ``skip_current``: leave out the calling thread (a watchdog timer thread is not part of the test)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    me = threading.get_ident()
    main = threading.main_thread().ident
    out = []
    for ident, frame in sys._current_frames().items():
        if ident == main and main_frame is not None:
            frame = main_frame
        if skip_current and ident == me:
            continue
        head = "Current thread" if ident == me else "Thread"
        out.append(f"{head} 0x{ident:016x} [{names.get(ident, '?')}] (most recent call first):")
        for fs in reversed(traceback.extract_stack(frame)):
            out.append(f'  File "{fs.filename}", line {fs.lineno} in {fs.name}')
        out.append("")
    return "\n".join(out)


def process_tree_text() -> str:
    """The test process and its descendants: pid, state, CPU seconds, RSS, command (psutil)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - a declared dependency
        return "psutil is not installed: no process tree\n"
    me = psutil.Process()
    lines = ["pid     ppid    status     cpu_s    rss_mib  command"]
    try:
        procs = [me, *me.children(recursive=True)]
    except psutil.Error as exc:
        return f"process tree unavailable: {exc}\n"
    for p in procs:
        try:
            with p.oneshot():
                cpu = p.cpu_times()
                cmd = " ".join(p.cmdline())[:200] or p.name()
                lines.append(
                    f"{p.pid:<7} {p.ppid():<7} {p.status():<10} {cpu.user + cpu.system:<8.1f} "
                    f"{p.memory_info().rss / 2**20:<8.1f} {cmd}"
                )
        except psutil.Error:
            continue
    return "\n".join(lines) + "\n"


def debugger_holding() -> str | None:
    """The debugger that holds the test, if any (as pytest-timeout checks before it fails a test): a person
    stepping through a test is not a hang. The trace function's module (pdb's is ``bdb.Bdb.trace_dispatch``;
    ``threading.settrace`` covers debuggers that trace every thread), or pydevd/debugpy loaded: they trace
    with a C function or through ``sys.monitoring``, whose module name may say nothing."""
    for trace in (sys.gettrace(), threading.gettrace()):
        module = getattr(trace, "__module__", None) or ""
        if trace is not None and module.split(".")[0] in DEBUGGER_MODULES:
            return module
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None and monitoring.get_tool(monitoring.DEBUGGER_ID):
        return str(monitoring.get_tool(monitoring.DEBUGGER_ID))
    for name in ("pydevd", "debugpy"):
        if name in sys.modules:
            return name
    return None


class StackDumper:
    """One dump file per process, re-armed per test: every thread's stack is written into it, by a Python
    timer thread (``arm_python``: safe at any time) or by faulthandler (``arm``: the fallback for native code
    that holds the GIL, see ``NATIVE_GRACE``).

    The file is created new in the checked output folder (``O_EXCL | O_NOFOLLOW``, after removing whatever
    is at its name) and read back through its own descriptor: a ``.stacks-<pid>.txt`` symlink planted in
    the output folder is replaced, never truncated or written through."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self._file: IO[str] | None = None
        self._dumped_for: str | None = None
        self._timer: threading.Timer | None = None
        self._generation = 0  # a timer that fires after its test was disarmed writes nothing
        self._lock = threading.Lock()
        self.journal: Any = None  # set by the session: deadlines are journaled for `faildiag recover`

    @property
    def dump_path(self) -> Path:
        return stacks_file(self.out_dir, os.getpid())

    def _reset(self, nodeid: str) -> IO[str]:
        if self._file is None:
            ensure_output_root(self.out_dir)
            self._file = open_output_file(self.dump_path, "w+", encoding="utf-8")  # lives for the session
        self._file.seek(0)
        self._file.truncate()
        self._dumped_for = nodeid
        return self._file

    def arm(self, seconds: float, nodeid: str) -> None:
        """faulthandler's C-thread dump after ``seconds``: reaches a process whose GIL native code holds."""
        faulthandler.dump_traceback_later(max(seconds, 0.01), repeat=False, file=self._reset(nodeid), exit=False)

    def arm_python(self, seconds: float, nodeid: str) -> None:
        """A daemon timer thread writes every thread's stack after ``seconds`` (with the GIL: a busy test's
        frames are read safely). Used before pytest-timeout's deadline, whose thread method then ends the
        process: the file is what ``faildiag recover`` reads."""
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._reset(nodeid)
        self._timer = threading.Timer(max(seconds, 0.01), self._dump_python, args=(generation,))
        self._timer.daemon = True
        self._timer.start()

    def _dump_python(self, generation: int) -> None:
        text = format_current_stacks(skip_current=True)
        with self._lock:
            if generation != self._generation or self._file is None:
                return
            try:
                self._file.seek(0)
                self._file.truncate()
                self._file.write(text)
                self._file.flush()
            except (OSError, ValueError):
                pass

    def write(self, nodeid: str, text: str) -> None:
        """Stacks taken another way (after the fact) for ``nodeid``, where ``read`` finds them."""
        with self._lock:
            self._generation += 1
            self._reset(nodeid).write(text)
            self._file.flush()  # type: ignore[union-attr]

    def cancel(self) -> None:
        faulthandler.cancel_dump_traceback_later()
        with self._lock:
            self._generation += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def read(self, nodeid: str) -> str:
        """The stacks faulthandler dumped for ``nodeid`` (empty when none were dumped for it)."""
        if self._file is None or self._dumped_for != nodeid:
            return ""
        try:
            self._file.flush()
            fd = self._file.fileno()
            text = os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", errors="replace")
            return annotate_main_thread(text, threading.main_thread().ident)
        except OSError:
            return ""

    def close(self) -> None:
        try:
            self.cancel()
        except Exception:
            pass
        if self._file is not None:
            self._file.close()
            self._file = None
            try:
                self.dump_path.unlink()
            except OSError:
                pass


class HangWatch:
    """The pytest plugin object that arms and disarms the watchdog around each phase (``--faildiag-timeout``)."""

    def __init__(self, dumper: StackDumper, timeout: float | None) -> None:
        self.dumper = dumper
        self.timeout = timeout  # the session default; ``@pytest.mark.faildiag_timeout(S)`` overrides it per test
        self._item: pytest.Item | None = None
        self._phase = ""
        self._timer: threading.Timer | None = None
        self._prev_handler: Any = None
        self._seconds = 0.0

    # ------------------------------------------------------------------ own timer
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        return (yield from self._guard(item, "setup"))

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        return (yield from self._guard(item, "call"))

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Any:
        return (yield from self._guard(item, "teardown"))

    def _guard(self, item: pytest.Item, phase: str) -> Any:
        armed = False
        seconds = self._seconds_for(item) if TIMEOUT_PLUGIN_KEY not in item.stash else None
        if seconds is not None and not debugger_holding():
            try:
                self._arm(item, phase, seconds)
                armed = True
            except Exception as exc:  # a watchdog that cannot be armed must not fail the test
                warn(f"faildiag: hang watchdog not armed for {item.nodeid}: {exc}")
        try:
            return (yield)
        finally:
            if armed:
                self._disarm()

    def _seconds_for(self, item: pytest.Item) -> float | None:
        marker = item.get_closest_marker("faildiag_timeout")
        if marker is not None:
            raw = marker.args[0] if marker.args else marker.kwargs.get("seconds")
            try:
                value = float(raw)
            except (TypeError, ValueError):
                warn(f"faildiag: {item.nodeid}: faildiag_timeout({raw!r}) is not a number of seconds; ignored")
                return self.timeout
            return value if value > 0 else None
        return self.timeout

    def _arm(self, item: pytest.Item, phase: str, seconds: float) -> None:
        self._item, self._phase, self._seconds = item, phase, seconds
        self.dumper.arm(seconds + NATIVE_GRACE, item.nodeid)  # only if the Python-level handler cannot run
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGALRM"):
            self._prev_handler = signal.signal(signal.SIGALRM, self._on_alarm)
            signal.setitimer(signal.ITIMER_REAL, seconds)
        else:
            target = threading.get_ident()
            self._timer = threading.Timer(seconds, self._fire_async, args=(target,))
            self._timer.daemon = True
            self._timer.start()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        elif self._prev_handler is not None or threading.current_thread() is threading.main_thread():
            if hasattr(signal, "SIGALRM"):
                signal.setitimer(signal.ITIMER_REAL, 0)
                if self._prev_handler is not None:
                    signal.signal(signal.SIGALRM, self._prev_handler)
            self._prev_handler = None
        self.dumper.cancel()
        self._item = None

    def _record(self, main_frame: Any = None) -> str:
        """Keep the hang's evidence on the item: faulthandler's dump when it had to fire (native code held
        the GIL past the grace), else every thread's stack read now with the GIL."""
        item = self._item
        msg = f"{HANG_MARK}: {self._phase} of the test exceeded its faildiag timeout of {self._seconds:g}s"
        if item is None:
            return msg
        stacks = self.dumper.read(item.nodeid)
        if "(most recent call first)" not in stacks:
            stacks = format_current_stacks(main_frame)
        item.stash[HANG_KEY] = {
            "phase": self._phase,
            "seconds": self._seconds,
            "stacks": stacks,
            "processes": process_tree_text(),
            "at": time.time(),
        }
        return msg

    def _on_alarm(self, signum: int, frame: Any) -> None:
        __tracebackhide__ = True  # the failure points at the test's stuck line, not at this handler
        if debugger_holding():  # e.g. breakpoint() in the test: the person at the prompt is not a hang
            return
        msg = self._record(frame)
        pytest.fail(msg, pytrace=True)  # plain ``Failed``: the summary line reads "Failed: faildiag: hang detected ..."

    def _fire_async(self, thread_id: int) -> None:
        import ctypes  # only off the main thread, which plain pytest and xdist workers never are

        if debugger_holding():
            return
        self._record()
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(FaildiagHang))


class PytestTimeoutBridge:
    """Registered when pytest-timeout is installed: it owns the deadline, we only dump the stacks just before
    it. The hooks return None, so pytest-timeout's own implementation still runs. The dump is a Python timer
    thread's (``arm_python``), never faulthandler's: its C thread reading a busy worker's frames while they
    change crashed the worker at the deadline."""

    def __init__(self, dumper: StackDumper) -> None:
        self.dumper = dumper

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> None:
        seconds = getattr(settings, "timeout", None)
        if not seconds or seconds <= 0:
            return None
        item.stash[TIMEOUT_PLUGIN_KEY] = float(seconds)
        if debugger_holding():
            return None  # pytest-timeout does not fail a debugged test: no dump either
        if self.dumper.journal is not None:
            self.dumper.journal.write("deadline", nodeid=item.nodeid, seconds=float(seconds), by="pytest-timeout")
        try:
            self.dumper.arm_python(max(seconds - min(0.5, seconds * 0.1), 0.01), item.nodeid)
        except Exception as exc:
            warn(f"faildiag: stack dump not armed for {item.nodeid}: {exc}")
        return None

    def failed_report(self, item: pytest.Item, call: pytest.CallInfo[None], rep: pytest.TestReport) -> None:
        """Called by the session's ``pytest_runtest_makereport`` wrapper for a failed report, before its
        diagnosis (not a hook wrapper of its own: three more wrapper calls per test cost a passing suite
        more than the journal): a ``Timeout`` raised in the test (the signal method) gets the stacks from
        its traceback (the main thread, where it waited) and the other threads as they are, whatever the
        timer dump holds (on a loaded machine the timer thread runs late, or is cut off mid-write by the
        deadline). The timer dump serves the thread method's ``os._exit``."""
        try:
            exc = call.excinfo.value if call.excinfo is not None else None
            if rep.failed and TIMEOUT_PLUGIN_KEY in item.stash and "Timeout" in str(exc or ""):
                self.dumper.write(item.nodeid, unwound_stacks(call.excinfo.tb))  # type: ignore[union-attr]
        except Exception as exc_:
            warn(f"faildiag: no stacks for the timeout of {item.nodeid}: {exc_}")

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> None:
        if TIMEOUT_PLUGIN_KEY in item.stash:
            self.dumper.cancel()
        return None


def timeout_option(config: pytest.Config) -> float | None:
    """The session-wide hang timeout: ``--faildiag-timeout`` or ini ``faildiag_timeout``; None when unset or
    not positive. Here, beside the watchdog it arms, so the session and the reruns both read it."""
    value = config.getoption("faildiag_timeout", None)
    if value is None:
        raw = str(config.getini("faildiag_timeout") or "").strip()
        try:
            value = float(raw) if raw else None
        except ValueError:
            warn(f"faildiag: ini faildiag_timeout={raw!r} is not a number; ignored")
            value = None
    return value if value and value > 0 else None


INTERRUPT_HANG_AFTER = 2.0  # a test interrupted after running this long is reported as hung, not just stopped
INTERRUPT_PLUGIN = "faildiag-interrupt"


HANDLER_FILES = ("pytest_timeout.py", "outcomes.py", os.path.basename(__file__))


def unwound_stacks(tb: Any) -> str:
    """Every thread's stack after an exception unwound the main thread (a Ctrl-C's ``KeyboardInterrupt``,
    pytest-timeout's ``Timeout``), in faulthandler's layout (the engine parses that): the main thread's from
    the exception's traceback (where the test waited), the other threads' as they are now (not unwound)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    main = threading.main_thread().ident
    out = [f"Current thread 0x{main or 0:016x} [MainThread] (most recent call first):"]
    frames = list(traceback.extract_tb(tb))
    while len(frames) > 1 and os.path.basename(frames[-1].filename) in HANDLER_FILES:
        frames.pop()  # the deadline's signal handler raising the Timeout is not where the test waited
    for fs in reversed(frames):
        out.append(f'  File "{fs.filename}", line {fs.lineno} in {fs.name}')
    out.append("")
    for ident, frame in sys._current_frames().items():
        if ident == main:
            continue
        out.append(f"Thread 0x{ident:016x} [{names.get(ident, '?')}] (most recent call first):")
        for fs in reversed(traceback.extract_stack(frame)):
            out.append(f'  File "{fs.filename}", line {fs.lineno} in {fs.name}')
        out.append("")
    return "\n".join(out)


def _phase(excinfo: Any) -> str:
    """The test phase a ``KeyboardInterrupt`` stopped, read from its traceback (pytest's runner hook on the
    stack), so no per-test hook has to keep track of it."""
    phase = "run"
    try:
        tb = excinfo.tb
    except Exception:  # an ExceptionInfo without its exception
        return phase
    while tb is not None:
        name = tb.tb_frame.f_code.co_name
        if name in ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown"):
            phase = name.rsplit("_", 1)[1]
        tb = tb.tb_next
    return phase


def _in_test(excinfo: Any) -> bool:
    """True when the interrupt stopped pytest inside a test's run protocol (from its ``logstart`` to its
    ``logfinish``: pytest's ``pytest_runtest_protocol`` frame, or a plugin's that replaces it, is on the
    traceback), False between tests. An ExceptionInfo without a traceback answers True (the old rule)."""
    try:
        tb = excinfo.tb
    except Exception:
        return True
    if tb is None:
        return True
    while tb is not None:
        if tb.tb_frame.f_code.co_name in ("pytest_runtest_protocol", "runtestprotocol"):
            return True
        tb = tb.tb_next
    return False


class InterruptWatch:
    """A Ctrl-C (SIGINT: a CI cancel, a person giving up on a stuck run) while a test runs: pytest stops the
    session and makes no report for that test, so without this the hang it interrupted leaves no trace.
    Where tests run (not in a pytest-xdist controller), it remembers the running test and, in pytest's
    ``pytest_keyboard_interrupt`` hook, diagnoses it (``when = "interrupted"``) with every thread's stack,
    the process tree and the other threads' exceptions: a snapshot, an entry in ``session.json`` and a line
    in the terminal. The session's outcome (interrupted, exit status 2) is pytest's."""

    def __init__(self, session: Any, is_library: Callable[[str], bool], rel: Callable[[str, Path], str]) -> None:
        self.session = session  # the FaildiagSession: its engine call, entries and thread evidence
        self.is_library, self.rel = is_library, rel  # the session's notion of user code (no import back)
        self.nodeid: str | None = None
        self.started = 0.0
        self.active = True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.active = not session.config.pluginmanager.hasplugin("dsession")  # workers report their own

    def started_test(self, nodeid: str) -> None:
        """Called from the session's ``pytest_runtest_logstart`` (no hook of its own: every hook call per
        test shows in a passing suite's time). When the test ended is read from the interrupt's traceback
        (``_in_test``), so nothing needs doing at its ``logfinish``."""
        self.nodeid, self.started = nodeid, time.monotonic()

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        if not self.active or self.nodeid is None or not _in_test(excinfo):
            return
        try:
            self._record(excinfo)
        except Exception as exc:  # the interrupt must go on: a missing trace is a warning
            print(
                f"faildiag: no trace of the interrupted test {self.nodeid}: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )

    def _record(self, excinfo: Any) -> None:
        nodeid, elapsed = self.nodeid or "", time.monotonic() - self.started
        hung = elapsed >= INTERRUPT_HANG_AFTER
        what = f"interrupted (SIGINT) while {nodeid} was in its {_phase(excinfo)} for {elapsed:.1f}s"
        head = f"{HANG_MARK}: {what}" if hung else f"faildiag: {what}"
        texts = {
            "interrupted.txt": head + "\n" + "".join(traceback.format_exception(excinfo.value)),
            "hang-stacks.txt": unwound_stacks(excinfo.tb),
            "processes.txt": process_tree_text(),
        }
        texts.update(self.session.threads.texts_for(nodeid))
        file, line = nodeid.split("::")[0] or None, None
        for fs in reversed(traceback.extract_tb(excinfo.tb)):
            if not self.is_library(fs.filename):
                file, line = self.rel(fs.filename, self.session.config.rootpath), fs.lineno
                break
        entry = self.session._run_engine(nodeid, "interrupted", texts, [], file=file, line=line, hang=hung)
        entry.pop("_text", None)
        entry["outcome"] = "interrupted"
        entry["interrupted_after"] = round(elapsed, 1)
        if self.session.controller:
            self.session.entries.append(entry)
        tr = self.session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            where = f" at {file}:{line}" if line else ""
            tr.write_line(f"faildiag: {what}{where}: {entry['summary']}", red=True)
            if entry.get("snapshot"):
                tr.write_line(f"faildiag: its stacks and diagnosis: {self.session.out / entry['snapshot']}")
