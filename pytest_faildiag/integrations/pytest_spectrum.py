"""``--faildiag-cov``: per-test coverage of the session, so failures can be ranked by a spectrum score.

Why: when several tests fail, the lines all of them ran and the passing tests did not are where the fault
most likely is (Ochiai, ``engine.changes.rank_spectrum``); that needs to know which test ran which line,
in the session itself, passing tests included. Only asked for (coverage has a cost on every test).

Each process that runs tests (the only one, or each pytest-xdist worker) measures the project's files
(under the rootdir, not installed packages nor faildiag) with ``coverage``'s Python API and one context
per test, ``test:<nodeid>``; its data file goes under ``<out>/.faildiag-cov/``. The controller records
each test's outcome and, at session end, reads every process's data. Another active coverage
measurement (pytest-cov) is left alone: faildiag then measures nothing and says so.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ..engine.changes import TEST_CONTEXT_PREFIX
from .pytest_warn import warn

COV_DIR = ".faildiag-cov"
PLUGIN_NAME = "faildiag-spectrum"


def wanted(config: pytest.Config) -> bool:
    return bool(config.getoption("faildiag_cov", False))


class SpectrumCollector:
    """Registered in every process with ``--faildiag-cov``; measures where tests run, tallies outcomes on
    the controller."""

    def __init__(self, config: pytest.Config, out: Path, worker: str | None) -> None:
        self.config, self.out, self.worker = config, out, worker
        self.cov: Any = None
        self.outcomes: dict[str, str] = {}
        self.note = ""
        if worker is None:  # a new session: the previous one's per-process files would mix in
            shutil.rmtree(out / COV_DIR, ignore_errors=True)

    @property
    def data_dir(self) -> Path:
        return self.out / COV_DIR

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Start before collection, not in an xdist controller (its workers run the tests)."""
        if self.config.pluginmanager.hasplugin("dsession"):
            return
        try:
            self.start()
        except Exception as exc:
            self.note = f"coverage not started: {type(exc).__name__}: {exc}"
            warn(f"faildiag: --faildiag-cov: {self.note}", self.config)

    def start(self) -> None:
        import coverage

        if coverage.Coverage.current() is not None:
            self.note = "another coverage measurement (pytest-cov's --cov?) is active: no ranking"
            warn(f"faildiag: --faildiag-cov: {self.note}", self.config)
            return
        from ..fsio import ensure_output_root

        ensure_output_root(self.out)
        self.data_dir.mkdir(exist_ok=True)
        root = str(self.config.rootpath)
        own = str(Path(__file__).resolve().parents[1])
        self.cov = coverage.Coverage(
            data_file=str(self.data_dir / f"cov.{self.worker or 'main'}"),
            include=[os.path.join(root, "*")],
            omit=["*/site-packages/*", "*/dist-packages/*", os.path.join(own, "*"), os.path.join(str(self.out), "*")],
            branch=False,
            config_file=False,
        )
        self.cov.start()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.cov is not None:
            self.cov.switch_context(f"{TEST_CONTEXT_PREFIX}{nodeid}")

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.cov is not None:
            self.cov.switch_context("")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: a test failed if any phase failed, passed if its call passed."""
        if self.worker is not None:
            return
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.when == "call" and report.passed:
            self.outcomes.setdefault(report.nodeid, "passed")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.save()  # on a worker before it reports itself finished to the controller

    def save(self) -> None:
        if self.cov is None:
            return
        cov, self.cov = self.cov, None
        try:
            cov.stop()
            cov.save()
        except Exception as exc:
            warn(f"faildiag: --faildiag-cov: coverage data not saved: {type(exc).__name__}: {exc}")

    def executed(self) -> dict[str, dict[int, set[str]]]:
        """Every process's lines with the tests that ran them (merged)."""
        from ..engine.changes import executed_lines

        merged: dict[str, dict[int, set[str]]] = {}
        for data in sorted(self.data_dir.glob("cov.*")):
            try:
                for path, lines in executed_lines(data).items():
                    into = merged.setdefault(path, {})
                    for n, contexts in lines.items():
                        into.setdefault(n, set()).update(contexts)
            except Exception as exc:
                warn(f"faildiag: --faildiag-cov: {data.name} unreadable: {type(exc).__name__}: {exc}")
        return merged

    def test_files(self) -> set[str]:
        """The files tests were collected from: left out of the ranking."""
        root = self.config.rootpath
        return {str(root / nodeid.split("::")[0]) for nodeid in self.outcomes}


def register(config: pytest.Config, out: Path, worker: str | None) -> SpectrumCollector | None:
    if not wanted(config):
        return None
    collector = SpectrumCollector(config, out, worker)
    config.pluginmanager.register(collector, PLUGIN_NAME)
    return collector
