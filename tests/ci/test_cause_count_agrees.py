"""Every view of one real ``pytest --faildiag`` session counts the same causes.

Two failures no rule recognises, with different errors, are two causes; two with the same error are one.
The terminal summary, ``session.json``, the HTML report, the GitHub job summary, GitLab Code Quality,
``faildiag report`` (text and JSON) and fix mode all group through ``store.group_by_cause``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.commands.fix import propose_for_session

TESTS = """
class Jammed(Exception):
    pass


def test_passes():
    assert True


def test_jammed():
    raise Jammed("the frobnicator jammed on its third gear")


def test_overflowed():
    raise Jammed("quux overflowed the blorp")


def test_drift_once():
    raise RuntimeError("flux capacitor drift")


def test_drift_again():
    raise RuntimeError("flux capacitor drift")
"""


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def session(pytester: pytest.Pytester) -> tuple[pytest.RunResult, Path]:
    pytester.makepyfile(test_causes=TESTS)
    out = pytester.path / "faildiag-out"
    result = pytester.runpytest_subprocess(
        "--faildiag",
        f"--faildiag-out={out}",
        "--faildiag-html=report.html",
        "--faildiag-gitlab=cq.json",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=1, failed=4)
    return result, out


def test_terminal_html_github_gitlab_report_and_fix_mode_count_the_same_causes(session, pytester, tmp_path):
    result, out = session
    expected = 3  # two different Jammed errors, and one RuntimeError seen twice

    terminal = [ln for ln in result.outlines if re.fullmatch(r"\d+ failures?, \d+ causes?:", ln)]
    assert terminal == [f"4 failures, {expected} causes:"]

    index = json.loads((out / "session.json").read_text())
    assert len(index["groups"]) == expected
    assert sorted(g["count"] for g in index["groups"]) == [1, 1, 2]

    html = (pytester.path / "report.html").read_text()
    assert f"4 failures · {expected} causes" in html

    issues = json.loads((pytester.path / "cq.json").read_text())
    assert len(issues) == 4
    assert {re.match(r"cause (\d+) of (\d+)", i["content"]["body"]).groups() for i in issues} == {
        (str(n), str(expected)) for n in range(1, expected + 1)
    }

    text = _cli("report", str(out), cwd=pytester.path)
    assert text.returncode == 0, text.stderr
    assert f"4 failed test(s), {expected} cause(s)" in text.stdout

    as_json = _cli("report", str(out), "--format", "json", cwd=pytester.path)
    assert len(json.loads(as_json.stdout)["groups"]) == expected

    summary = tmp_path / "summary.md"
    gh = _cli("report", str(out), "--format", "github", cwd=pytester.path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert gh.returncode == 0, gh.stderr
    assert f"## faildiag: 4 failed tests, {expected} causes" in summary.read_text()

    proposals = propose_for_session(out, write=lambda line: None, cwd=str(pytester.path))
    assert len(proposals) == 4 and len({p["cause"] for p in proposals}) == expected


def test_the_pair_with_the_same_error_is_the_group_of_two_everywhere(session, pytester):
    result, out = session
    index = json.loads((out / "session.json").read_text())
    pair = next(g for g in index["groups"] if g["count"] == 2)
    assert sorted(pair["tests"]) == ["test_causes.py::test_drift_again", "test_causes.py::test_drift_once"]
    # the terminal lists the pair under one cause line, with both tests below it
    lines = result.outlines
    head = next(i for i, ln in enumerate(lines) if "flux capacitor drift" in ln and ": 2 test(s)" in ln)
    assert {lines[head + 1].split()[0], lines[head + 2].split()[0]} == set(pair["tests"])
    # and every entry carries the error that told the causes apart, as data
    assert {t["error"] for t in index["tests"]} == {
        "test_causes.Jammed: the frobnicator jammed on its third gear",
        "test_causes.Jammed: quux overflowed the blorp",
        "RuntimeError: flux capacitor drift",
    }
