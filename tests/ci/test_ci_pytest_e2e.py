"""A real ``pytest --faildiag`` session under GITHUB_ACTIONS=true: annotations, summary, HTML, Code Quality."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.ci.test_ci_github import errors, parse

TESTS = r"""
import pytest


def test_passes():
    assert True


def test_percent_colon_comma():
    raise ValueError("100% broken: a,b,c\nsecond line ::error::injected ::add-mask::x")


@pytest.mark.parametrize("n", range(12))
def test_same_cause(n):
    raise KeyError(f"missing column label_{n}")


def test_shapes():
    a, b = (64, 256), (128, 10)
    raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})")
"""


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch, tmp_path: Path):
    pytester.makepyfile(test_ci_e2e=TESTS)
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    out = pytester.path / "faildiag-out"
    result = pytester.runpytest_subprocess(
        "--faildiag",
        f"--faildiag-out={out}",
        "--faildiag-html=report.html",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
    )
    return result, summary, out


def test_a_real_session_on_github_gets_escaped_ranked_annotations_and_a_summary_table(run, pytester):
    result, summary, out = run
    result.assert_outcomes(passed=1, failed=14)  # faildiag never changes an outcome
    lines = [ln for ln in result.outlines if ln.startswith("::")]
    errs = [parse(x) for x in errors(lines)]
    assert 1 <= len(errs) <= 10
    # 14 failures > 10: the 12 identical KeyErrors come first, as one annotation
    name, props, data = errs[0]
    assert props["title"].startswith("12 tests: ")
    assert props["file"] == "test_ci_e2e.py"
    # the message with %, :, , newlines and :: sequences survives the round trip exactly
    pct = next(e for e in errs if "test_percent_colon_comma" in e[2])
    raw = next(x for x in errors(lines) if "test_percent_colon_comma" in x)
    assert "100%25 broken" in raw and "%0A" in raw and "\n" not in raw
    assert "100% broken: a,b,c" in pct[2]
    assert pct[1]["file"] == "test_ci_e2e.py" and pct[1]["line"].isdigit()
    # nothing from the tests' output runs as a command outside stop-commands blocks
    inside = False
    token = None
    for ln in lines:
        if ln.startswith("::stop-commands::"):
            token, inside = ln.split("::")[2], True
        elif inside and ln == f"::{token}::":
            inside = False
        elif not inside:
            assert ln.startswith(("::error ", "::group::", "::endgroup::")), ln
    # the job summary: a Markdown table, biggest cause first
    text = summary.read_text()
    rows = [ln for ln in text.splitlines() if re.match(r"\| \d+ \|", ln)]
    assert text.count("| # | cause | tests | category | confidence | fix hints | snapshot |") == 1
    assert rows and rows[0].split("|")[3].strip() == "12"
    assert sum(int(r.split("|")[3]) for r in rows) == 14
    # the HTML report was written where asked, self-contained
    page = (pytester.path / "report.html").read_text()
    assert "<script" not in page and "12 tests</span>" in page
    assert json.loads((out / "session.json").read_text())["schema"] == "faildiag.session/1"


def test_the_annotations_can_be_rendered_again_from_the_output_folder(run, pytester):
    result, summary, out = run
    again = pytester.run(sys.executable, "-m", "pytest_faildiag.cli", "report", str(out), "--format", "github")
    assert again.ret == 0
    live = [ln for ln in result.outlines if ln.startswith("::error ")]
    assert [ln for ln in again.outlines if ln.startswith("::error ")] == live


def test_a_green_session_on_github_emits_nothing_and_warns_about_nothing(pytester, monkeypatch, tmp_path: Path):
    pytester.makepyfile(test_green="def test_ok():\n    assert True\n")
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess("--faildiag", "--faildiag-html=report.html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    commands = [ln for ln in result.outlines if ln.startswith("::")]
    # the session's own stop/resume pair (everything a session prints is data) is all there is
    assert len(commands) == 2 and commands[0] == f"::stop-commands::{commands[1].strip(':')}", commands
    assert "warning" not in result.stdout.str().lower()
    assert not summary.exists() or "faildiag" not in summary.read_text()
    assert "No failed tests." in (pytester.path / "report.html").read_text()


def test_a_real_session_writes_a_gitlab_code_quality_report(pytester, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    pytester.makepyfile(
        test_cq="def test_boom():\n    raise RuntimeError('mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)')\n"
    )
    result = pytester.runpytest_subprocess(
        "--faildiag", "--faildiag-gitlab=gl-code-quality.json", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    import json

    issues = json.loads((pytester.path / "gl-code-quality.json").read_text())
    assert len(issues) == 1
    assert issues[0]["location"]["path"] == "test_cq.py" and issues[0]["location"]["lines"]["begin"] == 2
    assert issues[0]["check_name"] and issues[0]["fingerprint"] and issues[0]["severity"] in {"major", "critical"}
