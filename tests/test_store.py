"""The output folder's store: reads bounded and confined, writes never through a link, one way back from a
report (``Diagnosis.from_dict``), one grouping by cause."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from pytest_faildiag import store
from pytest_faildiag.ci._load import load
from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.snapshot import report_dict, write_snapshot
from pytest_faildiag.model import Diagnosis, RootCause

TRACEBACK = """Traceback (most recent call last):
  File "/work/proj/train.py", line 12, in <module>
    main()
  File "/work/proj/train.py", line 9, in main
    raise RuntimeError("{msg}")
RuntimeError: {msg}
"""


def _snapshot(folder: Path, msg: str) -> dict:
    diag = diagnose(texts={"stderr.txt": TRACEBACK.format(msg=msg)}, exit_code=1)
    write_snapshot(diag, folder)
    return report_dict(diag)


# ----------------------------------------------------------------------------------- the way back


def test_a_report_written_by_the_engine_comes_back_unchanged(tmp_path):
    written = _snapshot(tmp_path / "snap", "the frobnicator jammed")
    diag = store.load_diagnosis(tmp_path / "snap")
    assert isinstance(diag, Diagnosis)
    assert diag.to_dict() == written
    assert diag.top is not None and diag.top.error == "RuntimeError: the frobnicator jammed"


def test_a_damaged_report_reads_as_blanks_of_the_right_type(tmp_path):
    raw = {
        "schema": "faildiag.report/1",
        "summary": 7,
        "profile": {"confidence": "nan", "exit_code": True, "domains": "model", "first_failure": [1]},
        "root_causes": [
            {
                "id": "x.y",
                "confidence": 9,
                "evidence": [{"kind": "guess", "line": -3}, "junk"],
                "validation_checks": [{"status": "maybe"}],
                "fix_hints": True,
            },
            "not a cause",
        ],
        "next_actions": None,
        "cwd": "/somewhere",
        "rerun": {"verdict": "deterministic"},
    }
    diag = Diagnosis.from_dict(raw)
    assert diag.summary == "7" and diag.profile.confidence == 0.0 and diag.profile.exit_code is None
    assert diag.profile.domains == [] and diag.profile.first_failure is None
    (cause,) = diag.root_causes
    assert cause.confidence == 1.0 and cause.fix_hints == [] and cause.validation_checks[0].status == "skipped"
    assert [(e.kind, e.line) for e in cause.evidence] == [("direct", None)]
    assert diag.extra == {"cwd": "/somewhere", "rerun": {"verdict": "deterministic"}}  # kept for to_dict
    assert diag.to_dict()["rerun"] == {"verdict": "deterministic"}


def test_a_report_from_before_the_error_field_still_names_its_error():
    old = {
        "id": "unknown.model",
        "category": "model",
        "confidence": 0.35,
        "summary": "unrecognised failure (ValueError: bad label 3); look in the model first",
        "evidence": [
            {"kind": "direct", "source": "stderr.txt", "excerpt": "ValueError: bad label 3"},
            {"kind": "hypothesis", "source": "fallback", "excerpt": "no known signature matched"},
        ],
    }
    assert RootCause.from_dict(old).error == "ValueError: bad label 3"
    assert RootCause.from_dict({**old, "id": "cuda.oom"}).error is None  # a recognised cause needs none


# ----------------------------------------------------------------------------------- one grouping


def test_unrecognised_causes_group_by_their_error_with_numbers_blanked():
    key = store.cause_key
    assert key("runtime.model", "ValueError: label 3") == key("runtime.model", "ValueError:  label 11")
    assert key("runtime.model", "ValueError: label 3") != key("runtime.model", "KeyError: 'label'")
    assert key("cuda.oom") == "cuda.oom" != key("cuda.oom", "x")
    assert key(None, None, "crash", "died") == "crash:died"


def test_groups_are_ranked_by_size_then_confidence_then_first_seen():
    items = [("a", 0.1), ("b", 0.9), ("c", 0.2), ("a", 0.1), ("c", 0.3)]
    groups = store.group_by_cause(items, key=lambda x: x[0], confidence=lambda x: x[1])
    assert [g[0][0] for g in groups] == ["c", "a", "b"]  # c and a have 2 each, c is more confident


def test_two_snapshots_of_different_errors_are_two_causes_and_the_same_error_one(tmp_path):
    out = tmp_path / "out"
    for name, msg in (
        ("t1", "the frobnicator jammed"),
        ("t2", "quux overflowed the blorp"),
        ("t3", "drift of 3 units"),
        ("t4", "drift of 11 units"),
    ):
        _snapshot(out / name, msg)
    session = load(out)  # no session.json: the snapshot folders
    assert sorted(g.count for g in session.groups()) == [1, 1, 2]
    entries = [
        {"nodeid": f.nodeid, "cause_id": f.cause_id, "error": f.error, "type": f.type, "summary": f.summary}
        for f in session.failures
    ]
    assert sorted(g["count"] for g in store.group_entries(entries)) == [1, 1, 2]  # the terminal's view agrees


# ----------------------------------------------------------------------------------- bounded, confined reads


def test_reads_refuse_special_big_and_deep_files_without_blocking(tmp_path):
    fifo = tmp_path / store.SESSION
    os.mkfifo(fifo)
    done = threading.Event()
    got: list[object] = []
    threading.Thread(target=lambda: (got.append(store.read_session(tmp_path)), done.set()), daemon=True).start()
    assert done.wait(5), "reading a FIFO named session.json blocked"
    assert got == [None]
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"x": "a" * 100}))
    with pytest.raises(OSError):
        store.read_json(big, limit=50)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200 + "]" * 200)
    with pytest.raises(ValueError, match="deeper than"):
        store.read_json(deep)


def test_a_session_entry_cannot_send_readers_outside_the_session(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    _snapshot(elsewhere, "secret place")
    out.mkdir()
    (out / "inside").mkdir()
    os.symlink(elsewhere, out / "linked")
    assert store.snapshot_dir(out, "inside") == out / "inside"
    for name in ("linked", "../elsewhere", str(elsewhere), "", None, 3):
        assert store.snapshot_dir(out, name) is None


# ----------------------------------------------------------------------------------- writes never follow links


def test_session_index_and_journal_replace_a_planted_link_instead_of_following_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, out / store.SESSION)
    os.symlink(victim, out / store.JOURNAL)
    store.write_session(out, [{"nodeid": "t::a", "cause_id": "x", "summary": "s", "_text": "private"}])
    fd = store.open_journal(out)
    os.write(fd, b'{"e": "start"}\n')
    os.close(fd)
    assert victim.read_text() == "keep me\n"
    assert not (out / store.SESSION).is_symlink() and not (out / store.JOURNAL).is_symlink()
    index = store.read_session(out)
    assert index["schema"] == store.SESSION_SCHEMA and "_text" not in index["tests"][0]
    assert index["groups"][0]["tests"] == ["t::a"]
    fd = store.open_journal(out)  # a journal of ours is appended to, not replaced
    os.write(fd, b'{"e": "finish"}\n')
    os.close(fd)
    assert (out / store.JOURNAL).read_text().count("\n") == 2


def test_the_last_green_lock_is_read_only_when_it_is_a_lock(tmp_path):
    store.write_last_green(tmp_path, json.dumps({"schema": "faildiag.lock/1", "packages": {}}))
    assert store.read_last_green(tmp_path) == {"schema": "faildiag.lock/1", "packages": {}}
    (tmp_path / store.LAST_GREEN_LOCK).write_text(json.dumps({"schema": "faildiag.report/1"}))
    assert store.read_last_green(tmp_path) is None
