"""Snapshots written by other versions, edited by hand or cut short: every renderer degrades, none crashes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_faildiag.ci import github, gitlab
from pytest_faildiag.ci import html as ci_html
from pytest_faildiag.ci._load import load
from pytest_faildiag.commands.report import _json, _text
from tests.ci.ci_helpers import snapshot_from_case

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
    max_leaves=8,
)
PATHS = [
    ("summary",),
    ("profile",),
    ("profile", "type"),
    ("profile", "ranks"),
    ("profile", "first_failure"),
    ("root_causes",),
    ("root_causes", 0),
    ("root_causes", 0, "confidence"),
    ("root_causes", 0, "evidence"),
    ("root_causes", 0, "validation_checks"),
    ("root_causes", 0, "fix_hints"),
    ("root_causes", 0, "summary"),
    ("root_causes", 0, "id"),
    ("stuck",),
    ("next_actions",),
    ("lock_diff",),
]
ENTRY_KEYS = ["nodeid", "summary", "confidence", "line", "file", "fix_hints", "cause_id", "snapshot", "when"]


def _set(obj, path, value):
    for key in path[:-1]:
        if isinstance(obj, dict):
            obj = obj.setdefault(key, {})
        elif isinstance(obj, list) and isinstance(key, int) and key < len(obj):
            obj = obj[key]
        else:
            return
    if isinstance(obj, dict):
        obj[path[-1]] = value
    elif isinstance(obj, list) and isinstance(path[-1], int) and path[-1] < len(obj):
        obj[path[-1]] = value


def _render_all(out: Path) -> None:
    session = load(out)
    ci_html.render_session(session)
    github.render(session)
    github.summary_markdown(session)
    gitlab.codequality(session)
    _text(session, markdown=False)
    _text(session, markdown=True)
    json.loads(_json(session))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), value=JSON, key=st.sampled_from(ENTRY_KEYS), entry_value=JSON)
def test_every_renderer_survives_malformed_fields(tmp_path_factory, path, value, key, entry_value):
    base = tmp_path_factory.mktemp("bad")
    snap = base / "out" / "s"
    template = _template(tmp_path_factory)
    shutil.copytree(template, snap)
    rep = json.loads((snap / "report.json").read_text())
    _set(rep, path, value)
    (snap / "report.json").write_text(json.dumps(rep))
    entry = {"nodeid": "t::x", "summary": "s", "snapshot": "s", key: entry_value}
    (base / "out" / "session.json").write_text(json.dumps({"schema": "faildiag.session/1", "tests": [entry]}))
    _render_all(base / "out")
    _render_all(snap)


_TEMPLATE: list[Path] = []


def _template(factory) -> Path:
    if not _TEMPLATE:
        snap = factory.mktemp("template") / "s"
        snapshot_from_case(snap, "gloo_collective_timeout")
        _TEMPLATE.append(snap)
    return _TEMPLATE[0]


def test_a_truncated_report_json_is_skipped_with_a_note(tmp_path: Path):
    snapshot_from_case(tmp_path / "out" / "a", "shape_mismatch")
    snapshot_from_case(tmp_path / "out" / "b", "shape_mismatch")
    text = (tmp_path / "out" / "b" / "report.json").read_text()
    (tmp_path / "out" / "b" / "report.json").write_text(text[: len(text) // 2])
    session = load(tmp_path / "out")
    assert [f.nodeid for f in session.failures] == ["a"]
    assert session.notes
