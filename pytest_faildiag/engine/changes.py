"""Which change broke it: lines changed since the last green run that the failing test executed.

Why this shape: a CI maintainer's second question about a red test is "what change broke it?". Git knows
what changed since the revision of the last green run; coverage knows which lines the failing test ran.
Their intersection is short and concrete ("the failing test ran ``pkg/mod.py:236``, changed since the last
green run at ``abc1234``"), and each line in it is direct evidence, not an inference from a message.

Every step that cannot run says why (no git repository, no last green run recorded, that revision no
longer in the history, nothing changed) instead of failing. Standard library + ``coverage`` only: this
module knows nothing of pytest (the plugin records the green revision and runs the test under coverage).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store import LAST_GREEN_GIT, LAST_GREEN_LOCK

# the part a passing session needs lives in gitrev (small); its names stay importable from here
from .gitrev import GIT_TIMEOUT as GIT_TIMEOUT
from .gitrev import _git
from .gitrev import head_revision as head_revision
from .gitrev import head_revision_fast as head_revision_fast
from .gitrev import record_green as record_green

GREEN_GIT = LAST_GREEN_GIT
GREEN_LOCK = LAST_GREEN_LOCK  # written by `faildiag run` after a passing run: its git revision counts too
MAX_SUSPECTS = 10
# How much a changed, executed line is suspected, by when it ran: in the failure's own traceback, while the
# test ran, or only while modules were imported (a ``def`` line runs for every test that imports it).
SCORE_TRACEBACK = 1.0
SCORE_TEST = 0.7
SCORE_IMPORT = 0.3
TEST_CONTEXT_PREFIX = "test:"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass
class ChangedLines:
    """Lines changed since ``revision``, keyed by absolute path; ``skipped`` says why there are none."""

    revision: str | None = None
    top: Path | None = None
    lines: dict[str, set[int]] = field(default_factory=dict)
    skipped: str | None = None

    def files(self, suffix: str = ".py") -> list[str]:
        return sorted(p for p, ls in self.lines.items() if ls and p.endswith(suffix))


# ---------------------------------------------------------------------------------------------- git


def repo_top(path: Path) -> Path | None:
    r = _git(["rev-parse", "--show-toplevel"], path)
    if r is None or r.returncode != 0 or not r.stdout.strip():
        return None
    return Path(r.stdout.strip())


def green_revision(out_dir: Path) -> str | None:
    """The revision of the last green run: the plugin's record, else the git revision of the lock that
    ``faildiag run`` keeps after a passing run."""
    for name, path in ((GREEN_GIT, ("revision",)), (GREEN_LOCK, ("git", "revision"))):
        try:
            data: Any = json.loads((Path(out_dir) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for key in path:
            data = data.get(key) if isinstance(data, dict) else None
        if isinstance(data, str) and re.fullmatch(r"[0-9a-fA-F]{7,64}", data):
            return data
    return None


def parse_unified_zero(diff: str) -> dict[str, set[int]]:
    """``git diff -U0`` → new-side line numbers per path (relative to the repository). A pure deletion
    marks the line after it: the code that now runs where the removed lines were."""
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = (
                None if name == "/dev/null" else out.setdefault(name[2:] if name.startswith("b/") else name, set())
            )
            continue
        m = _HUNK.match(line)
        if m and current is not None:
            start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
            current.update(range(start, start + count) if count else (start + 1,))
    return {k: v for k, v in out.items() if v}


def changed_since(root: Path, revision: str | None) -> ChangedLines:
    """Lines changed between ``revision`` and the working tree (committed, staged, unstaged, untracked)."""
    top = repo_top(root)
    if top is None:
        return ChangedLines(revision, skipped=f"{root} is not in a git repository")
    if not revision:
        return ChangedLines(
            revision,
            top,
            skipped="no last green run recorded (a passing `pytest --faildiag` session records its git revision)",
        )
    known = _git(["cat-file", "-e", f"{revision}^{{commit}}"], top)
    if known is None or known.returncode != 0:
        return ChangedLines(
            revision,
            top,
            skipped=f"the last green revision {revision[:12]} is no longer in the history (rebased or shallow clone)",
        )
    diff = _git(["diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", revision, "--"], top)
    if diff is None or diff.returncode != 0:
        return ChangedLines(
            revision,
            top,
            skipped=f"git diff {revision[:12]} failed: {(diff.stderr if diff else 'git not runnable').strip()[:200]}",
        )
    lines = {str(top / rel): ls for rel, ls in parse_unified_zero(diff.stdout).items()}
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], top)
    if untracked is not None and untracked.returncode == 0:
        for rel in filter(None, untracked.stdout.split("\0")):
            lines.setdefault(str(top / rel), set()).update(_all_lines(top / rel))
    result = ChangedLines(revision, top, {k: v for k, v in lines.items() if v})
    if not result.lines:
        result.skipped = f"nothing changed since the last green run at {revision[:12]}"
    return result


def code_changes(changes: ChangedLines, test_file: str | None, is_test: Callable[[str], bool]) -> dict[str, Any] | None:
    """What changed since the last green run on each side of a failing test, for its diagnosis (the check
    ``code-changed-since-green``): the revision, the changed Python files of the code and of the tests
    (relative, ``is_test`` tells them apart), and whether the test's own side changed (its file, or a
    ``conftest.py`` whose fixtures it may use). None when there is nothing to compare (no git repository, no
    green run recorded, nothing changed). Why: a test that passed at that revision and is unchanged, failing
    after the code it tests changed, points at that change; a test edited since, over unchanged code, at the
    test. Which changed line the test ran is the rerun's question (``rank_suspects``): this needs no rerun."""
    if changes.skipped or changes.top is None:
        return None
    own = os.path.realpath(test_file) if test_file else None
    code: list[str] = []
    tests: list[str] = []
    test_side = False
    for path in changes.files():
        rel = _rel(path, changes.top)
        if not is_test(rel):
            code.append(rel)
            continue
        tests.append(rel)
        test_side = test_side or os.path.realpath(path) == own or os.path.basename(path) == "conftest.py"
    if not code and not tests:
        return None
    return {"revision": changes.revision, "code": code, "tests": tests, "test_changed": test_side}


def _all_lines(path: Path) -> set[int]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return set(range(1, sum(1 for _ in f) + 1)) if path.suffix == ".py" else set()
    except OSError:
        return set()


# ---------------------------------------------------------------------------------------------- coverage


def executed_lines(data_file: Path) -> dict[str, dict[int, set[str]]]:
    """Lines a coverage data file recorded, with the contexts each ran in: ``{abs path: {line: contexts}}``."""
    from coverage import CoverageData

    data = CoverageData(basename=str(data_file))
    data.read()
    out: dict[str, dict[int, set[str]]] = {}
    for path in data.measured_files():
        by_line = data.contexts_by_lineno(path)
        out[os.path.realpath(path)] = {int(n): set(ctx) for n, ctx in by_line.items()}
    return out


def rank_suspects(
    executed: Mapping[str, Mapping[int, Iterable[str]]],
    changes: ChangedLines,
    *,
    traceback_lines: Iterable[tuple[str, int]] = (),
    limit: int = MAX_SUSPECTS,
) -> list[dict[str, Any]]:
    """Changed lines the failing run executed, best first, as the contract's ``suspects`` entries."""
    if changes.skipped or changes.top is None:
        return []
    in_tb = {(os.path.realpath(p), n) for p, n in traceback_lines}
    ranked: list[tuple[float, str, int]] = []
    for path, lines in changes.lines.items():
        ran = executed.get(os.path.realpath(path)) or {}
        for n in sorted(lines & set(ran)):
            contexts = set(ran[n])
            if (os.path.realpath(path), n) in in_tb:
                score = SCORE_TRACEBACK
            elif any(c.startswith(TEST_CONTEXT_PREFIX) for c in contexts) or not any(contexts):
                score = SCORE_TEST
            else:
                score = SCORE_IMPORT
            ranked.append((score, path, n))
    ranked.sort(key=lambda t: (-t[0], t[1], t[2]))
    return [
        {"file": _rel(path, changes.top), "line": n, "changed_since": changes.revision, "score": score}
        for score, path, n in ranked[:limit]
    ]


def ochiai(failed_cover: int, total_failed: int, passed_cover: int) -> float:
    """Spectrum score of one line: ``ef / sqrt(F * (ef + ep))`` (1.0 = run by every failing test and no
    passing one). Used when several tests failed and per-test contexts are available."""
    denom = math.sqrt(total_failed * (failed_cover + passed_cover))
    return round(failed_cover / denom, 4) if denom else 0.0


def rank_spectrum(
    executed: Mapping[str, Mapping[int, Iterable[str]]],
    outcomes: Mapping[str, str],
    *,
    root: Path,
    exclude: Iterable[str] = (),
    changes: ChangedLines | None = None,
    limit: int = MAX_SUSPECTS,
) -> list[dict[str, Any]]:
    """Lines ranked by Ochiai over the session's passing and failing tests (per-test coverage contexts
    ``test:<nodeid>``, ``outcomes`` nodeid → ``passed``/``failed``): a line every failing test ran and no
    passing test ran scores 1.0. Why: with several failures, the lines they share and the passing tests
    avoid point at the fault even without a last green run. Test files (``exclude``) are left out: a test's
    own body is always "run only by the failing test". A changed line wins a tie (``changed``: True)."""
    failed = {n for n, o in outcomes.items() if o == "failed"}
    passed = {n for n, o in outcomes.items() if o == "passed"}
    if not failed:
        return []
    skip = {os.path.realpath(p) for p in exclude}
    changed = {os.path.realpath(p): ls for p, ls in changes.lines.items()} if changes and not changes.skipped else {}
    ranked: list[tuple[float, int, bool, str, int, int]] = []
    for path, lines in executed.items():
        real = os.path.realpath(path)
        if real in skip or os.path.basename(real) == "conftest.py":
            continue
        for n, contexts in lines.items():
            tests = {c[len(TEST_CONTEXT_PREFIX) :] for c in contexts if c.startswith(TEST_CONTEXT_PREFIX)}
            ef, ep = len(tests & failed), len(tests & passed)
            if ef:
                ranked.append((ochiai(ef, len(failed), ep), ef, n in changed.get(real, ()), real, n, ep))
    ranked.sort(key=lambda t: (-t[0], -t[1], not t[2], t[3], t[4]))
    return [
        {"file": _rel(path, root), "line": n, "score": score, "failed": ef, "passed": ep, "changed": is_changed}
        for score, ef, is_changed, path, n, ep in ranked[:limit]
    ]


def describe_spectrum(line: Mapping[str, Any], total_failed: int, total_passed: int) -> str:
    changed = ", changed since the last green run" if line.get("changed") else ""
    return (
        f"{line['file']}:{line['line']} Ochiai {line['score']:.2f} (run by {line['failed']} of {total_failed} "
        f"failing and {line['passed']} of {total_passed} passing tests{changed})"
    )


def _rel(path: str, top: Path) -> str:
    try:
        return Path(path).relative_to(top).as_posix()
    except ValueError:
        return path


def describe(suspect: Mapping[str, Any]) -> str:
    rev = str(suspect.get("changed_since") or "")[:12]
    return f"the failing test ran {suspect['file']}:{suspect['line']}, changed since the last green run at {rev}"
