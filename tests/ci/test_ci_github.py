"""GitHub Actions annotations and job summary, from real snapshot folders."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from pytest_faildiag.ci import github
from pytest_faildiag.ci._load import load
from tests.ci.ci_helpers import entry, snapshot_from_case, snapshot_from_texts, write_session

CMD = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def unescape(text: str, prop: bool = False) -> str:
    if prop:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """Parse a workflow command the way the runner does (name, properties, message)."""
    m = CMD.match(line)
    assert m, line
    props = {}
    for part in (m["props"] or "").split(","):
        if part:
            k, _, v = part.partition("=")
            props[k] = unescape(v, prop=True)
    return m["name"], props, unescape(m["data"])


def errors(lines: list[str]) -> list[str]:
    return [x for x in lines if x.startswith("::error")]


def test_it_escapes_messages_and_properties_per_githubs_rules():
    line = github.command(
        "error", "100% sure: a, b\r\nnext ::warning::x", file="dir/a:b,c.py", line=3, title="oom: 50%, twice\nnow"
    )
    assert line == (
        "::error file=dir/a%3Ab%2Cc.py,line=3,title=oom%3A 50%25%2C twice%0Anow"
        "::100%25 sure: a, b%0D%0Anext ::warning::x"
    )
    name, props, data = parse(line)
    assert (name, props["file"], props["title"], data) == (
        "error",
        "dir/a:b,c.py",
        "oom: 50%, twice\nnow",
        "100% sure: a, b\r\nnext ::warning::x",
    )


def test_it_writes_one_exactly_escaped_annotation_per_failed_test(workspace: Path, tmp_path: Path, monkeypatch):
    out = tmp_path / "out"
    rep = snapshot_from_case(out / "t1", "shape_mismatch")
    tricky = "100% of rows: a,b\nline two ::error::injected"
    tfile = workspace / "tests" / "test_models.py"
    write_session(
        out,
        [
            entry(
                "tests/test_models.py::test_a[x:1,y]",
                "t1",
                rep,
                str(tfile),
                7,
                summary=tricky,
                fix_hints=["set a=1, b=2: then rerun"],
            )
        ],
    )
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(workspace)
    lines: list[str] = []
    assert github.emit(out, lines.append) == 1
    assert not any("\n" in x or "\r" in x for x in lines)  # one physical line per call
    first = lines[0]
    snap_ref = github._snapshot_ref(load(out).failures[0], load(out))
    assert first == (
        "::error file=tests/test_models.py,line=7,title=faildiag%3A layer sizes or tensor shapes disagree"
        "::tests/test_models.py::test_a[x:1,y]: 100%25 of rows: a,b%0Aline two ::error::injected"
        "%0Afix: set a=1, b=2: then rerun"
        f"%0Afaildiag snapshot: {snap_ref}"
    )
    name, props, data = parse(first)
    assert props == {
        "file": "tests/test_models.py",
        "line": "7",
        "title": "faildiag: layer sizes or tensor shapes disagree",
    }
    assert data.splitlines()[:2] == [
        "tests/test_models.py::test_a[x:1,y]: 100% of rows: a,b",
        "line two ::error::injected",
    ]


def test_nine_failures_get_nine_annotations_ranked_by_cause(session_out: Path, workspace: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    lines = github.render(load(session_out))
    errs = [parse(x) for x in errors(lines)]
    assert len(errs) == 9
    assert [e[1]["title"] for e in errs[:5]] == ["faildiag: layer sizes or tensor shapes disagree"] * 5
    assert all(e[1]["file"] == "tests/test_models.py" for e in errs)


def _many_causes(tmp_path: Path, workspace: Path) -> Path:
    """14 distinct recorded failures plus 6 more tests with the shape error: 20 tests, more than 10 causes."""
    out = tmp_path / "many"
    tfile = str(workspace / "tests" / "test_models.py")
    cases = [
        "ckpt_size_mismatch",
        "ckpt_truncated",
        "cuda_oom_single",
        "cuda_oom_training",
        "dataloader_worker_killed",
        "device_mismatch",
        "gloo_collective_timeout",
        "illegal_address_cupy",
        "nan_anomaly",
        "nccl_duplicate_gpu",
        "nccl_watchdog_timeout",
        "pytest_gpu",
        "segfault_ext",
        "shape_mismatch",
    ]
    tests = []
    for case in cases:
        rep = snapshot_from_case(out / case, case)
        tests.append(entry(f"tests/test_models.py::test_{case}", case, rep, tfile, 5))
    shape = json.loads((out / "shape_mismatch" / "report.json").read_text())
    for i in range(6):
        shutil.copytree(out / "shape_mismatch", out / f"shape{i}")
        tests.append(entry(f"tests/test_models.py::test_shapes[{i}]", f"shape{i}", shape, tfile, 7))
    return write_session(out, tests)


def test_more_than_ten_failures_still_surface_the_top_causes(tmp_path: Path, workspace: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    out = _many_causes(tmp_path, workspace)
    session = load(out)
    assert len(session.failures) == 20 and len(session.groups()) > 10
    errs = [parse(x) for x in errors(github.render(session))]
    assert len(errs) == 10
    name, props, data = errs[0]
    assert props["title"] == "7 tests: layer sizes or tensor shapes disagree"
    assert data.startswith("7 tests: layer sizes or tensor shapes disagree")
    assert "test_shapes[5]" in data
    # the 10th says what did not fit instead of silently dropping it
    assert re.match(r"faildiag: \d+ more causes, \d+ tests", errs[-1][1]["title"])
    shown = sum(int(e[1]["title"].split()[0]) if e[1]["title"][0].isdigit() else 1 for e in errs[:9])
    assert shown + int(errs[-1][1]["title"].split(", ")[1].split()[0]) == 20


def test_fewer_causes_than_annotations_give_one_annotation_per_cause(tmp_path: Path, workspace: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    out = tmp_path / "out"
    tfile = str(workspace / "tests" / "test_models.py")
    tests = []
    for i in range(12):
        rep = snapshot_from_case(out / f"oom{i}", "cuda_oom_single")
        tests.append(entry(f"tests/test_models.py::test_big_alloc[{i}]", f"oom{i}", rep, tfile, 11))
    rep = snapshot_from_case(out / "shape", "shape_mismatch")
    tests.append(entry("tests/test_models.py::test_forward_shapes", "shape", rep, tfile, 7))
    write_session(out, tests)
    errs = [parse(x) for x in errors(github.render(load(out)))]
    assert [e[1]["title"].split(":")[0] for e in errs] == ["12 tests", "faildiag"]
    assert errs[0][1]["line"] == "11"
    assert "(+4 more)" in errs[0][2]


def test_the_job_summary_is_a_markdown_table_appended_to_the_step_summary(
    session_out: Path, workspace: Path, tmp_path: Path, monkeypatch
):
    summary = tmp_path / "step_summary.md"
    summary.write_text("# earlier step output\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    github.emit(session_out, lambda s: None)
    text = summary.read_text()
    assert text.startswith("# earlier step output\n")
    lines = text.splitlines()
    head = lines.index("| # | cause | tests | category | confidence | fix hints | snapshot |")
    assert lines[head - 1] == "" and re.fullmatch(r"(\|---)+\|", lines[head + 1])
    rows = []
    for ln in lines[head + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append(ln)
    assert len(rows) == 4  # shape, oom, device, nan
    for row in rows:  # every row has the header's 7 cells (pipes in content are escaped)
        assert len(re.split(r"(?<!\\)\|", row)) - 2 == 7, row
    assert rows[0].split("|")[3].strip() == "5"
    assert "`faildiag-out/shape-0`" in rows[0]


def test_the_job_summary_stays_within_the_per_step_limit(tmp_path: Path, workspace: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    out = _many_causes(tmp_path, workspace)
    summary = tmp_path / "summary.md"
    summary.write_text("x" * (github.SUMMARY_LIMIT - 3000) + "\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    github.emit(out, lambda s: None)
    assert summary.stat().st_size <= github.SUMMARY_LIMIT
    added = summary.read_text()[github.SUMMARY_LIMIT - 2999 :]
    assert "| # | cause |" in added
    assert re.search(r"_\d+ row\(s\) left out to stay within GitHub's step summary size limit._", added)


def test_echoed_log_output_is_wrapped_so_it_cannot_run_workflow_commands(tmp_path: Path, workspace: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    out = tmp_path / "out"
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/w/tests/test_evil.py", line 3, in test_evil\n'
        "    raise RuntimeError(msg)\n"
        "RuntimeError: ::error file=x.py::pwned ::add-mask::secret ::endgroup::\n"
    )
    rep = snapshot_from_texts(out / "evil", {"stderr.txt": stderr}, exit_code=1)
    write_session(out, [entry("tests/test_evil.py::test_evil", "evil", rep, None, None)])
    lines = github.render(load(out))
    starts = [i for i, x in enumerate(lines) if x.startswith("::stop-commands::")]
    assert starts
    for i in starts:
        token = lines[i].split("::")[2]
        assert len(token) >= 32
        end = lines.index(f"::{token}::", i)
        assert lines[end + 1] == "::endgroup::"
        assert lines[i - 1].startswith("::group::")
    inside = {j for i in starts for j in range(i + 1, lines.index(f"::{lines[i].split('::')[2]}::", i))}
    evil = [j for j, x in enumerate(lines) if "::error file=x.py::pwned" in x and not x.startswith("::error ")]
    assert evil and all(j in inside for j in evil)
    name, props, data = parse(lines[0])  # in the annotation itself the text is message data, not a command
    assert name == "error" and "::error file=x.py::pwned" in data
    # outside the wrapped blocks, only our own commands start a line
    for j, x in enumerate(lines):
        if j not in inside:
            assert x.startswith(("::error ", "::group::", "::endgroup::", "::stop-commands::", "::faildiag-")), x


def test_files_outside_the_workspace_get_no_file_property(tmp_path: Path, workspace: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    out = tmp_path / "out"
    rep = snapshot_from_case(out / "s", "shape_mismatch")
    write_session(out, [entry("t::x", "s", rep, "/usr/lib/python3/site.py", 10)])
    name, props, data = parse(errors(github.render(load(out)))[0])
    assert "file" not in props and "line" not in props and props["title"]


def test_secrets_in_summaries_never_reach_the_log_or_the_job_summary(tmp_path: Path, workspace: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmN"
    out = tmp_path / "out"
    rep = snapshot_from_texts(
        out / "s", {"stderr.txt": f"RuntimeError: login failed with HF_TOKEN={token}\n"}, exit_code=1
    )
    write_session(out, [entry("t::login", "s", rep, None, None, summary=f"login failed, token {token}")])
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    lines: list[str] = []
    github.emit(out, lines.append)
    assert token not in "".join(lines) and token not in summary.read_text()
    assert "REDACTED" in "".join(lines)


def test_a_lone_snapshot_folder_is_annotated_too(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    snapshot_from_case(tmp_path / "snap", "gloo_collective_timeout")
    errs = [parse(x) for x in errors(github.render(load(tmp_path / "snap")))]
    assert len(errs) == 1 and errs[0][1]["title"].startswith("faildiag: a rank waited")


def test_paths_relative_to_a_subfolder_run_are_made_relative_to_the_workspace(
    tmp_path: Path, workspace: Path, monkeypatch
):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    monkeypatch.chdir(workspace / "tests")  # pytest ran inside tests/, its paths are relative to it
    (workspace / "tests" / "test_sub.py").write_text("def test_x():\n    assert 0\n")
    out = tmp_path / "out"
    rep = snapshot_from_case(out / "s", "shape_mismatch")
    write_session(out, [entry("test_sub.py::test_x", "s", rep, "test_sub.py", 2, when="setup")])
    name, props, data = parse(errors(github.render(load(out)))[0])
    assert props["file"] == "tests/test_sub.py" and props["line"] == "2"
    assert data.startswith("test_sub.py::test_x (in setup): ")
