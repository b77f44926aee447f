"""``engine.changes``: real git repositories, real coverage data and real pytest sessions."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from pytest_faildiag.engine.changes import (
    changed_since,
    code_changes,
    executed_lines,
    green_revision,
    head_revision,
    head_revision_fast,
    ochiai,
    parse_unified_zero,
    rank_suspects,
    record_green,
)
from pytest_faildiag.integrations.pytest_session import is_test_path

from .conftest import entry_for, git, session_index


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


def test_the_revision_read_from_files_is_gits_in_every_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``head_revision_fast`` (no git process at a green session's end) answers what ``git rev-parse HEAD``
    answers: a branch's loose ref, the same branch after ``git pack-refs``, a detached HEAD, a linked
    worktree on its own branch, a sub-folder, a repository without commits and a folder in no repository (or the one around it)."""
    monkeypatch.delenv("GIT_DIR", raising=False)
    root = _repo(tmp_path)
    (root / "pkg" / "new.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "second")
    wt = tmp_path / "wt"
    git(root, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "side.py").write_text("y = 2\n")
    git(wt, "add", ".")
    git(wt, "commit", "-qm", "on side")
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [root, root / "pkg", wt, empty, plain]
    seen = [(head_revision_fast(p), head_revision(p)) for p in cases]
    git(root, "pack-refs", "--all")  # the branch moves from refs/heads/ into packed-refs
    assert not (root / ".git" / "refs" / "heads" / "side").exists()
    seen += [(head_revision_fast(p), head_revision(p)) for p in (root, wt)]
    git(root, "checkout", "-q", "--detach", "HEAD~1")
    seen.append((head_revision_fast(root), head_revision(root)))
    for fast, slow in seen:
        assert fast == slow
    assert seen[0][0] != seen[2][0] and seen[3][0] is None  # the worktree's own branch; no commit yet
    assert seen[7][0] == git(root, "rev-parse", "HEAD~0") and seen[7][0] != seen[0][0]


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


def _shop(pytester: pytest.Pytester) -> Path:
    """A project whose one test passed at its first commit (recorded as the last green run); reruns off, so the
    per-test diagnosis alone decides (the rerun's verdict would name the changed line it ran)."""
    pytester.mkpydir("shop")
    cart = pytester.path / "shop" / "cart.py"
    cart.write_text("def total(items):\n    return sum(price * qty for price, qty in items)\n")
    pytester.makepyfile(
        test_cart="from shop.cart import total\n\n\ndef test_total():\n    assert total([(2, 3)]) == 6\n"
    )
    (pytester.path / ".gitignore").write_text("faildiag-out/\n__pycache__/\n")
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", ".")
    git(pytester.path, "commit", "-qm", "green")
    pytester.runpytest("--faildiag", "--faildiag-rerun", "0", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    return cart


def _top_and_check(pytester: pytest.Pytester) -> tuple[str, dict[str, dict[str, str]]]:
    """The failing test's leading category and, per category, its ``code-changed-since-green`` check."""
    result = pytester.runpytest("--faildiag", "--faildiag-rerun", "0", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)  # the outcome is pytest's own
    slug = entry_for(session_index(pytester.path), "test_total")["slug"]
    report = json.loads((pytester.path / "faildiag-out" / slug / "report.json").read_text(encoding="utf-8"))
    checks = {
        c["category"]: v
        for c in report["root_causes"]
        for v in c.get("validation_checks", [])
        if v["name"] == "code-changed-since-green"
    }
    return report["root_causes"][0]["category"], checks


def test_an_assertion_after_the_code_changed_under_an_unchanged_test_names_the_code(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAILDIAG_RERUN", raising=False)
    cart = _shop(pytester)
    green = git(pytester.path, "rev-parse", "HEAD")
    cart.write_text(cart.read_text().replace("price * qty", "price * (qty + 1)"))  # uncommitted, as in a branch
    top, checks = _top_and_check(pytester)
    assert top == "model"
    assert checks["model"]["status"] == "passed" and checks["test_code"]["status"] == "failed"
    assert checks["model"]["detail"] == (
        f"the test is unchanged since the last green run at {green[:12]}; the code changed: shop/cart.py"
    )


def test_an_assertion_after_only_the_test_changed_names_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAILDIAG_RERUN", raising=False)
    _shop(pytester)
    test = pytester.path / "test_cart.py"
    test.write_text(test.read_text().replace("== 6", "== 7"))
    git(pytester.path, "commit", "-qam", "expect seven")
    top, checks = _top_and_check(pytester)
    assert top == "test_code"
    assert checks["test_code"]["status"] == "passed" and checks["model"]["status"] == "failed"
    assert "only the tests changed" in checks["test_code"]["detail"] and "test_cart.py" in checks["test_code"]["detail"]


def test_code_changes_tell_the_tests_side_from_the_codes(tmp_path: Path) -> None:
    """A conftest is the tests' side (its fixtures feed every test); another test module is neither side of
    this test; nothing to compare without a green run."""
    root = _repo(tmp_path)
    green = git(root, "rev-parse", "HEAD")
    (root / "tests").mkdir()
    (root / "tests" / "conftest.py").write_text("X = 1\n")
    (root / "tests" / "test_other.py").write_text("def test_o():\n    pass\n")
    mine = str(root / "tests" / "test_mine.py")
    changes = changed_since(root, green)
    is_test = partial(is_test_path, ["test_*.py"])
    assert code_changes(changes, mine, is_test) == {
        "revision": green,
        "code": [],
        "tests": ["tests/conftest.py", "tests/test_other.py"],
        "test_changed": True,
    }
    (root / "tests" / "conftest.py").unlink()
    assert code_changes(changed_since(root, green), mine, is_test)["test_changed"] is False  # type: ignore[index]
    assert code_changes(changed_since(root, None), mine, is_test) is None


def test_test_paths_follow_pytests_python_files_and_the_tests_folders() -> None:
    assert is_test_path(["test_*.py", "*_test.py"], "pkg/mod_test.py")
    assert is_test_path(["test_*.py"], "tests/helpers.py")  # a helper of the tests' folder
    assert is_test_path(["check_*.py"], "src/check_mod.py")
    assert not is_test_path(["test_*.py"], "src/testing_utils.py")
    assert not is_test_path(["test_*.py"], "src/contest.py")
