"""``engine.changes``: real git repositories and real coverage data, and one real pytest session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.changes import (
    changed_since,
    executed_lines,
    green_revision,
    ochiai,
    parse_unified_zero,
    rank_suspects,
    record_green,
)

from .conftest import git


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def f(x):\n    y = x + 1\n    return y\n\n\ndef g():\n    return 0\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    return root


def test_changed_lines_cover_commits_uncommitted_edits_and_new_files(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    out = tmp_path / "out"
    green = record_green(out, root)
    assert green == green_revision(out) == git(root, "rev-parse", "HEAD")
    mod = root / "pkg" / "mod.py"
    mod.write_text(mod.read_text().replace("x + 1", "x + 2"))
    git(root, "commit", "-qam", "change")
    mod.write_text(mod.read_text().replace("return 0", "return 1"))  # uncommitted
    (root / "pkg" / "new.py").write_text("A = 1\nB = 2\n")  # untracked
    changes = changed_since(root, green)
    assert changes.skipped is None
    assert changes.lines[str(root / "pkg" / "mod.py")] == {2, 7}
    assert changes.lines[str(root / "pkg" / "new.py")] == {1, 2}


def test_each_reason_to_skip_is_said(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "not in a git repository" in (changed_since(plain, "abc1234").skipped or "")
    root = _repo(tmp_path)
    assert "no last green run" in (changed_since(root, green_revision(tmp_path / "none")).skipped or "")
    gone = changed_since(root, "0123456789abcdef0123456789abcdef01234567").skipped or ""
    assert "no longer in the history" in gone
    assert "nothing changed" in (changed_since(root, git(root, "rev-parse", "HEAD")).skipped or "")


def test_a_pure_deletion_marks_the_line_after_it() -> None:
    diff = (
        "diff --git a/p.py b/p.py\n--- a/p.py\n+++ b/p.py\n@@ -3,2 +2,0 @@\n-a\n-b\n"
        "@@ -9 +8,3 @@\n-c\n+d\n+e\n+f\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    assert parse_unified_zero(diff) == {"p.py": {3, 8, 9, 10}}


def test_the_changed_line_the_code_ran_is_ranked_from_real_coverage(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    green = git(root, "rev-parse", "HEAD")
    mod = root / "pkg" / "mod.py"
    mod.write_text(mod.read_text().replace("x + 1", "x + 2").replace("return 0", "return 1"))
    data = tmp_path / "cov.data"
    script = (
        f"import coverage, sys; sys.path.insert(0, {str(root)!r})\n"
        f"c = coverage.Coverage(data_file={str(data)!r}, config_file=False); c.start(); c.switch_context('import')\n"
        "import pkg.mod\nc.switch_context('test:t'); pkg.mod.f(1); c.stop(); c.save()\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    suspects = rank_suspects(executed_lines(data), changed_since(root, green), traceback_lines=[(str(mod), 2)])
    assert suspects == [{"file": "pkg/mod.py", "line": 2, "changed_since": green, "score": 1.0}]  # g() never ran


def test_ochiai_prefers_lines_only_failing_tests_ran() -> None:
    assert ochiai(2, 2, 0) == 1.0
    assert ochiai(2, 2, 6) < ochiai(1, 2, 0) < 1.0
    assert ochiai(0, 2, 3) == 0.0


def test_a_green_session_with_reruns_off_still_records_its_revision(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAILDIAG_RERUN", "0")
    pytester.makepyfile(test_ok="def test_ok():\n    assert True\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-qm", "green")
    result = pytester.runpytest_subprocess("--faildiag")
    assert result.ret == 0
    assert green_revision(pytester.path / "faildiag-out") == git(pytester.path, "rev-parse", "HEAD")
