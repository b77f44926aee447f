"""The ``pytest11`` entry of pytest-faildiag: options, faildiag's hookspecs (``pytest_addhooks``), one
fixture, and a ``pytest_configure`` that registers the real machinery
(``integrations.pytest_session.FaildiagSession``) only when it is asked for.

Without ``--faildiag`` (or ini ``faildiag = true``) nothing else is imported and no hook of ours runs per
test; ``-p no:faildiag`` removes even this module. See docs/pytest-plugin.md; for the
``pytest_faildiag_*`` hooks a conftest.py may implement, see ``hookspecs.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .capture.subproc import CapturedRun

PLUGIN_NAME = "faildiag-session"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Make faildiag's hooks (rule packs, checks, evidence) pytest hooks: conftest files and plugins
    implement them as they implement any other, and the engine calls them through ``config.hook``."""
    _skip_assert_rewrite(pluginmanager)
    from . import hookspecs  # pluggy only: cheap

    pluginmanager.add_hookspecs(hookspecs)


def _skip_assert_rewrite(pluginmanager: pytest.PytestPluginManager) -> None:
    """Load the rest of this package through Python's own import system, not pytest's assertion rewriter.

    Why: pytest marks the whole package of an installed plugin for assertion rewriting, and loads each
    module so marked through its own hook, which re-finds the file, hashes its source and reads its cached
    code with ``marshal.load`` on a file object: several times what the module's own import costs, in every
    session (about half of what a passing ``pytest --faildiag`` session added, bench_plugin_overhead.py).
    This package holds no tests and no assert whose message anyone reads. ``PYTEST_DONT_REWRITE`` in a
    docstring does not help: it only skips rewriting the code, the module still goes through that hook.
    This module and the package's ``__init__`` are loaded by then (they stay rewritten); a conftest that
    calls ``pytest.register_assert_rewrite("pytest_faildiag")`` marks it again. The hook's attributes are
    pytest's own: where they are not what this expects, nothing changes."""
    hook = getattr(pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    package = __name__.rpartition(".")[0]
    if isinstance(marked, set) and package in marked and isinstance(cache, dict):
        marked.discard(package)
        cache.clear()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("faildiag", "evidence-backed diagnoses of failed tests")
    group.addoption(
        "--faildiag",
        action="store_true",
        default=None,
        help="diagnose every failed or errored test (report section, junit properties, snapshot)",
    )
    group.addoption(
        "--faildiag-out",
        default=None,
        metavar="DIR",
        help="where snapshots, session.json and journal.jsonl go (default ./faildiag-out)",
    )
    group.addoption(
        "--faildiag-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fail a test that runs longer, after dumping every thread's stack and the process tree",
    )
    group.addoption("--faildiag-html", default=None, metavar="FILE", help="write an HTML report of the session")
    group.addoption(
        "--faildiag-gitlab",
        default=None,
        metavar="FILE",
        help="write a GitLab Code Quality report of the failures (artifacts:reports:codequality)",
    )
    group.addoption(
        "--faildiag-github",
        action="store_true",
        default=False,
        help="emit GitHub Actions annotations even outside GITHUB_ACTIONS",
    )
    group.addoption(
        "--faildiag-fix",
        action="store_true",
        default=False,
        help="propose a fix for each diagnosed failure at session end (never applied)",
    )
    group.addoption(
        "--faildiag-rerun",
        type=int,
        default=None,
        metavar="N",
        help="rerun each failed test N times alone at session end: deterministic, intermittent or "
        "order-dependent (default 2, 0 = off)",
    )
    group.addoption(
        "--faildiag-cov",
        action="store_true",
        default=False,
        help="measure per-test coverage and rank the lines failing tests ran by Ochiai (passing vs failing)",
    )
    group.addoption(
        "--faildiag-factory",
        default=None,
        metavar="DIR",
        help="the team's known-issue cards, cited as supporting evidence (docs/factory.md)",
    )
    parser.addini("faildiag", "turn faildiag on (like --faildiag)", type="bool", default=False)
    parser.addini("faildiag_rerun", "reruns of each failed test (like --faildiag-rerun)", default="2")
    parser.addini("faildiag_rerun_budget", "seconds all reruns of a session may take", default="120")
    parser.addini("faildiag_out", "output folder for faildiag (like --faildiag-out)", default="faildiag-out")
    parser.addini("faildiag_timeout", "hang timeout in seconds (like --faildiag-timeout)", default="")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, args: list[str], parser: pytest.Parser
) -> Iterator[None]:
    """``--faildiag-out DIR`` (value after a space, folder present) must not move the rootdir: pytest's
    first parse, made before this plugin loaded, took DIR for a test path (integrations.pytest_args)."""
    try:
        if any(a.startswith("--faildiag-") and "=" not in a for a in args):
            from .integrations.pytest_args import repair_early_parse

            repair_early_parse(early_config, args)
    except Exception as exc:  # a faildiag option problem must not stop pytest from starting: warn instead
        import warnings

        warnings.warn(
            pytest.PytestWarning(
                f"faildiag: could not check how pytest read the faildiag options "
                f"({type(exc).__name__}: {exc}); write --faildiag-out=DIR"
            ),
            stacklevel=1,
        )
    try:
        return (yield)
    except BaseException as exc:  # a conftest that does not import: say why, then let pytest report it as usual
        if enabled(early_config, early_config.known_args_namespace):  # the plugin's options: known by the early parse
            from .integrations.pytest_conftest import report_conftest_failure

            report_conftest_failure(early_config, exc)
        raise


def enabled(config: pytest.Config, early_args: object = None) -> bool:
    """``--faildiag`` (or the ini value). ``early_args``: the early parse's namespace, before pytest set options."""
    opt = config.getoption("faildiag", None) if early_args is None else getattr(early_args, "faildiag", None)
    if opt is not None:
        return bool(opt)
    try:
        return bool(config.getini("faildiag"))
    except (ValueError, KeyError):
        return False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "faildiag_timeout(seconds): with --faildiag, fail this test after SECONDS "
        "with every thread's stack dumped (overrides --faildiag-timeout)",
    )
    config.addinivalue_line(
        "markers",
        "faildiag_no_rerun: with --faildiag, never rerun this test to tell "
        "a flaky failure from a deterministic one (not safe to repeat)",
    )
    if not enabled(config):
        return
    try:
        from .integrations.pytest_session import FaildiagSession

        config.pluginmanager.register(FaildiagSession(config), PLUGIN_NAME)
    except Exception as exc:  # the diagnosis tool must never stop the test run: it becomes a warning
        import warnings

        warnings.warn(pytest.PytestWarning(f"faildiag disabled: {type(exc).__name__}: {exc}"), stacklevel=1)


@pytest.fixture
def faildiag_run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., CapturedRun]]:
    """Run a command with full capture (stdout/stderr to files under ``tmp_path``, exit status, signal).

    ``faildiag_run(["torchrun", ...], timeout=60)`` returns a ``CapturedRun``; it never raises on a
    failing command, so assert on ``.returncode`` / ``.ok`` and use ``.describe()`` in the message. When
    the test fails, what the command wrote is read as evidence for its diagnosis (with ``--faildiag``).
    """
    from .capture.subproc import run_captured
    from .integrations.pytest_session import RUNS_KEY

    runs: list[Any] = []
    request.node.stash[RUNS_KEY] = runs
    session = request.config.pluginmanager.get_plugin(PLUGIN_NAME)

    def _run(
        argv: Any,
        *,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        cwd: Any = None,
        name: str | None = None,
    ) -> CapturedRun:
        label = name or f"run{len(runs) + 1}"
        out_dir = tmp_path / "faildiag-run"
        if session is not None:
            session.note_run_started(request.node, out_dir / f"{label}.stdout", out_dir / f"{label}.stderr")
        result = run_captured(argv, out_dir, name=label, timeout=timeout, env=env, cwd=cwd)
        runs.append(result)
        return result

    yield _run
