"""An installed pytest plugin that fails while pytest runs it (issue 13, pytk3).

pytest loads an installed plugin (``site-packages/pytest_<name>``) and calls its hooks and collectors
itself. An error whose frames are all installed packages', one of them such a plugin's, was raised with no
test's or program's code on the stack: the plugin's release (or its fit with the installed pytest) is the
home, not the test module pytest was collecting (``raiser:pytest_plugin`` in ``engine/reason.py``).

The plugin here is real: a module in a real ``site-packages`` folder of ``tmp_path``, loaded by a real
pytest subprocess with ``-p``; the train log is from the thread corpus's train split.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import train_log

# a collector plugin whose collect() reads an attribute its own node never had (the kind of break a pytest
# release that renamed a node attribute causes in a plugin written for the older one)
_PLUGIN = """
    import pytest


    class TxtModule(pytest.File):
        def collect(self):
            flags = self.option_flags  # never set on this node
            yield from ()


    def pytest_collect_file(file_path, parent):
        if file_path.suffix == ".txt":
            return TxtModule.from_parent(parent, path=file_path)
"""


def _run_pytest(tmp_path: Path, plugin: str | None) -> tuple[str, int]:
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "pytest_txtcheck.py").write_text(textwrap.dedent(_PLUGIN))
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("PYTEST_ADDOPTS", None)
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:faildiag", "-q"]
    if plugin:
        args += ["-p", plugin]
    p = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    return p.stdout + p.stderr, p.returncode


def _checks(diag) -> set[str]:
    return {v.name for c in diag.root_causes for v in c.validation_checks}


def test_a_plugins_collector_that_breaks_is_the_plugins_not_the_tests(tmp_path):
    """The plugin's collector raises on a file pytest handed it: a collection error, every frame pytest's
    or the plugin's. The plugin (a library) leads, not the tests."""
    out, rc = _run_pytest(tmp_path, "pytest_txtcheck")
    assert rc != 0, out
    assert "'TxtModule' object has no attribute 'option_flags'" in out
    assert "site-packages/pytest_txtcheck.py" in out.replace("\\", "/")
    diag = diagnose(texts={"stdout": out}, exit_code=rc)
    assert "context:raiser:pytest_plugin" in _checks(diag)
    assert diag.root_causes[0].category == "library"


def test_a_tests_own_error_is_not_a_plugins(tmp_path):
    """Without the plugin the same run's failing test raises in its own code: the fact does not hold."""
    (tmp_path / "test_bad.py").write_text("def test_bad():\n    {}['k']\n")
    out, rc = _run_pytest(tmp_path, None)
    assert rc == 1, out
    diag = diagnose(texts={"stdout": out}, exit_code=rc)
    assert "context:raiser:pytest_plugin" not in _checks(diag)


def test_train_log_pytest_sphinx_collector_under_pytest8():
    """pytest-sphinx 0.5.0's doctest collector called pytest 8's get_optionflags with a node that has no
    getini: the plugin's release, which its maintainers fixed; the label says library."""
    diag, label = train_log("pytest_python/py_pr6_pytest_sphinx_getini_attributeerror_pytest8_plugin_incompat")
    assert label["category"] == "library"
    assert "context:raiser:pytest_plugin" in _checks(diag)
    assert diag.root_causes[0].category == "library"
