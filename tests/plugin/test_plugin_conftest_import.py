"""A conftest that does not import stops pytest before its session (exit status 4): ``--faildiag`` still says
why, on stderr, and changes nothing else."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("isolated")


def _project(pytester: pytest.Pytester, conftest: str) -> None:
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text(conftest)
    (sub / "test_sub.py").write_text("def test_ok():\n    pass\n")


def test_a_conftest_that_needs_a_missing_package_is_diagnosed(pytester: pytest.Pytester) -> None:
    _project(pytester, "import absent_helpers_pkg_x1\n")
    with_plugin = pytester.runpytest_subprocess("--faildiag", "-p", "no:cacheprovider", "sub", timeout=180)
    assert with_plugin.ret == pytest.ExitCode.USAGE_ERROR  # pytest's own status, unchanged
    err = with_plugin.stderr.str()
    assert "conftest.py did not import" in err and "absent_helpers_pkg_x1" in err, err
    assert "[environment," in err, err
    assert "ImportError while loading conftest" in err  # pytest's own report follows, as without the plugin
    without = pytester.runpytest_subprocess("-p", "no:cacheprovider", "sub", timeout=180)
    assert without.ret == pytest.ExitCode.USAGE_ERROR
    assert "did not import" not in without.stderr.str() + without.stdout.str()


def test_a_conftest_whose_own_code_raises_points_at_the_project(pytester: pytest.Pytester) -> None:
    _project(pytester, "import os\n\nROOT = os.path.dirname(__file__)\nDATA = os.path.join(ROOT, DATA_DIR_NAME)\n")
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:cacheprovider", "sub", timeout=180)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    first = result.stderr.str().splitlines()[0]
    assert "conftest.py did not import" in first and "DATA_DIR_NAME" in first, first
    assert "[environment," not in first and "[library," not in first, first
