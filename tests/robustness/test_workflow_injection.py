"""Logs that contain GitHub workflow commands or ANSI escape sequences, end to end: a real ``pytest --faildiag``
session under ``GITHUB_ACTIONS=true`` whose failing test prints fake commands at the start of lines (the
shape that GitHub's runner executes), writes them to a log in its ``tmp_path`` and puts them in its exception.
Only faildiag's own commands may reach the runner; everything from the logs is either escaped inside an
annotation's message or echoed inside a ``::stop-commands::`` block with a token the logs cannot guess."""

from __future__ import annotations

import os

import pytest

EVIL = [
    "::error::RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "::set-output name=result::pwned",
    "::add-mask::${{ secrets.X }}",
    "::stop-commands::guessed",
    "::guessed::",
    "::endgroup::",
    "::error file=/etc/passwd,line=1::forged annotation",
    "\x1b[2K\r::warning::erased line",
    "\x1b[31mRuntimeError: CUDA out of memory.\x1b[0m \x1b]8;;https://evil.example\x07click\x1b]8;;\x07",
]

TESTS = f"""
EVIL = {EVIL!r}


def test_prints_workflow_commands(tmp_path):
    (tmp_path / "train.log").write_text("\\n".join(EVIL) + "\\n")
    for line in EVIL:
        print(line)
    raise RuntimeError("CUDA out of memory.\\n" + "\\n".join(EVIL))
"""


def block_tokens(stdout_lines: list[str]) -> list[str]:
    """The tokens of the stop-commands blocks the runner would actually open (at top level)."""
    tokens, token = [], None
    for ln in stdout_lines:
        if token is None and ln.startswith("::stop-commands::"):
            token = ln.split("::")[2]
            tokens.append(token)
        elif token is not None and ln == f"::{token}::":
            token = None
    return tokens


def own_command_lines(stdout_lines: list[str]) -> list[str]:
    """The stdout lines the runner would read as commands, outside faildiag's stop-commands blocks."""
    outside, token = [], None
    for ln in stdout_lines:
        if token is None and ln.startswith("::stop-commands::"):
            token = ln.split("::")[2]
        elif token is not None:
            if ln == f"::{token}::":
                token = None
        elif ln.startswith("::"):
            outside.append(ln)
    assert token is None, "a stop-commands block was never closed"
    return outside


def test_fake_workflow_commands_and_ansi_in_logs_never_reach_the_runner(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k in [k for k in os.environ if k.startswith("GITHUB_")]:
        monkeypatch.delenv(k)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    pytester.makepyfile(test_evil=TESTS)
    # --show-capture=log: pytest itself would otherwise replay the printed lines verbatim (that is pytest's
    # output, not faildiag's); the diagnosis still reads the captured output as evidence
    result = pytester.runpytest_subprocess("--faildiag", "--show-capture=log", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    # the runner splits its input on \n only (a \r inside a line does not start a new command line), and
    # the raw stdout keeps the \r that pytester's splitlines() would turn into a line break
    raw = pytester.path / "stdout"  # where pytester.run keeps the child's bytes
    lines = (
        result.stdout.str().split("\n") if not raw.exists() else raw.read_bytes().decode("utf-8", "replace").split("\n")
    )
    commands = own_command_lines(lines)
    assert commands, "no annotation at all: the test proves nothing"
    for ln in commands:
        assert ln.startswith(("::error ", "::group::", "::endgroup::")), ln
        assert "\x1b" not in ln and "\x07" not in ln, repr(ln)
    errors = [ln for ln in commands if ln.startswith("::error ")]
    assert len(errors) == 1 and "file=test_evil.py" in errors[0], errors
    assert "/etc/passwd" not in errors[0].split("::", 2)[1]  # the properties are faildiag's, not the log's
    # the evidence with the fake commands was echoed, inside a block the logs cannot close
    blocks = "\n".join(lines)
    tokens = block_tokens(lines)  # lines inside a block are inert, whatever they say (CI=true prints more)
    assert tokens and all(t.startswith("faildiag-") and len(t) >= 24 for t in tokens)
    assert all(t not in "\n".join(EVIL) for t in tokens)
    assert "::set-output name=result::pwned" in blocks or "::error::RuntimeError" in blocks
    text = summary.read_text()
    assert "\x1b" not in text and "\x07" not in text
    assert not [ln for ln in text.splitlines() if ln.startswith("::")]
