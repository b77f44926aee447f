"""The machinery behind ``pytest --faildiag`` (registered by ``plugin.py`` only when enabled).

Per failed or errored report (setup, call, teardown) on the process that ran the test: gather what pytest
has (longrepr, captured output and logs, the exception chain), the test's artifacts (text files under its
``tmp_path``, output of commands run through ``faildiag_run``), a hang dump when the watchdog fired, the
environment lock (built once, on the first failure); run the engine; attach a ``faildiag`` section,
``user_properties`` and a JSON-serialisable ``report.faildiag`` dict (it travels with pytest-xdist
reports); write ``<out>/<slug>/``. The controller (the only process without ``workerinput``) collects the
dicts, diagnoses crashed xdist workers, writes ``<out>/session.json`` and the terminal summary.

Passing tests cost one journal line, a ``pytest_runtest_logstart`` and a ``pytest_runtest_makereport``
wrapper per phase: no ``pytest_runtest_logreport`` of ours until a failure (``_ReportLog``), no lock, no
engine, and none of the modules only a failure needs (the engine, the journal's replay, redaction's full
pattern set) is imported before one happens: ``bench/bench_plugin_overhead.py`` holds a passing suite to
1.03x plain pytest. Every hook body is
wrapped: an internal error becomes a ``PytestFaildiagWarning`` and the session goes on. Outcomes are never
changed (the hang watchdog fails a hung test only because the user asked for ``--faildiag-timeout``).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .pytest_hang import timeout_option
from .pytest_journal import JOURNAL, PREVIOUS, Journal, ended_cleanly, slugify
from .pytest_rerun import quiet, test_timeout
from .pytest_rerun import register as register_rerun
from .pytest_threads import ThreadEvidence, name_dead_thread
from .pytest_warn import PytestFaildiagWarning, warn

__all__ = ["FaildiagSession", "PytestFaildiagWarning", "RUNS_KEY", "warn"]

HANG_PLUGIN = "faildiag-hang"
STACK_WORDS = ("torch", "mindspore", "jax", "tensorflow")
EVIDENCE_TAIL = 512 * 1024
_UNSET: Any = object()


RUNS_KEY: pytest.StashKey[list[Any]] = pytest.StashKey()
"""The ``CapturedRun`` results of the ``faildiag_run`` fixture (``plugin.py``) for a test: their output is evidence."""
PROPS_KEY: pytest.StashKey[list[tuple[str, str]]] = pytest.StashKey()
"""The JUnit properties of the current attempt's first failure: put on its teardown report, the one pytest's
JUnit writer reads them from; created by a failure only and dropped at each attempt's setup, so a rerun
(pytest-rerunfailures) leaves one set, on the final outcome, and none when the test passed."""
SUBTESTS_KEY: pytest.StashKey[int] = pytest.StashKey()
"""How many of the test's subtests (pytest's ``subtests`` fixture) failed so far: the count numbers their
snapshot folders. Set on the first failing one (``_subtest_id``), so a passing test never touches it."""


@functools.cache
def _lib_roots() -> tuple[str, ...]:
    """Computed on the first failure, not at import: a passing session never needs it (it resolves paths)."""
    here = str(Path(__file__).resolve().parents[1])
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, here, str(Path(pytest.__file__).resolve().parents[1])}
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


def is_library_path(path: str) -> bool:
    """True for the standard library, installed packages, pytest and faildiag itself; False for user code."""
    p = os.path.realpath(path)
    if "site-packages" in p or "dist-packages" in p or p.startswith("<"):
        return True
    return p.startswith(_lib_roots())


def _inside_test_call(item: pytest.Item) -> bool:
    """True while pytest is still running ``item``'s test function: a report made then is a subtest's
    (pytest's ``subtests`` fixture makes its reports from inside the test), not the call phase's own, which
    pytest makes after its ``pytest_runtest_call`` returned. Looked up on the stack (pytest's frame running
    this very item: a test that runs pytest in-process has an outer one), and only for a failed report, so
    that passing tests pay nothing for it (a hook wrapper around every call phase did, on every test)."""
    from _pytest.runner import pytest_runtest_call as runner_call

    code = runner_call.__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code and frame.f_locals.get("item") is item:
            return True
        frame = frame.f_back
    return False


class FaildiagSession:
    """One per pytest process when ``--faildiag`` is on."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        base = Path(config.invocation_params.dir)
        out = config.getoption("faildiag_out", None) or config.getini("faildiag_out") or "faildiag-out"
        from ..fsio import check_output_root  # a symlink, or a folder others can write into, is refused (a warning)

        check_output_root(base / out)  # before resolve() would follow it
        self.out = (base / out).resolve()
        workerinput = getattr(config, "workerinput", None)
        self.worker: str | None = workerinput.get("workerid") if isinstance(workerinput, dict) else None
        self.controller = self.worker is None
        self.distributed = False  # set at session start when pytest-xdist distributes from this process
        self.entries: list[dict[str, Any]] = []
        self.recovered: list[dict[str, Any]] = []
        self.journal: Journal | None = None
        self._stashed = False  # set by the first failure: only then can a test carry PROPS_KEY/SUBTESTS_KEY
        self._lock: Any = _UNSET
        self._changes: Any = _UNSET  # lines changed since the last green run (``changes``)
        self.dumper: Any = None
        self.threads = ThreadEvidence()  # exceptions of other threads during a test: evidence (pytest_threads)
        self.rerun = register_rerun(config, self.out, self.controller, lambda item: test_timeout(item, config))
        self._note_started: Any = None  # where this process's test order goes, by logstart (sessionstart sets it)
        self._logging = False  # whether ``_ReportLog`` (our pytest_runtest_logreport) is registered
        self.bridge: Any = None  # pytest-timeout's deadlines: its failed reports go through failed_report
        timeout = timeout_option(config)
        if timeout is not None or config.pluginmanager.hasplugin("timeout"):
            from .pytest_hang import HangWatch, PytestTimeoutBridge, StackDumper

            self.dumper = StackDumper(self.out)
            if timeout is not None:
                config.pluginmanager.register(HangWatch(self.dumper, timeout), HANG_PLUGIN)
            if config.pluginmanager.hasplugin("timeout"):
                self.bridge = PytestTimeoutBridge(self.dumper)
                config.pluginmanager.register(self.bridge, "faildiag-timeout-bridge")
        from .pytest_hang import INTERRUPT_PLUGIN, InterruptWatch  # a Ctrl-C during a test leaves its trace

        self.interrupt = InterruptWatch(self, is_library_path, _rel)  # told of each test by our logstart
        config.pluginmanager.register(self.interrupt, INTERRUPT_PLUGIN)
        self._gh_emitted = False
        if self._github():
            config.pluginmanager.register(_GithubTail(self), "faildiag-github-tail")

    # ------------------------------------------------------------------ session
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.threads.install()
        try:
            self.distributed = self.controller and self.config.pluginmanager.hasplugin("dsession")
            if self.distributed:
                self._log_reports()  # the workers' reports (and crashes) reach the controller only there
            elif self.controller and self.rerun is not None:
                self._note_started = self.rerun.order_sink()
            if self.controller:
                self._recover_previous()
            self.journal = Journal(self.out / JOURNAL, worker=self.worker)
            if self.controller:
                from ..redact import redact_obj  # the command line can carry --token/--password values

                self.journal.write(
                    "session_start",
                    args=redact_obj([str(a) for a in self.config.invocation_params.args][:50]),
                    distributed=self.distributed,
                )
            self.journal.write("process", main_thread=threading.main_thread().ident)
            if self.dumper is not None:
                self.dumper.journal = self.journal
        except Exception as exc:
            warn(f"faildiag: journal unavailable, a killed session will not be recoverable: {exc}", self.config)
        self._stop_workflow_commands()

    # ------------------------------------------------------------------ GitHub Actions
    def _github(self) -> bool:
        return self.controller and (
            os.environ.get("GITHUB_ACTIONS") == "true" or bool(self.config.getoption("faildiag_github", False))
        )

    def _stop_workflow_commands(self) -> None:
        """Everything the session prints (captured output replayed by pytest, failure messages in the short
        summary, which CI=true leaves untruncated) is data: a test's ``::error::`` line must not become a
        workflow command. Commands stay stopped until our own annotations, at the very end."""
        if not self._github():
            return
        import secrets

        self._gh_token = f"faildiag-{secrets.token_hex(16)}"  # random: a log cannot guess it to resume early
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"::stop-commands::{self._gh_token}")

    def emit_github(self, tr: Any) -> None:
        """Resume workflow commands and write the annotations: once, after everything pytest printed from
        the run (the short test summary) and before its final line (``_GithubTail``), which CI tools read."""
        if self._gh_emitted:
            return
        self._gh_emitted = True
        if getattr(self, "_gh_token", None):
            tr.write_line(f"::{self._gh_token}::")
        self._call_ci(tr, "pytest_faildiag.ci.github", "emit", lambda m: m.emit(self.out, write=tr.write_line))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Iterator[None]:
        """Outermost wrapper: the session index is written before any other plugin's session end. The GitHub
        annotations are written by ``_GithubTail`` before pytest's final line; here only when pytest printed
        no summary (``--no-summary``, an internal error)."""
        try:
            if self.controller and self.rerun is not None:
                self.rerun.finish(self.entries, int(exitstatus), self.changes)  # before the index and JUnit are written
            elif self.controller and int(exitstatus) == 0:  # reruns off: a green run is still the baseline
                from ..engine.gitrev import record_green  # of the next red run's changed lines

                record_green(self.out, self.config.rootpath)
        except Exception as exc:
            warn(f"faildiag: reruns stopped: {type(exc).__name__}: {exc}")
        try:
            if self.controller:
                self._write_session_index()
            if self.journal is not None:
                self.journal.write("session_end" if self.controller else "worker_end", exitstatus=int(exitstatus))
        except Exception as exc:
            warn(f"faildiag: session index not written: {type(exc).__name__}: {exc}")
        try:
            return (yield)
        finally:
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None and self._github():
                self.emit_github(tr)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.threads.start(nodeid)
        self.interrupt.started_test(nodeid)
        if self._note_started is not None:  # the order tests ran in, for the reruns (not under xdist)
            self._note_started((nodeid, None))
        if self.journal is not None and not self.distributed:
            self.journal.mark("start", nodeid)

    def note_run_started(self, item: pytest.Item, *paths: Path) -> None:
        """Called by the ``faildiag_run`` fixture: where a command's output goes, for ``faildiag recover``."""
        if self.journal is not None:
            for p in paths:
                self.journal.write("artifact", nodeid=item.nodeid, path=str(p))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Without a session-wide timeout, arm the watchdog only if some test asks for one by marker. The
        journal redacts the ids of the tests to run here, all at once (``Journal.expect``)."""
        if self.journal is not None and not self.distributed:
            try:
                self.journal.expect(item.nodeid for item in items)
            except Exception as exc:  # each id is then redacted as it is written
                warn(f"faildiag: test ids not pre-redacted: {type(exc).__name__}: {exc}")
        if config.pluginmanager.has_plugin(HANG_PLUGIN):
            return
        try:
            if _any_marked(items, "faildiag_timeout"):
                from .pytest_hang import HangWatch, StackDumper

                self.dumper = self.dumper or StackDumper(self.out)
                config.pluginmanager.register(HangWatch(self.dumper, None), HANG_PLUGIN)
        except Exception as exc:
            warn(f"faildiag: faildiag_timeout markers ignored: {exc}")

    # ------------------------------------------------------------------ per failure, where the test ran
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        rep = yield
        if self._stashed and rep.when == "setup":  # a new attempt (a rerun starts at its setup again)
            for key in (PROPS_KEY, SUBTESTS_KEY):
                if key in item.stash:
                    del item.stash[key]
        if rep.outcome == "failed":  # ``rep.failed`` without its property call: this runs 3 times per test
            self._stashed = True
            if self.controller and not self._logging:
                self._log_reports()  # before this report is logged: the controller collects its entry
            if self.bridge is not None:  # the stacks of a pytest-timeout deadline, before the diagnosis
                self.bridge.failed_report(item, call, rep)
            if self.rerun is not None:
                self.rerun.note_failed(item, rep)  # its rerun settings travel with the report
            try:
                self._diagnose_item(item, call, rep)
            except Exception as exc:
                warn(f"faildiag: no diagnosis for {item.nodeid} ({rep.when}): {type(exc).__name__}: {exc}")
        if self._stashed and rep.when == "teardown" and PROPS_KEY in item.stash:
            rep.user_properties.extend(item.stash[PROPS_KEY])
        return rep

    def _subtest_id(self, item: pytest.Item, call: pytest.CallInfo[None]) -> str | None:
        """``<nodeid> subtest N`` for the Nth failing subtest, whose report is made while the test still runs."""
        if call.when != "call" or not _inside_test_call(item):
            return None
        item.stash[SUBTESTS_KEY] = item.stash.get(SUBTESTS_KEY, 0) + 1
        return f"{item.nodeid} subtest {item.stash[SUBTESTS_KEY]}"

    def _diagnose_item(self, item: pytest.Item, call: pytest.CallInfo[None], rep: pytest.TestReport) -> None:
        import traceback

        texts = _report_texts(rep)
        texts.update(self.threads.texts_for(item.nodeid))
        excinfo = call.excinfo
        if excinfo is not None:
            try:
                texts["exception.txt"] = "".join(traceback.format_exception(excinfo.value))
            except Exception:
                pass
        paths: list[Path] = []
        hang = self._hang_evidence(item, rep, texts)
        runs = item.stash.get(RUNS_KEY, [])
        tmp = _tmp_path_of(item)
        if tmp is not None and tmp.is_dir():
            paths.append(tmp)
        if runs:
            texts["commands.txt"] = "".join(r.describe() + "\n" for r in runs)
            if tmp is None:
                from ..capture.subproc import read_tail

                for r in runs:
                    texts[r.stdout_path.name] = read_tail(r.stdout_path, EVIDENCE_TAIL)
                    texts[r.stderr_path.name] = read_tail(r.stderr_path, EVIDENCE_TAIL)
        file, line = _user_frame(excinfo, rep, self.config.rootpath)
        from .pytest_fixtures import fixture_frame

        fixture = fixture_frame(item, excinfo, is_library_path, _rel, self.config.rootpath)
        if fixture is not None and rep.when != "call":  # a fixture error: point at the user's fixture line
            file, line = fixture[0], fixture[1]
            texts["fixture.txt"] = f"error in fixture '{fixture[2]}' at {file}:{line} ({rep.when} of {item.nodeid})\n"
        subtest = self._subtest_id(item, call)
        entry = self._run_engine(item.nodeid, rep.when, texts, paths, file=file, line=line, hang=hang, slug_of=subtest)
        if subtest is not None:
            entry["subtest"] = item.stash[SUBTESTS_KEY]
        self._attach(rep, entry)
        props = item.stash.setdefault(PROPS_KEY, [])
        if not props:  # one set per attempt: its first failure (a teardown error after it adds none)
            props.extend(_props(entry))

    def _hang_evidence(self, item: pytest.Item, rep: pytest.TestReport, texts: dict[str, str]) -> bool:
        if self.dumper is None:
            return False
        from .pytest_hang import HANG_KEY, TIMEOUT_PLUGIN_KEY, process_tree_text

        info = item.stash.get(HANG_KEY, None)
        if info is not None and rep.when == info.get("phase"):
            texts["hang-stacks.txt"] = info["stacks"]
            texts["processes.txt"] = info["processes"]
            return True
        if TIMEOUT_PLUGIN_KEY in item.stash and "Timeout" in rep.longreprtext:
            stacks = self.dumper.read(item.nodeid)
            if stacks:
                texts["hang-stacks.txt"] = stacks
            texts["processes.txt"] = process_tree_text()
            return True
        return False

    # ------------------------------------------------------------------ per report, on the controller
    def _log_reports(self) -> None:
        if not self._logging:
            self._logging = True
            try:
                self.config.pluginmanager.register(_ReportLog(self), "faildiag-reports")
            except Exception as exc:
                warn(f"faildiag: failures will not be collected: {type(exc).__name__}: {exc}")

    def log_report(self, report: pytest.TestReport) -> None:
        """Each report on the controller, once ``_ReportLog`` is registered: failures become entries."""
        if report.outcome != "failed":  # the passing path first: three of these per test
            if self.distributed and self.rerun is not None and report.when == "setup":
                self.rerun.note_setup(report)  # the order tests ran in, per worker (else noted at logstart)
            return
        if self.rerun is not None:
            self.rerun.note_report(report)
        if not self.controller:
            return
        try:
            entry = getattr(report, "faildiag", None)
            if not isinstance(entry, dict) and "crashed while running" in report.longreprtext:
                entry = self._diagnose_crash(report)
            if isinstance(entry, dict):
                self.entries.append(entry)
        except Exception as exc:
            warn(f"faildiag: no diagnosis for {report.nodeid}: {type(exc).__name__}: {exc}")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that fails to import (collection error): diagnosed on the controller, which sees every
        collection report (pytest-xdist forwards the workers' failed ones)."""
        if not report.failed or not self.controller:
            return
        try:
            if report.nodeid in {e["nodeid"] for e in self.entries if e.get("when") == "collect"}:
                return  # several xdist workers report the same broken module
            texts = {"longrepr.txt": report.longreprtext}
            path = report.nodeid.split("::")[0] or None
            entry = self._run_engine(
                report.nodeid or "<session>", "collect", texts, [], file=path, line=None, hang=False
            )
            self._attach(report, entry)
            self.entries.append(entry)
        except Exception as exc:
            warn(f"faildiag: no diagnosis for the collection error in {report.nodeid}: {type(exc).__name__}: {exc}")

    def _diagnose_crash(self, report: pytest.TestReport) -> dict[str, Any]:
        """A pytest-xdist worker died running this test: diagnose from xdist's message and whatever the
        worker journaled (the output files of its commands, a stack dump)."""
        texts = {"longrepr.txt": report.longreprtext}
        from ..redact import redact_text
        from .pytest_journal_replay import dead_test_texts, dead_tests, read_events

        journaled = redact_text(report.nodeid)  # the journal keeps redacted ids
        dead = [d for d in dead_tests(read_events(self.out / JOURNAL)) if d.nodeid == journaled]
        if dead:
            texts.update(dead_test_texts(self.out, dead[-1], extra_roots=self._evidence_roots()))
        path = report.location[0] if report.location else report.nodeid.split("::")[0]
        entry = self._run_engine(report.nodeid, "crash", texts, [], file=path, line=None, hang=False)
        self._attach(report, entry)
        report.user_properties.extend(_props(entry))
        _junit_properties(self.config, report, _props(entry))
        return entry

    # ------------------------------------------------------------------ engine + attach
    def _run_engine(
        self,
        nodeid: str,
        when: str,
        texts: dict[str, str],
        paths: list[Path],
        *,
        file: str | None,
        line: int | None,
        hang: bool,
        slug_of: str | None = None,
    ) -> dict[str, Any]:
        import shlex

        from ..engine.api import diagnose
        from ..engine.report import render_text
        from ..engine.snapshot import dump_json, write_snapshot
        from ..store import read_last_green

        lock = self.lock()
        context: dict[str, Any] = {}
        green = read_last_green(self.out)
        if green is not None:
            context["last_green_lock"] = green
        code = self.changes_since_green(nodeid)
        if code is not None:
            context["code_changes"] = code
        factory = self.config.getoption("faildiag_factory", None)
        slug = slugify(slug_of or nodeid, when)  # slug_of: a subtest's own id, so each gets its own folder
        snap = self.out / slug
        diag = diagnose(
            paths,
            texts=texts,
            lock=lock,
            context=context,
            probe_machine=True,
            stack=_stack_of(texts),
            command=f"pytest {shlex.quote(nodeid)}",
            cwd=str(self.config.rootpath),
            factory_root=factory or None,
            factory_base=self.config.invocation_params.dir,
            hook=self.config.hook,
            out_dir=snap,
        )
        name_dead_thread(diag, texts)  # a hang whose producer died: that exception is the first failure
        top = diag.top
        entry: dict[str, Any] = {
            "nodeid": nodeid,
            "slug": slug,
            "when": when,
            "outcome": "failed",
            "category": top.category if top else "unknown",
            "type": diag.profile.type,
            "summary": diag.summary,
            "confidence": round(diag.profile.confidence, 3),
            "cause_id": top.id if top else None,
            "error": top.error if top else None,
            "file": file,
            "line": line,
            "fix_hints": list(top.fix_hints[:3]) if top else [],
            "snapshot": slug,
            "worker": self.worker,
            "hang": hang,
        }
        extra = {f"evidence/{_safe_name(k)}": v[-EVIDENCE_TAIL:] for k, v in texts.items() if v}
        extra["test.json"] = dump_json({k: entry[k] for k in ("nodeid", "when", "file", "line", "worker")})
        try:
            write_snapshot(diag, snap, lock=lock, extra_files=extra)
        except OSError as exc:
            entry["snapshot"] = None
            warn(f"faildiag: snapshot for {nodeid} not written to {snap}: {exc}")
        text = render_text(diag, max_causes=2)
        if entry["snapshot"]:
            text += f"\n  snapshot: {snap}"
        entry["_text"] = text
        if self.journal is not None:
            self.journal.write(
                "result",
                nodeid=nodeid,
                when=when,
                category=entry["category"],
                type=entry["type"],
                summary=entry["summary"],
                slug=slug,
            )
        return entry

    def _attach(self, rep: pytest.TestReport | pytest.CollectReport, entry: dict[str, Any]) -> None:
        from ..sanitize import display

        text = entry.pop("_text", "")
        rep.sections.append(("faildiag", display(text)))  # pytest prints it in the failure's report
        rep.faildiag = entry  # type: ignore[attr-defined]  # plain JSON: travels with xdist reports

    def lock(self) -> dict[str, Any] | None:
        """The environment lock, built on first use only (i.e. only when something failed)."""
        if self._lock is _UNSET:
            self._lock = None
            try:
                from ..capture.envlock import build_lock

                self._lock = build_lock(cwd=self.config.rootpath, timeout=2.0)
            except Exception as exc:  # probing the machine can fail in many ways: diagnose without a lock
                warn(f"faildiag: environment lock not built: {type(exc).__name__}: {exc}")
        return self._lock

    def changes(self) -> Any:
        """The lines changed since the last green run (``changes.ChangedLines``; ``skipped`` says why there are
        none), asked of git once per process, at the first failure or the session's end, whichever comes first:
        the failures' diagnoses and the reruns read the same. Never raises."""
        from ..engine.changes import ChangedLines, changed_since, green_revision

        if self._changes is _UNSET:
            try:
                self._changes = changed_since(self.config.rootpath, green_revision(self.out))
            except Exception as exc:  # a broken repository: diagnose and rerun without the changes
                self._changes = ChangedLines(skipped=f"git could not be asked: {type(exc).__name__}: {exc}")
        return self._changes

    def changes_since_green(self, nodeid: str) -> dict[str, Any] | None:
        """What changed since the last green run, the test's side and the code's (``changes.code_changes``)."""
        from ..engine.changes import code_changes

        test_file = str(self.config.rootpath / nodeid.split("::")[0])
        return code_changes(
            self.changes(), test_file, functools.partial(is_test_path, self.config.getini("python_files"))
        )

    # ------------------------------------------------------------------ killed sessions
    def _evidence_roots(self) -> list[Any]:
        """Besides the output folder: the folders journaled files may be read from (see dead_test_texts);
        the root folder only when it is a project, not the home folder pytest falls back to."""
        from ..fsio import project_root

        return [project_root(self.config.rootpath), getattr(self.config.option, "basetemp", None)]

    def _recover_previous(self) -> None:
        path = self.out / JOURNAL
        if not path.exists():
            return
        if ended_cleanly(path):  # nothing to diagnose: skip replaying a line per test of the last session
            os.replace(path, self.out / PREVIOUS)
            return
        from ..capture.oomkill import dmesg_oom_lines
        from .pytest_journal_replay import dead_test_texts, dead_tests, read_events

        events = read_events(path)
        deads = [d for d in dead_tests(events) if not d.session_ended]  # a worker crash: the controller diagnosed it
        kernel_oom = dmesg_oom_lines({d.pid for d in deads}) if deads else {}
        for dead in deads:
            try:
                texts = dead_test_texts(self.out, dead, extra_roots=self._evidence_roots(), kernel_oom=kernel_oom)
                entry = self._run_engine(
                    dead.nodeid, "killed", texts, [], file=dead.nodeid.split("::")[0], line=None, hang=False
                )
                entry.pop("_text", None)
                entry["outcome"] = "killed"
                self.recovered.append(entry)
            except Exception as exc:
                warn(f"faildiag: could not diagnose {dead.nodeid} from the previous session's journal: {exc}")
        os.replace(path, self.out / PREVIOUS)

    # ------------------------------------------------------------------ session end
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.threads.uninstall()
        if self.dumper is not None:
            self.dumper.close()
        if self.journal is not None:
            self.journal.close()

    def _write_session_index(self) -> None:
        from ..store import write_session

        write_session(self.out, self.entries, self.recovered)  # redacted there: test ids can hold tokens

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if not self.controller:
            return
        try:
            self._summary(terminalreporter)
        except Exception as exc:
            _write(terminalreporter, f"faildiag: warning: summary failed: {type(exc).__name__}: {exc}")
        self._ci_hooks(terminalreporter)

    def _summary(self, tr: Any) -> None:
        if not self.entries and not self.recovered:
            return
        if quiet(self.config):
            _write(tr, self._one_line())
            return
        from ..store import entry_key, group_entries

        tr.write_sep("=", "faildiag")
        for e in self.recovered:
            _write(tr, f"previous session died while running {e['nodeid']}: {e['summary']}", red=True)
        if self.entries:
            groups = group_entries(self.entries)
            n = len(self.entries)
            _write(tr, f"{n} failure{'s' if n != 1 else ''}, {len(groups)} cause{'s' if len(groups) != 1 else ''}:")
            for g in groups:
                _write(tr, f"  [{g['category']}] {g['summary']} ({g['cause_id'] or g['type']}): {g['count']} test(s)")
                for e in [x for x in self.entries if entry_key(x) == g["key"]][:5]:
                    where = f" ({e['file']}:{e['line']})" if e.get("file") and e.get("line") else ""
                    phase = f" [{e['when']}]" if e.get("when") not in ("call", None) else ""
                    _write(tr, f"      {e['nodeid']}{phase}{where}")
                if g["count"] > 5:
                    _write(tr, f"      ... and {g['count'] - 5} more")
        _write(tr, f"snapshots and session index: {self.out}{os.sep}session.json")

    def _one_line(self) -> str:
        """The whole block in one line, for ``-qq`` and ``--tb=no``: counts, rerun verdicts, where to read more."""
        from ..store import group_entries

        parts = []
        if self.entries:
            n, causes = len(self.entries), len(group_entries(self.entries))
            parts.append(f"{n} failure{'s' if n != 1 else ''}, {causes} cause{'s' if causes != 1 else ''}")
        verdicts: dict[str, int] = {}
        for e in self.entries:
            if isinstance(e.get("rerun"), dict):
                verdicts[e["rerun"]["verdict"]] = verdicts.get(e["rerun"]["verdict"], 0) + 1
        if verdicts:
            parts.append("reruns: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
        if self.recovered:
            parts.append(f"the previous session died while running {len(self.recovered)} test(s)")
        return f"faildiag: {'; '.join(parts)}; details: {self.out}{os.sep}session.json"

    def _ci_hooks(self, tr: Any) -> None:
        opt = self.config.getoption
        calls: list[tuple[str, str, Any]] = []
        html = opt("faildiag_html", None)
        if html:
            target = Path(self.config.invocation_params.dir) / html
            calls.append(("pytest_faildiag.ci.html", "write_html", lambda m: m.write_html(self.out, target)))
        gitlab = opt("faildiag_gitlab", None)
        if gitlab:
            target_cq = Path(self.config.invocation_params.dir) / gitlab
            calls.append(
                ("pytest_faildiag.ci.gitlab", "write_codequality", lambda m: m.write_codequality(self.out, target_cq))
            )
        if opt("faildiag_fix", False):
            calls.append(
                (
                    "pytest_faildiag.commands.fix",
                    "propose_for_session",
                    lambda m: m.propose_for_session(self.out, write=tr.write_line),
                )
            )
        for module_name, func, call in calls:
            self._call_ci(tr, module_name, func, call)

    def _call_ci(self, tr: Any, module_name: str, func: str, call: Any) -> None:
        """Run one reporter the user asked for (``--faildiag-html``, GitHub annotations, ...). One that cannot
        be loaded (a renamed module or function) or that fails says so on the terminal and as a warning: the
        user asked for its output, so it never goes quietly missing, and the outcome stays untouched."""
        import importlib

        try:
            module = importlib.import_module(module_name)
            if not hasattr(module, func):
                raise AttributeError(f"module {module_name} has no {func}()")
            call(module)
        except Exception as exc:  # a reporter's failure is reported, never a changed test outcome
            _write(tr, f"faildiag: warning: {module_name}.{func} failed: {type(exc).__name__}: {exc}")
            warn(f"faildiag: {module_name}.{func} failed: {type(exc).__name__}: {exc}")


class _ReportLog:
    """The session's ``pytest_runtest_logreport`` (``FaildiagSession.log_report``), registered only where it
    has work: on a pytest-xdist controller from the start (the workers' reports and crashed workers arrive
    there), otherwise on the controller at its first failed report (``pytest_runtest_makereport``, which
    sees every report of a test run in this process before it is logged, registers it then). Why not a
    method of the session: a passing suite would pay three hook calls per test for nothing, the largest
    part of what faildiag costs it per test (bench/bench_plugin_overhead.py); the order tests ran in is
    noted at their logstart instead. Workers need none: their reports are the controller's to collect."""

    def __init__(self, session: FaildiagSession) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.session.log_report(report)


class _GithubTail:
    """Registered under GitHub Actions: an outer ``pytest_terminal_summary`` wrapper, so the annotations come
    after the terminal reporter's summaries (its short test summary, still inside stop-commands) and before
    the final ``=== 1 failed in 0.12s ===`` line it prints at session end: that line stays the last."""

    def __init__(self, session: FaildiagSession) -> None:
        self.session = session

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Iterator[None]:
        try:
            return (yield)
        finally:
            self.session.emit_github(terminalreporter)


# ---------------------------------------------------------------------------------------------- helpers


def _any_marked(items: list[pytest.Item], name: str) -> bool:
    """``any(item.get_closest_marker(name) for item in items)``, looking at each node's own markers once:
    the tests of a module or class share their parents, and ``get_closest_marker`` walks the whole chain of
    parents again for every test."""
    seen: set[int] = set()
    for item in items:
        node: Any = item
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            if any(mark.name == name for mark in node.own_markers):
                return True
            node = node.parent
    return False


def _write(tr: Any, text: str, **markup: bool) -> None:
    """One terminal line of faildiag's own: what it names (test ids, file names, causes, errors) comes from
    the run, so it is redacted and its control characters are shown, not obeyed; a newline in a test id
    cannot start a forged line either."""
    from ..sanitize import display

    tr.write_line(display(text, one_line=True), **markup)


def _report_texts(rep: pytest.TestReport) -> dict[str, str]:
    texts = {"longrepr.txt": _longrepr_text(rep)}
    for title, content in rep.sections:
        if title.startswith("Captured") and content:
            name = title[len("Captured ") :].replace(" ", "-")
            texts[f"{name}.txt"] = content[-EVIDENCE_TAIL:]
    return texts


def _longrepr_text(rep: pytest.TestReport) -> str:
    """The failure as pytest printed it, minus its listing of the test's source: code shown for context
    (a ``raise RuntimeError("CUDA out of memory")`` in a branch that never ran) is not evidence. Keeps the
    ``E`` lines, each entry's location line, native tracebacks and the chain descriptions; falls back to
    the whole text for reports of another shape."""
    chain = getattr(rep.longrepr, "chain", None)
    if not chain:
        return rep.longreprtext
    out: list[str] = []
    try:
        for reprtraceback, _crash, descr in chain:
            for entry in getattr(reprtraceback, "reprentries", None) or []:
                lines = list(getattr(entry, "lines", None) or [])
                if type(entry).__name__ == "ReprEntryNative":
                    out.extend(line.rstrip("\n") for line in lines)
                else:
                    out.extend(line for line in lines if line.startswith("E "))
                loc = getattr(entry, "reprfileloc", None)
                if loc is not None:
                    out.append(f"{loc.path}:{loc.lineno}: {loc.message}")
            if descr:
                out.append(descr)
    except Exception:  # an unexpected longrepr shape: the printed text is still evidence
        return rep.longreprtext
    return "\n".join(out) if out else rep.longreprtext


def _tmp_path_of(item: pytest.Item) -> Path | None:
    funcargs = getattr(item, "funcargs", None) or {}
    for key in ("tmp_path", "tmpdir"):
        value = funcargs.get(key)
        if value is not None:
            try:
                return Path(str(value))
            except TypeError:
                return None
    return None


def _user_frame(excinfo: Any, rep: pytest.TestReport, root: Path) -> tuple[str | None, int | None]:
    """The innermost traceback frame in the user's code (not the standard library, installed packages,
    pytest or faildiag), relative to the rootdir; the test's own location when there is none."""
    if excinfo is not None:
        try:
            for entry in reversed(list(excinfo.traceback)):
                path = str(entry.path)
                if not is_library_path(path):
                    return _rel(path, root), entry.lineno + 1
        except Exception:
            pass
    loc = rep.location
    if loc and loc[0]:
        return loc[0], (loc[1] + 1) if isinstance(loc[1], int) else None
    return None, None


def is_test_path(python_files: list[str], rel: str) -> bool:
    """Whether a file (relative, "/" separated) is the tests' code: a test module by pytest's ``python_files``
    patterns, a ``conftest.py``, or any file of a folder named ``tests``/``test``/``testing`` (their helpers)."""
    parts = rel.split("/")
    name = parts[-1]
    if name == "conftest.py" or any(p in ("tests", "test", "testing") for p in parts[:-1]):
        return True
    return any(fnmatch.fnmatch(name if "/" not in g else rel, g) for g in python_files)


def _rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return path


def _stack_of(texts: dict[str, str]) -> str | None:
    """``pytest`` unless the evidence shows a framework the engine knows (then the engine detects it)."""
    blob = "\n".join(texts.values())
    if any(word in blob for word in STACK_WORDS):
        return None
    return "pytest"


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "evidence.txt"


def _junit_properties(config: pytest.Config, report: pytest.TestReport, props: list[tuple[str, str]]) -> None:
    """Properties straight onto the JUnit testcase of a report that has no teardown report (a crashed xdist
    worker's test: pytest's JUnit writer reads ``user_properties`` only from a teardown report)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - pytest moved it: the terminal and session.json still have them
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    reporter = xml.node_reporter(report)
    for name, value in props:
        reporter.add_property(name, value)


def _props(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """The JUnit ``<property>`` values (CI test reports show them): redacted, controls made visible."""
    from ..sanitize import display

    return [
        ("faildiag.category", display(entry["category"])),
        ("faildiag.type", display(entry["type"])),
        ("faildiag.summary", display(entry["summary"])),
    ]
