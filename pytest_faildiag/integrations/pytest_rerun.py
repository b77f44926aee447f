"""Is it intermittent, and which change broke it: ``--faildiag-rerun N`` (default 2, ``0`` turns it off).

After the session, on the controller only (once, also under pytest-xdist), each failed test is rerun N times
alone, each in a fresh ``python`` process running pytest on that one node id. Then:

* failed every time alone → ``deterministic``; the first of those runs ran under ``coverage`` (only the
  files changed since the last green run are traced), and the changed lines it executed become the
  ``suspects`` (``engine.changes``): direct evidence that moves the top cause to ``model``;
* passed every time alone → replayed once after the tests that ran before it on the same worker (those of
  its own file first, the cheap and common case); failing there → ``order_dependent``, and halving the
  predecessors names the polluter; passing there too → ``intermittent`` (it failed only in the session);
* passed some runs → ``intermittent`` (K of N).

Why a child process per run: the session's process holds the state that made the test fail. Each child has
its own process group and is killed with it when a test exceeds its bound (its faildiag or pytest-timeout
deadline, else a multiple of the session's duration), so a hang cannot hold the session; everything it
writes (JUnit, ``--basetemp``, pytest's cache, coverage data, output) stays under ``<out>/<test>/rerun/``.
The whole step has a time budget (ini ``faildiag_rerun_budget``, 120 s) and a cap on tests (10); tests
marked ``@pytest.mark.faildiag_no_rerun`` are never repeated. It never changes an outcome or the exit
status: it only adds to the report, the JUnit properties and the terminal.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..engine.changes import ChangedLines
    from .pytest_rerun_child import RunResult, Verdict

PLUGIN_NAME = "faildiag-rerun"
DEFAULT_RUNS = 2
DEFAULT_BUDGET = 120.0
MAX_TESTS = 10
RERUN_KEY = "faildiag_rerun"  # report attribute (plain JSON, travels with xdist reports)
# The machinery (child processes, verdicts, bisection, outputs) is in pytest_rerun_child, imported only when
# a session ended with failures: this module is what every ``pytest --faildiag`` session loads of reruns.


RERUN_ENV = "FAILDIAG_RERUN"


def rerun_count(config: pytest.Config) -> int:
    """Reruns per failed test: ``--faildiag-rerun``, else ``$FAILDIAG_RERUN`` (so a CI job can turn reruns off
    or up without editing the project's config), else the ``faildiag_rerun`` ini value, else the default."""
    value = config.getoption("faildiag_rerun", None)
    for source in (lambda: os.environ.get(RERUN_ENV), lambda: config.getini("faildiag_rerun")):
        if value is not None:
            break
        try:
            raw = str(source() or "").strip()
            value = int(raw) if raw else None
        except (ValueError, KeyError):
            value = None
    return max(0, int(DEFAULT_RUNS if value is None else value))


def quiet(config: pytest.Config) -> bool:
    """``-qq`` or ``--tb=no``: the user asked for little output, so faildiag's blocks (this one's and the
    session's) shrink to one line; the per-failure sections follow pytest's own failure reports."""
    return config.get_verbosity() <= -2 or getattr(config.option, "tbstyle", "auto") == "no"


def test_timeout(item: pytest.Item, config: pytest.Config) -> float | None:
    """The test's own deadline, which bounds each rerun of it: ``@pytest.mark.faildiag_timeout``, the
    session's ``--faildiag-timeout`` / ini, or pytest-timeout's for this test."""
    marker = item.get_closest_marker("faildiag_timeout")
    if marker is not None:
        try:
            return float(marker.args[0] if marker.args else marker.kwargs.get("seconds"))
        except (TypeError, ValueError):
            pass
    from .pytest_hang import TIMEOUT_PLUGIN_KEY, timeout_option

    if TIMEOUT_PLUGIN_KEY in item.stash:
        return item.stash[TIMEOUT_PLUGIN_KEY]
    return timeout_option(config)


def _budget(config: pytest.Config) -> float:
    try:
        return float(str(config.getini("faildiag_rerun_budget")).strip() or DEFAULT_BUDGET)
    except (ValueError, KeyError):
        return DEFAULT_BUDGET


# ---------------------------------------------------------------------------------------------- plugin


class RerunPlugin:
    """Registered in every process when reruns are on. Where tests run: marks failed reports with the
    test's rerun settings (marker, deadline). On the controller: remembers the order tests ran per worker,
    reruns the failures at session end, adds the verdicts everywhere and prints them."""

    def __init__(
        self,
        config: pytest.Config,
        runs: int,
        out: Path,
        controller: bool,
        timeout: Callable[[pytest.Item], float | None],
    ) -> None:
        self.config, self.runs, self.out, self.controller = config, runs, out, controller
        self.timeout_of = timeout
        self._ran: list[tuple[str, Any]] = []  # (nodeid, xdist node or None) per setup report, in order
        self._indexed = 0  # how much of _ran order/position hold
        self.order: dict[str, list[str]] = {}
        self.position: dict[str, tuple[str, int]] = {}
        self.info: dict[str, dict[str, Any]] = {}
        self.results: list[tuple[dict[str, Any], Verdict, list[dict[str, Any]]]] = []
        self.cost = 0.0
        self.changes_note = ""
        self.budget = _budget(config)
        self.spectrum: Any = None  # a pytest_spectrum.SpectrumCollector with --faildiag-cov
        self.spectrum_lines: list[dict[str, Any]] = []
        self.spectrum_totals = (0, 0)

    # where the test ran. Both of these are called by the session's own hooks (pytest_session), not
    # registered as hooks of their own: two more hook calls per report cost a passing suite more than
    # everything else faildiag does per test (bench/bench_plugin_overhead.py)
    def note_failed(self, item: pytest.Item, rep: pytest.TestReport) -> None:
        """A failed report where the test ran: mark it with the test's rerun settings (marker, deadline)."""
        if rep.failed:
            try:
                setattr(
                    rep,
                    RERUN_KEY,
                    {
                        "skip": item.get_closest_marker("faildiag_no_rerun") is not None,
                        "timeout": self.timeout_of(item),
                        "duration": rep.duration,
                    },
                )
            except Exception:
                pass

    def note_report(self, report: pytest.TestReport) -> None:
        """A failed report on the controller (and under pytest-xdist every setup report, through
        ``note_setup``): the order tests ran in per worker, the failures' settings."""
        if not self.controller or (report.when != "setup" and report.outcome != "failed"):
            return  # the order is known from each test's setup report; a passing call or teardown adds nothing
        if report.when == "setup":
            self._ran.append((report.nodeid, getattr(report, "node", None)))
        info = getattr(report, RERUN_KEY, None)
        if report.failed and isinstance(info, dict):
            self.info.setdefault(report.nodeid, info)

    def order_sink(self) -> Callable[[tuple[str, Any]], None]:
        """Where the session's logstart notes ``(nodeid, None)`` for each test a process without pytest-xdist
        runs (the order of its setup reports, one bound ``list.append`` call per test): passing tests then
        need no ``pytest_runtest_logreport`` of ours at all."""
        return self._ran.append

    def note_setup(self, report: pytest.TestReport) -> None:
        """A passing setup report on the controller, straight from the session's hook: one list append.
        Which worker ran it and where it stands in that worker's order are worked out by ``_index`` only
        when a failure asks (``predecessors``): a passing suite makes one of these per test."""
        if self.controller:
            self._ran.append((report.nodeid, getattr(report, "node", None)))

    def _index(self) -> None:
        """The order tests ran in per worker (a test's first setup counts: a rerun by another plugin keeps
        its place), from the setup reports noted since the last call."""
        for nodeid, node in self._ran[self._indexed :]:
            if nodeid in self.position:
                continue
            worker = str(getattr(getattr(node, "gateway", None), "id", None) or "main")
            seq = self.order.setdefault(worker, [])
            self.position[nodeid] = (worker, len(seq))
            seq.append(nodeid)
        self._indexed = len(self._ran)

    def predecessors(self, nodeid: str) -> list[str]:
        self._index()
        worker, index = self.position.get(nodeid, ("main", 0))
        return self.order.get(worker, [])[:index]

    def finish(self, entries: list[dict[str, Any]], exitstatus: int, changes_of: Callable[[], ChangedLines]) -> None:
        """Session end on the controller, before the session index and JUnit file are written. ``changes_of``: the
        session's lines changed since the last green run (asked of git once per process, only if something failed)."""
        if self.spectrum is not None:
            self.spectrum.save()  # this process's own measurement ends before anything else runs
        if exitstatus == 0:
            from ..engine.gitrev import record_green

            record_green(self.out, self.config.rootpath)
            return
        if exitstatus in (2, 3, 4):  # interrupted, internal error, usage error: nothing to learn by rerunning
            return
        failed = [e for e in entries if e.get("when") in ("setup", "call", "teardown", "crash")]
        seen: set[str] = set()
        todo = [e for e in failed if not (e["nodeid"] in seen or seen.add(e["nodeid"]))]
        if not todo:
            return
        changes = changes_of()  # the session's: read once per process, shared with the failures' diagnoses
        self.changes_note = changes.skipped or ""
        if self.spectrum is not None:
            self._spectrum(todo, changes)
        if self.runs <= 0:  # only --faildiag-cov asked for
            return
        deadline = time.monotonic() + self.budget
        start = time.monotonic()
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and not quiet(self.config):
            tr.write_line(
                f"faildiag: rerunning {min(len(todo), MAX_TESTS)} failed test(s) "
                f"up to {self.runs} time(s) each (--faildiag-rerun 0 turns this off)"
            )
        from .pytest_rerun_child import amend_junit, apply_verdict

        done: list[tuple[int, tuple[dict[str, Any], Verdict, list[dict[str, Any]]]]] = []
        for k, index in enumerate(self._cheapest_first(todo)):
            entry = todo[index]
            try:
                verdict = self._rerun_one(entry, k, deadline, changes)
                suspects = self._suspects(entry, verdict, changes)
                done.append((index, (entry, verdict, suspects)))
                apply_verdict(self.out, entry, verdict, suspects, changes)
            except KeyboardInterrupt:
                break
            except Exception as exc:
                from .pytest_warn import warn

                warn(f"faildiag: rerun of {entry['nodeid']} failed: {type(exc).__name__}: {exc}")
        self.results = [result for _, result in sorted(done, key=lambda d: d[0])]  # shown in session order
        self.cost = time.monotonic() - start
        amend_junit(self.config, self.results)

    def _spectrum(self, todo: list[dict[str, Any]], changes: Any) -> None:
        """``--faildiag-cov``: rank the session's lines by Ochiai over its passing and failing tests; each
        failed test's report gets the ranked lines it ran itself."""
        from ..engine.changes import rank_spectrum
        from .pytest_rerun_child import _lines_run_by, apply_spectrum

        try:
            executed = self.spectrum.executed()
            outcomes = self.spectrum.outcomes
            self.spectrum_lines = rank_spectrum(
                executed,
                outcomes,
                root=self.config.rootpath,
                exclude=self.spectrum.test_files(),
                changes=changes,
            )
            self.spectrum_totals = (
                sum(o == "failed" for o in outcomes.values()),
                sum(o == "passed" for o in outcomes.values()),
            )
            if not self.spectrum_lines:
                return
            for entry in todo:
                ran = _lines_run_by(executed, entry["nodeid"], self.config.rootpath)
                mine = [line for line in self.spectrum_lines if (line["file"], line["line"]) in ran]
                if mine:
                    apply_spectrum(self.out, entry, mine, self.spectrum_totals)
        except Exception as exc:
            from .pytest_warn import warn

            warn(f"faildiag: --faildiag-cov ranking failed: {type(exc).__name__}: {exc}")

    def _cheapest_first(self, todo: list[dict[str, Any]]) -> list[int]:
        """Indexes of ``todo``, quickest test first (its duration in the session; unknown, e.g. a crashed
        worker's test, last): the budget then covers as many failures as it can, and one slow test (a
        ``torchrun`` job) cannot use it up before the cheap order-dependent or intermittent ones."""

        def cost(i: int) -> float:
            duration = self.info.get(todo[i]["nodeid"], {}).get("duration")
            return float(duration) if isinstance(duration, int | float) else float("inf")

        return sorted(range(len(todo)), key=cost)

    def _rerun_one(self, entry: dict[str, Any], k: int, deadline: float, changes: Any) -> Verdict:
        from .pytest_rerun_child import RunResult, Verdict, decide, run_child

        nodeid = entry["nodeid"]
        info = self.info.get(nodeid, {})
        if info.get("skip"):
            return Verdict("not_run", detail="marked faildiag_no_rerun")
        if k >= MAX_TESTS:
            return Verdict("not_run", detail=f"only {MAX_TESTS} failed tests are rerun (the quickest first)")
        limit = info.get("timeout") or max(30.0, 4 * float(info.get("duration") or 0) + 10)
        if time.monotonic() + 1.0 > deadline:
            return Verdict("not_run", detail="the rerun time budget ran out (ini faildiag_rerun_budget)")
        base = self.out / (entry.get("slug") or "unknown") / "rerun"
        cov_files = changes.files() if not changes.skipped else None

        def run(nodeids: list[str], label: str, with_cov: bool) -> RunResult:
            if time.monotonic() > deadline:
                return RunResult("not_run", 0.0, "the rerun time budget ran out")
            return run_child(
                self.config,
                nodeids,
                nodeid,
                base / label,
                test_limit=float(limit) + 1.0,
                deadline=deadline,
                coverage_of=cov_files if with_cov else None,
            )

        return decide(nodeid, self.predecessors(nodeid), self.runs, run)

    def _suspects(self, entry: dict[str, Any], verdict: Verdict, changes: Any) -> list[dict[str, Any]]:
        if verdict.coverage is None or changes.skipped:
            return []
        from ..engine.changes import executed_lines, rank_suspects

        tb = []
        if entry.get("file") and entry.get("line"):
            tb.append((str(self.config.rootpath / entry["file"]), int(entry["line"])))
        return rank_suspects(executed_lines(verdict.coverage), changes, traceback_lines=tb)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if not self.controller or quiet(config) or not (self.results or self.spectrum_lines):
            return  # nothing rerun or ranked (a passing session): the machinery is never imported
        try:
            from .pytest_rerun_child import spectrum_lines, summary_lines

            lines = summary_lines(self.results, self.cost, self.changes_note) if self.results else []
            if self.spectrum_lines:
                lines += spectrum_lines(self.spectrum_lines, self.spectrum_totals)
            for line in lines:
                terminalreporter.write_line(line)
        except Exception as exc:
            terminalreporter.write_line(f"faildiag: warning: rerun summary failed: {exc}")


def register(
    config: pytest.Config, out: Path, controller: bool, timeout: Callable[[pytest.Item], float | None]
) -> RerunPlugin | None:
    """Called by the session when ``--faildiag`` is on; nothing is registered with reruns off."""
    runs = rerun_count(config)
    workerinput = getattr(config, "workerinput", None)
    worker = workerinput.get("workerid") if isinstance(workerinput, dict) else None
    spectrum = None
    if config.getoption("faildiag_cov", False):  # pytest_spectrum.wanted: not imported by every session
        from .pytest_spectrum import register as register_spectrum

        spectrum = register_spectrum(config, out, None if controller else str(worker or "worker"))
    if runs <= 0 and spectrum is None:
        return None
    plugin = RerunPlugin(config, runs, out, controller, timeout)
    plugin.spectrum = spectrum
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    return plugin
