"""Hostile text from a failed run, end to end: terminal escape sequences, Markdown and tokens in test ids.

Every test builds the crafted input (a test folder named with an OSC sequence, a flight-recorder dump whose
collective is named with CSI codes, a report.json whose summary is a Markdown image, a retort run folder
with escapes in its name, a parametrised test whose id is a GitHub token) and runs the real thing: a
``pytest --faildiag`` session through pytester, the ``faildiag`` CLI in a subprocess, GitHub output with
``GITHUB_STEP_SUMMARY`` pointing at a file. What faildiag prints must show control characters (``\\x1b``),
not send them; its Markdown must render the text, not a link or a picture; a token must be masked in every
file and line it writes. What pytest itself prints of a test (its traceback, its FAILED line) is pytest's.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.redact import MASK
from pytest_faildiag.sanitize import display, json_safe, md_code, md_fence, md_text, visible

ROOT = Path(__file__).resolve().parents[2]
NCCL_CASE = ROOT / "tests" / "data" / "corpus" / "gpu" / "nccl_watchdog_timeout"

# Raw control characters a terminal (or GitHub's log viewer) would act on: C0 but tab and newline, DEL,
# C1 (0x9b is a one-byte CSI), the bidi overrides and isolates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
OSC_TITLE = "\x1b]0;pwned\x07"
ERASE = "\x1b[2K\x1b[1G"
C1_CSI = "\x9b2J"
BIDI = "\u202egnp.exe"
# Built from pieces so this file does not trip secret scanners.
TOKEN = "ghp_" + "Vq7Lm2Xc9Rt4Bn8Kd3Hs6Wy1Pz5Fj0Ga2Ue"

MD_ATTACK = (
    "see ![pixel](https://evil.example/p.png) and [click here](https://evil.example/login) "
    "<img src=https://evil.example/i.png> <details open><summary>x</summary> <https://evil.example/a> "
    "https://evil.example/bare www.evil.example ``code`` $\\color{red}{x}$ | cell"
)


def assert_inert(text: str, where: str) -> None:
    """No raw control character in ``text`` (bytes decoded as faildiag wrote them)."""
    m = RAW.search(text)
    assert m is None, f"{where}: raw {m[0]!r} in …{text[max(0, m.start() - 80) : m.end() + 40]!r}"


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str, str]:
    """The real CLI; stdout and stderr decoded from bytes, so a ``\\r`` is not turned into a line break."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *args],
        capture_output=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def faildiag_blocks(stdout: str) -> list[str]:
    """What faildiag adds to pytest's terminal output: its summary (``== faildiag ==`` up to the next ``==``
    line) and the ``-- faildiag --`` section pytest prints inside each failure report."""
    lines = stdout.split("\n")
    blocks: list[str] = []
    i = 0
    while i < len(lines):
        if re.fullmatch(r"(=+|-+) faildiag \1", lines[i].strip()):
            j = i + 1
            while j < len(lines) and not re.match(r"^(={5,}|-{5,}|_{5,})", lines[j]):
                j += 1
            blocks.append("\n".join(lines[i + 1 : j]))
            i = j
        else:
            i += 1
    return blocks


def open_markdown(text: str) -> list[str]:
    """Markdown constructs that would render as links, pictures, raw HTML or autolinks, outside code spans
    and fenced blocks (what GitHub leaves inert). ``<br>`` is faildiag's own line break in table cells."""
    outside: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = re.match(r"^(`{3,})", line)
        if fence is None and m:
            fence = m[1]
            continue
        if fence is not None:
            if re.fullmatch(re.escape(fence) + "`*", line.strip()):
                fence = None
            continue
        outside.append(re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", line))  # drop code spans
    body = "\n".join(outside)
    found = re.findall(r"(?<!\\)!?(?<!\\)\[[^\n]*?(?<!\\)\]\(", body)
    found += re.findall(r"(?<!\\)<(?!br>)[A-Za-z/!?]", body)
    found += re.findall(r"(?i)[a-z0-9]://|(?<![a-z0-9\\])www\.", body)
    return found


def cmark_html(text: str) -> str | None:
    """GitHub's own renderer (cmark-gfm) when its bindings are installed; None otherwise."""
    try:
        import cmarkgfm
        from cmarkgfm.cmark import Options
    except ImportError:
        return None
    return cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)


def assert_markdown_is_text(md: str, where: str) -> None:
    assert not open_markdown(md), f"{where}: live Markdown {open_markdown(md)}"
    html = cmark_html(md)
    if html is not None:
        for tag in ("<a ", "<img", "<details", "<script", "<iframe", "<summary"):
            assert tag not in html, f"{where}: GitHub's renderer made {tag}: {html[:2000]}"


# ------------------------------------------------------------------------------------------- the sanitiser


@pytest.mark.parametrize("raw", ["\x1b", "\x07", "\x00", "\r", "\x7f", "\x9b", "\x85", "\u202e", "\u2066", "\u2028"])
def test_every_control_character_is_shown_as_an_escape(raw: str) -> None:
    out = visible(f"a{raw}b")
    assert_inert(out, "visible")
    assert out.startswith("a\\") and out.endswith("b") and len(out) > 3


def test_every_invisible_character_of_this_pythons_unicode_is_shown() -> None:
    """The sanitiser's fast character class must cover every control, format, surrogate, private-use and
    separator character Unicode defines (this Python's tables); ordinary letters of any script stay."""
    import unicodedata

    hidden = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
    shown_raw = [
        hex(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in hidden and chr(c) not in "\t\n" and visible(chr(c)) == chr(c)
    ]
    assert shown_raw == []
    for text in ("训练失败：设备内存不足", "ошибка", "é…“”", "प्रशिक्षण"):
        assert visible(text) == text


def test_newlines_stay_layout_unless_one_line_and_crlf_is_a_newline() -> None:
    assert visible("a\r\nb\tc\nd") == "a\nb\tc\nd"
    assert visible("a\nb", one_line=True) == "a\\nb"
    assert visible("progress 10%\rprogress 100%") == "progress 10%\\x0dprogress 100%"


def test_display_redacts_before_cutting_and_shows_controls() -> None:
    text = f"token {TOKEN}{OSC_TITLE}"
    out = display(text, limit=30)
    assert TOKEN[:12] not in out and out.endswith("…")
    assert display(text) == f"token {MASK}\\x1b]0;pwned\\x07"


def test_markdown_text_renders_as_the_same_characters() -> None:
    md = md_text(MD_ATTACK)
    assert_markdown_is_text(md, "md_text")
    assert "|" not in md.replace("\\|", "")  # cannot break a table cell
    html = cmark_html(md)
    if html is not None:  # and it reads as what the run said
        assert "![pixel](https://evil.example/p.png)" in html.replace("&lt;", "<").replace("&gt;", ">")


def test_code_spans_and_fences_outgrow_the_backticks_inside() -> None:
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x`") == "`` `x` ``"
    assert md_code("x|y", table=True) == "`x\\|y`"
    lines = md_fence("before\n```\n[x](https://evil.example)\n````\nafter")
    assert lines[0] == "`````" and lines[-1] == "`````"
    assert_markdown_is_text("\n".join(lines), "md_fence")


def test_json_safe_is_the_same_json_value() -> None:
    value = {"s": f"{OSC_TITLE}{C1_CSI}{BIDI}\u2028x"}
    text = json_safe(json.dumps(value, ensure_ascii=False))
    assert_inert(text, "json_safe")
    assert json.loads(text) == value


# --------------------------------------------------------------------------------- pytest --faildiag

EVIL_TEST = (
    "def test_evil(tmp_path):\n"
    f"    (tmp_path / 'train.log').write_text('step 1\\nRuntimeError: CUDA out of memory ' + {C1_CSI!r} + '\\n')\n"
    f"    raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB' + {OSC_TITLE!r} + {ERASE!r}\n"
    f"                       + 'all tests passed' + {C1_CSI!r} + {BIDI!r} + '\\rOK')\n"
)


def test_escapes_in_a_test_folder_name_and_its_error_are_shown_not_obeyed(pytester: pytest.Pytester) -> None:
    folder = pytester.path / f"suite{OSC_TITLE}{ERASE}"
    folder.mkdir()
    (folder / "test_evil.py").write_text(EVIL_TEST)
    out = pytester.path / "fd-out"
    result = pytester.runpytest_subprocess(
        "--faildiag", f"--faildiag-out={out}", "--import-mode=importlib", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)  # faildiag never changes an outcome
    raw = (pytester.path / "stdout").read_bytes().decode("utf-8", "replace")
    blocks = faildiag_blocks(raw)
    assert len(blocks) == 2, "the failure's faildiag section and the session summary"
    for block in blocks:
        assert_inert(block, "faildiag's terminal output")
    summary = blocks[-1]
    assert "suite\\x1b]0;pwned\\x07\\x1b[2K\\x1b[1G/test_evil.py::test_evil" in summary  # shown, as written
    assert "\\x9b2J" in blocks[0] or "\\u202e" in blocks[0]  # the error's C1/bidi codes reached the diagnosis
    # the snapshot folder is a safe name; the session index keeps the id (JSON escapes C0 itself)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", p.name) for p in out.iterdir())
    tests = json.loads((out / "session.json").read_text())["tests"]
    assert tests[0]["nodeid"].startswith(f"suite{OSC_TITLE}")


PARAM_TEST = f"""
import pytest

TOKEN = {TOKEN[:10]!r} + {TOKEN[10:]!r}


@pytest.mark.parametrize("tok", [TOKEN])
def test_param(tok):
    raise PermissionError("the registry refused the upload: bad credentials")
"""


def test_a_token_in_a_parametrised_test_id_is_masked_in_everything_faildiag_writes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for k in [k for k in os.environ if k.startswith("GITHUB_")]:
        monkeypatch.delenv(k)
    step_summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    pytester.makepyfile(test_tok=PARAM_TEST)
    out = pytester.path / "fd-out"
    result = pytester.runpytest_subprocess(
        "--faildiag",
        f"--faildiag-out={out}",
        "--faildiag-html=report.html",
        "--faildiag-gitlab=cq.json",
        "--junitxml=junit.xml",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(failed=1)
    assert f"test_param[{TOKEN}]" in result.stdout.str(), "pytest's own lines name the test: the token is there"
    stdout = (pytester.path / "stdout").read_bytes().decode("utf-8", "replace")
    ours = [ln for ln in stdout.split("\n") if ln.startswith("::")] + faildiag_blocks(stdout)
    assert [ln for ln in ours if ln.startswith("::error ")], "no annotation: the test proves nothing"
    for ln in ours:
        assert TOKEN not in ln, ln
    written = [p for p in out.rglob("*")] + [step_summary, pytester.path / "report.html", pytester.path / "cq.json"]
    for p in written:
        assert TOKEN not in p.name, f"a folder or file is named with the token: {p}"
        if p.is_file():
            assert TOKEN.encode() not in p.read_bytes(), f"{p} holds the token"
    session = json.loads((out / "session.json").read_text())
    assert session["tests"][0]["nodeid"] == f"test_tok.py::test_param[{MASK}]"
    assert (out / session["tests"][0]["slug"]).is_dir()
    # faildiag's JUnit properties are masked too (the testcase name is pytest's)
    props = re.findall(r'<property name="faildiag\.[a-z]+" value="([^"]*)"', (pytester.path / "junit.xml").read_text())
    assert props and not any(TOKEN in v for v in props)


def test_two_tokens_in_test_ids_still_get_two_snapshot_folders(pytester: pytest.Pytester) -> None:
    other = TOKEN[:-4] + "Zz99"
    pytester.makepyfile(
        test_two=f"""
import pytest


@pytest.mark.parametrize("tok", [{TOKEN[:10]!r} + {TOKEN[10:]!r}, {other[:10]!r} + {other[10:]!r}])
def test_param(tok):
    raise PermissionError("bad credentials")
"""
    )
    out = pytester.path / "fd-out"
    pytester.runpytest_subprocess("--faildiag", f"--faildiag-out={out}", "-p", "no:cacheprovider").assert_outcomes(
        failed=2
    )
    slugs = [t["slug"] for t in json.loads((out / "session.json").read_text())["tests"]]
    assert len(set(slugs)) == 2 and all((out / s).is_dir() and "REDACTED" in s for s in slugs)


# ----------------------------------------------------------------------------------------- faildiag CLI


def _hostile_dump(path: Path) -> None:
    """A flight-recorder dump in PyTorch's layout (dicts, lists, strings) whose fields hold escapes."""
    dump = {
        "version": "2.4",
        "rank": 0,
        "pg_status": {},
        "entries": [
            {"collective_seq_id": 1, "state": "completed", "profiling_name": "nccl:all_reduce", "frames": []},
            {
                "collective_seq_id": 2,
                "state": "scheduled",
                "profiling_name": f"nccl:all_reduce{OSC_TITLE}{C1_CSI}",
                "timeout_ms": 10000,
                "input_sizes": [[1024]],
                "frames": [{"filename": f"/w/train{ERASE}.py", "line": 10, "name": "main"}],
            },
        ],
    }
    path.write_bytes(pickle.dumps(dump))


def test_diagnose_shows_escapes_from_file_names_and_flight_recorder_fields(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    stderr = (NCCL_CASE / "stderr.txt").read_text()
    (logs / f"rank0{OSC_TITLE}.log").write_text(stderr + f"[rank0]: extra {C1_CSI}{BIDI}\r done\n")
    _hostile_dump(logs / "nccl_trace_rank_0")
    for fmt in ("text", "md", "json"):
        rc, out, err = cli("diagnose", str(logs), "--out", str(tmp_path / f"out-{fmt}"), "--format", fmt)
        assert rc == 0, err
        assert_inert(out + err, f"diagnose --format {fmt}")
        if fmt == "text":
            assert "nccl:all_reduce\\x1b]0;pwned\\x07\\x9b2J" in out  # the dump's field, shown
            assert "rank0\\x1b]0;pwned\\x07.log" in out  # the file's name, shown
        elif fmt == "md":
            assert_markdown_is_text(out, "diagnose --format md")
        else:
            assert json.loads(out)["summary"]


def _hostile_session(root: Path) -> Path:
    """A session folder as the plugin writes it (real engine, real snapshot), then edited as a foreign or
    tampered report would be: its fields hold escapes, Markdown and HTML."""
    from pytest_faildiag.engine.api import diagnose
    from pytest_faildiag.engine.snapshot import write_snapshot

    out = root / "session"
    text = (
        f'Traceback (most recent call last):\n  File "/w/tests/test_x.py", line 3, in test_x\n'
        f"RuntimeError: CUDA out of memory. {MD_ATTACK} {OSC_TITLE}\n"
    )
    write_snapshot(diagnose(texts={"stderr.txt": text}, exit_code=1), out / "snap")
    rep = json.loads((out / "snap" / "report.json").read_text())
    rep["summary"] = f"{MD_ATTACK}{OSC_TITLE}{ERASE}{C1_CSI}"
    cause = rep["root_causes"][0]
    cause["summary"] = f"![x](https://evil.example/c.png){ERASE}"
    cause["fix_hints"] = [f"<img src=https://evil.example/h.png>{BIDI}", "```\n[inside](https://evil.example)\n```"]
    cause["evidence"][0]["excerpt"] = f"````\n[fenced](https://evil.example)\n{OSC_TITLE}"
    cause["evidence"][0]["source"] = f"log{OSC_TITLE}.txt"
    rep["profile"]["first_failure"] = {
        "source": f"log{OSC_TITLE}.txt",
        "line": 3,
        "excerpt": f"```\n[x](https://evil.example)\n{ERASE}",
    }
    (out / "snap" / "report.json").write_text(json.dumps(rep))
    nodeid = f"tests/test_x.py::test_x[{OSC_TITLE}[a](https://evil.example)]"
    (out / "snap" / "test.json").write_text(
        json.dumps({"nodeid": nodeid, "when": "call", "file": "tests/test_x.py", "line": 3, "worker": None})
    )
    entry = {
        "nodeid": nodeid,
        "slug": "snap",
        "when": "call",
        "outcome": "failed",
        "category": cause["category"],
        "type": rep["profile"]["type"],
        "summary": rep["summary"],
        "confidence": cause["confidence"],
        "cause_id": cause["id"],
        "file": f"tests/test_x{OSC_TITLE}.py",
        "line": 3,
        "fix_hints": cause["fix_hints"],
        "snapshot": "snap",
    }
    (out / "session.json").write_text(
        json.dumps(
            {"schema": "faildiag.session/1", "tests": [entry], "groups": [{"cause_id": cause["id"], "tests": [nodeid]}]}
        )
    )
    return out


@pytest.mark.parametrize("fmt", ["text", "md", "json", "gitlab", "html"])
def test_report_renders_a_tampered_session_inert(tmp_path: Path, fmt: str) -> None:
    session = _hostile_session(tmp_path)
    for target in (session, session / "snap"):  # the session and the lone snapshot
        rc, out, err = cli("report", str(target), "--format", fmt)
        assert rc == 0, err
        assert_inert(out + err, f"report --format {fmt} {target.name}")
        if fmt == "text":
            assert "\\x1b]0;pwned\\x07" in out
        if fmt == "md":
            assert_markdown_is_text(out, f"report --format md {target.name}")
        if fmt in ("json", "gitlab"):
            json.loads(out)
        if fmt == "html":
            assert "<img" not in out and "<details open><summary>x" not in out and "\\x1b]0;pwned" in out


def test_github_annotations_and_step_summary_of_a_tampered_session(tmp_path: Path) -> None:
    session = _hostile_session(tmp_path)
    step_summary = tmp_path / "summary.md"
    env = {k: "" for k in os.environ if k.startswith("GITHUB_")}
    env.update(GITHUB_STEP_SUMMARY=str(step_summary), GITHUB_WORKSPACE=str(tmp_path))
    rc, out, err = cli("report", str(session), "--format", "github", env=env)
    assert rc == 0, err
    assert_inert(out + err, "report --format github")
    errors = [ln for ln in out.split("\n") if ln.startswith("::error ")]
    assert errors and "\\x1b]0;pwned\\x07" in errors[0]
    md = step_summary.read_text()
    assert_inert(md, "step summary")
    assert "| # | cause |" in md and "evil.example" in md  # the text is there, as text
    assert_markdown_is_text(md, "step summary")


# ---------------------------------------------------------------------------------------------- retort


def test_retort_folder_names_and_agent_log_lines_are_shown_not_obeyed(tmp_path: Path) -> None:
    run = tmp_path / "exp" / "runs" / f"language=python_model=x{OSC_TITLE}" / "rep1-failed"
    run.mkdir(parents=True)
    (run / "_meta.json").write_text(
        json.dumps({"replicate": 1, "succeeded": False, "run_config": {"language": "python", "model": "x"}})
    )
    line = {"type": "error", "message": f"unexpected status 401 Unauthorized: token expired{ERASE}{C1_CSI}"}
    (run / "_agent_stdout.log").write_text(json.dumps(line, ensure_ascii=False) + "\n" + f"raw {OSC_TITLE}\n")
    (run / f"notes{ERASE}.md").write_text("agent notes\n")
    for fmt in ("text", "json"):
        rc, out, err = cli(
            "retort",
            "diagnose",
            "--experiment-dir",
            str(tmp_path / "exp"),
            "--no-run-tests",
            "--format",
            fmt,
            "--out",
            str(tmp_path / f"out-{fmt}"),
        )
        assert rc == 0, err
        assert_inert(out + err, f"retort diagnose --format {fmt}")
        if fmt == "text":
            assert "model=x\\x1b]0;pwned\\x07/rep1-failed" in out
    assert_inert((tmp_path / "out-text" / "retort-report.txt").read_text(), "retort-report.txt")


def test_the_cli_error_line_shows_a_hostile_path(tmp_path: Path) -> None:
    missing = tmp_path / f"nope{OSC_TITLE}"
    rc, out, err = cli("report", str(missing))
    assert rc == 2 and out == ""
    assert_inert(err, "the CLI's error line")
    assert "nope\\x1b]0;pwned\\x07" in err and len(err.strip().split("\n")) == 1


def test_ordinary_output_is_unchanged_by_the_sanitiser(tmp_path: Path) -> None:
    """Sanitising must not change ordinary output: the real NCCL case prints the same words it always did."""
    logs = tmp_path / "logs"
    shutil.copytree(NCCL_CASE, logs, ignore=shutil.ignore_patterns("label.json", "*.py", "cmd.txt"))
    rc, out, err = cli("diagnose", str(logs), "--out", str(tmp_path / "out"))
    assert rc == 0, err
    assert "\\x" not in out and "\\u" not in out
    assert "collective" in out and "ProcessGroupNCCL.cpp" in out
