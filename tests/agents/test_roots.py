"""Path confinement of the agent tools, with real files, folders and symbolic links (no SDK needed: the
tools are called in-process, as the server calls them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_faildiag.agents.roots import PathOutsideRoots, Roots
from pytest_faildiag.agents.tools import Toolbox, ToolFailure


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    a, b, outside = tmp_path / "a", tmp_path / "b", tmp_path / "outside"
    for d in (a, b, outside):
        d.mkdir()
    (outside / "secret.log").write_text("RuntimeError: secret\n")
    (a / "run.log").write_text("Traceback (most recent call last):\nKeyError: 'DATA_DIR'\n")
    (b / "other.log").write_text("Traceback (most recent call last):\nKeyError: 'MASTER_ADDR'\n")
    return a, b, outside


def test_relative_paths_start_at_the_first_root_and_may_not_climb_out(tree):
    a, b, outside = tree
    roots = Roots.of([a, b])
    assert roots.resolve("run.log") == a.resolve() / "run.log"
    assert roots.resolve("sub/../run.log", must_exist=True) == a.resolve() / "run.log"
    assert roots.resolve(str(b / "other.log")) == b.resolve() / "other.log"
    assert roots.resolve("../b/other.log") == b.resolve() / "other.log"  # another root is fine
    for bad in ("../outside/secret.log", str(outside / "secret.log"), "/", "~/.bashrc/../../.."):
        with pytest.raises(PathOutsideRoots, match="outside the server's roots"):
            roots.resolve(bad)
    for bad in ("", "   ", None, 3, "a\x00b"):
        with pytest.raises(PathOutsideRoots):
            roots.resolve(bad)


def test_symbolic_links_are_judged_by_where_they_lead(tree):
    a, _, outside = tree
    (a / "in.log").symlink_to(a / "run.log")
    (a / "out.log").symlink_to(outside / "secret.log")
    (a / "outdir").symlink_to(outside, target_is_directory=True)
    (a / "loop").symlink_to(a / "loop")
    roots = Roots.of([a])
    assert roots.resolve("in.log") == a.resolve() / "run.log"
    for bad in ("out.log", "outdir/secret.log", "outdir", "outdir/new-file"):
        with pytest.raises(PathOutsideRoots, match="outside"):
            roots.resolve(bad, must_exist=False)
    with pytest.raises(PathOutsideRoots):
        roots.resolve("loop")


def test_a_folder_holding_a_link_out_of_the_roots_is_refused_whole(tree):
    a, _, outside = tree
    (a / "logs" / "deep").mkdir(parents=True)
    (a / "logs" / "ok.log").write_text("fine\n")
    roots = Roots.of([a])
    roots.check_tree(a / "logs")
    (a / "logs" / "deep" / "x.log").symlink_to(outside / "secret.log")
    with pytest.raises(PathOutsideRoots, match=r"deep/x\.log"):
        roots.check_tree(a / "logs")


def test_roots_must_be_folders_and_not_the_file_system_root(tree):
    a, _, _ = tree
    with pytest.raises(PathOutsideRoots, match="not a folder"):
        Roots.of([a / "run.log"])
    with pytest.raises(PathOutsideRoots, match="file-system root"):
        Roots.of(["/"])
    with pytest.raises(PathOutsideRoots, match="no root"):
        Roots.of([])


def test_the_toolbox_refuses_outside_paths_and_writes_nothing_there(tree):
    a, _, outside = tree
    box = Toolbox(Roots.of([a]))
    before = sorted(os.listdir(outside))
    (a / "outdir").symlink_to(outside, target_is_directory=True)
    for name, args in [
        ("diagnose", {"paths": ["run.log"], "out": "outdir/snap"}),
        ("diagnose", {"paths": ["run.log"], "cwd": str(outside)}),
        ("explain", {"snapshot": "outdir"}),
        ("fix_propose", {"snapshot": "run.log/.."}),
        ("fix_propose", {"snapshot": "faildiag-out", "cwd": "outdir"}),
    ]:
        if name == "fix_propose" and args.get("cwd"):
            box.call("diagnose", {"paths": ["run.log"]})
        with pytest.raises(ToolFailure) as info:
            box.call(name, args)
        assert "the server's roots" in str(info.value), (name, str(info.value))
    assert sorted(os.listdir(outside)) == before


def test_a_report_whose_run_folder_is_outside_the_roots_gets_no_proposal(tree):
    a, _, outside = tree
    box = Toolbox(Roots.of([a]))
    box.call("diagnose", {"paths": ["run.log"], "cwd": "."})
    report = a / "faildiag-out" / "report.json"
    report.write_text(report.read_text().replace(f'"cwd": "{a.resolve()}"', f'"cwd": "{outside}"'))
    assert str(outside) in report.read_text()
    with pytest.raises(ToolFailure, match="the run's folder .*outside the server's roots"):
        box.call("fix_propose", {"snapshot": "faildiag-out"})


def test_diagnose_takes_log_text_in_hand_and_needs_some_evidence(tree):
    a, _, _ = tree
    box = Toolbox(Roots.of([a]))
    report = box.call(
        "diagnose",
        {"paths": [], "text": "Traceback (most recent call last):\nKeyError: 'MASTER_ADDR'\n", "out": "from-text"},
    )
    assert "MASTER_ADDR" in report["summary"] and report["snapshot"] == "from-text"
    assert (a / "from-text" / "report.json").is_file()
    with pytest.raises(ToolFailure, match="give paths"):
        box.call("diagnose", {"paths": []})
