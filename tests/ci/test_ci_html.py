"""The self-contained HTML report: structure, escaping, pictures, and a real headless-Chromium screenshot."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_faildiag.capture.envlock import diff_locks, save_green
from pytest_faildiag.ci import html as ci_html
from pytest_faildiag.ci._load import load
from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.snapshot import write_snapshot
from tests.ci.ci_helpers import entry, snapshot_from_texts, write_session

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class _Tags(HTMLParser):
    """Collects tags and checks they nest: a page with broken structure fails here, not in a browser."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "circle", "line", "rect", "polyline", "polygon", "path"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()


def parse_html(text: str) -> _Tags:
    p = _Tags()
    p.feed(text)
    p.close()
    assert not p.errors, p.errors[:5]
    assert p.stack == [], p.stack
    return p


@pytest.fixture(scope="module")
def full_out(session_out: Path, oom_snapshot: Path, hang_snapshot: Path, tmp_path_factory) -> Path:
    """The 9-test session plus a real OOM run (with its memory timeline) and a real two-rank hang."""
    out = tmp_path_factory.mktemp("full") / "faildiag-out"
    shutil.copytree(session_out, out)
    shutil.copytree(oom_snapshot, out / "oom-run")
    shutil.copytree(hang_snapshot, out / "hang")
    session = json.loads((out / "session.json").read_text())
    for slug, nodeid in (
        ("oom-run", "tests/test_data.py::test_preload_everything"),
        ("hang", "tests/test_dist.py::test_allreduce_two_ranks"),
    ):
        rep = json.loads((out / slug / "report.json").read_text())
        session["tests"].append(entry(nodeid, slug, rep, None, None))
    return write_session(out, session["tests"])


def test_the_report_groups_failures_by_cause_with_evidence_checks_and_hints(
    full_out: Path, workspace: Path, monkeypatch
):
    monkeypatch.chdir(workspace)  # rendered from the project: its source lines may be shown, nothing outside it
    page = ci_html.render_path(full_out)
    tags = parse_html(page)
    sections = [a for t, a in tags.tags if t == "section" and a.get("class", "").startswith("group")]
    assert len(sections) == len(load(full_out).groups())
    first = page.index('id="cause-1"')
    assert "5 tests</span> layer sizes or tensor shapes disagree" in page[first : first + 400]
    assert "mat1 and mat2 shapes cannot be multiplied (64x256 and 128x10)" in page
    assert '<span class="st-passed">passed</span>' in page  # a validation check that ran
    assert "fix: compare the two shapes" in page
    # the failing line of the user's test file, highlighted
    assert re.search(r'<span class="hl">\s+7\s+assert model\(x\)\.shape == \(64, 10\)</span>', page)


def test_the_report_is_self_contained(full_out: Path):
    page = ci_html.render_path(full_out)
    tags = parse_html(page)
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", page, re.I)
    assert "@import" not in page and "url(" not in page
    for tag, attrs in tags.tags:
        assert tag not in ("link", "iframe", "img", "object", "embed")
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)


def test_the_oom_run_gets_a_memory_chart_that_climbs_to_the_failure(full_out: Path):
    page = ci_html.render_path(full_out)
    svgs = re.findall(r'<svg[^>]*aria-label="memory timeline".*?</svg>', page, re.S)
    assert len(svgs) == 1
    pts = re.search(r'<polyline points="([^"]+)"', svgs[0])[1].split()
    ys = [float(p.split(",")[1]) for p in pts]
    assert len(ys) >= 5
    assert min(ys) < ys[0] - 100  # SVG y grows downward: memory grew over the run
    assert ys.index(min(ys)) >= 0.8 * len(ys)  # and peaked near the failure
    samples = [json.loads(x) for x in (full_out / "oom-run" / "timeline.jsonl").read_text().splitlines()]
    peak = max(s["rss_gib"] for s in samples)
    assert f"peak {peak:.2f} GiB" in svgs[0]


def test_the_hang_gets_a_per_rank_timeline_naming_where_each_rank_waited(full_out: Path):
    page = ci_html.render_path(full_out)
    svgs = re.findall(r'<svg[^>]*aria-label="per-rank timeline".*?</svg>', page, re.S)
    assert len(svgs) == 1
    assert ">rank 0</text>" in svgs[0] and ">rank 1</text>" in svgs[0]
    lane = r'>rank (\d)</text>.*?<text[^>]*fill="[^"]+">([^<]*)</text>'
    lanes = dict(re.findall(lane, svgs[0], re.S))
    assert lanes["0"].startswith("waiting in all_reduce")
    assert lanes["1"].startswith("never joined the collective, stuck in load_shard (train_dist.py:")


def test_text_from_logs_is_escaped(tmp_path: Path):
    out = tmp_path / "snap"
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/w/t.py", line 3, in test_x\n'
        "    raise ValueError(bad)\n"
        'ValueError: <script>alert(1)</script><img src=x onerror="alert(2)"> & </pre>\n'
    )
    snapshot_from_texts(out, {"stderr.txt": stderr}, exit_code=1)
    page = ci_html.render_path(out)
    parse_html(page)
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_environment_lock_diff_is_rendered_when_present(tmp_path: Path):
    out = tmp_path / "snap"
    old = {"packages": {"torch": "2.5.1", "numpy": "1.26.4"}, "python": {"version": "3.11.9"}}
    new = {"packages": {"torch": "2.6.0", "numpy": "1.26.4", "triton": "3.2.0"}, "python": {"version": "3.11.9"}}
    changes = diff_locks(old, new)
    snapshot_from_texts(
        out,
        {"stderr.txt": "RuntimeError: CUDA error: no kernel image is available for execution\n"},
        exit_code=1,
        extra_files={"artifacts/lock-diff.json": json.dumps({"changes": changes})},
    )
    page = ci_html.render_path(out)
    start = page.index("Environment lock diff")
    table = page[start : page.index("</table>", start)]
    assert "torch" in table and "2.5.1" in table and "2.6.0" in table and "triton" in table


def test_write_html_writes_one_file_and_nothing_else(full_out: Path, tmp_path: Path):
    before = sorted(p.relative_to(full_out) for p in full_out.rglob("*"))
    target = tmp_path / "report" / "faildiag.html"
    ci_html.write_html(full_out, target)
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.relative_to(full_out) for p in full_out.rglob("*")) == before
    assert [p.name for p in target.parent.iterdir()] == ["faildiag.html"]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_the_report_renders_in_headless_chromium(full_out: Path, tmp_path: Path):
    page = tmp_path / "report.html"
    ci_html.write_html(full_out, page)
    png = tmp_path / "report.png"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={png}",
        "--window-size=1280,2000",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        page.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # page errors: a failed load or fetch, or anything written to the console (there is no script to write)
    assert not re.search(r"net::ERR_|CONSOLE\(|Uncaught|Refused to", proc.stderr), proc.stderr[-2000:]
    assert png.is_file() and png.stat().st_size > 30_000  # a blank page compresses to a few KiB
    assert _png_size(png) == (1280, 2000)
    if os.environ.get("FAILDIAG_SCREENSHOT_DIR"):  # opt-in: keep the picture for a person to look at
        shutil.copy(png, Path(os.environ["FAILDIAG_SCREENSHOT_DIR"]) / "faildiag-report.png")
    # the DOM chromium built has the grouped sections and both pictures
    dom = subprocess.run([*cmd[:-3], "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('<section class="group') == len(load(full_out).groups())
    assert 'aria-label="memory timeline"' in dom.stdout and 'aria-label="per-rank timeline"' in dom.stdout


def test_the_lock_diff_is_computed_from_the_last_green_lock_of_the_session(tmp_path: Path):
    out = tmp_path / "faildiag-out"
    green = {
        "schema": "faildiag.lock/1",
        "packages": {"torch": "2.5.1", "numpy": "1.26.4"},
        "python": {"version": "3.11.9"},
        "env": {"NCCL_P2P_DISABLE": "0"},
    }
    now = {
        "schema": "faildiag.lock/1",
        "packages": {"torch": "2.6.0", "numpy": "1.26.4"},
        "python": {"version": "3.11.9"},
        "env": {"NCCL_P2P_DISABLE": "1"},
    }
    save_green(out, green)
    diag = diagnose(
        texts={"stderr.txt": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n"},
        exit_code=1,
        lock=now,
        context={"last_green_lock": green},
    )
    write_snapshot(diag, out / "t1", lock=now)
    page = ci_html.render_path(out)
    start = page.index("Environment lock diff")
    table = page[start : page.index("</table>", start)]
    assert "2.5.1" in table and "2.6.0" in table and "NCCL_P2P_DISABLE" in table
