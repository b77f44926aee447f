"""The `lock_diff` tool over MCP: two real locks written by `faildiag lock`, and a snapshot against the last
green run's lock kept next to it."""

from __future__ import annotations

import json

import pytest

from tests.agents.conftest import cli, error_line, structured, with_server

pytest.importorskip("mcp")  # the optional SDK (extra `mcp`)


def _real_lock(tmp_path, name):
    res = cli("lock", "--out", name, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return json.loads((tmp_path / name).read_text())


def test_it_diffs_two_locks_and_a_snapshot_against_the_last_green_lock(tmp_path):
    lock = _real_lock(tmp_path, "env.lock.json")
    old = json.loads(json.dumps(lock))
    old["packages"]["pytest"] = "7.0.0"
    old["packages"]["left-behind"] = "1.0"
    (tmp_path / "old.lock.json").write_text(json.dumps(old))
    (tmp_path / "run.log").write_text("Traceback (most recent call last):\nKeyError: 'DATA_DIR'\n")

    async def scenario(session):
        pair = structured(await session.call_tool("lock_diff", {"old": "old.lock.json", "new": "env.lock.json"}))
        structured(await session.call_tool("diagnose", {"paths": ["run.log", "env.lock.json"]}))
        no_green = error_line(await session.call_tool("lock_diff", {"new": "faildiag-out"}))
        (tmp_path / "faildiag-out" / "last-green.lock.json").write_text(json.dumps(old))
        green = structured(await session.call_tool("lock_diff", {"new": "faildiag-out"}))
        small = structured(
            await session.call_tool("lock_diff", {"old": "old.lock.json", "new": "env.lock.json", "max_chars": 250})
        )
        return pair, no_green, green, small

    pair, no_green, green, small = with_server(tmp_path, scenario=scenario)
    changes = {c["name"]: c for c in pair["changes"]}
    assert (changes["pytest"]["old"], changes["pytest"]["change"]) == ("7.0.0", "changed")
    assert changes["left-behind"]["change"] == "removed"
    assert any(line.startswith("pytest 7.0.0 →") for line in pair["lines"])
    assert "no last-green.lock.json" in no_green
    assert (
        green["old"] == "faildiag-out/last-green.lock.json"
        and green["new"] == "faildiag-out/artifacts/failure.lock.json"
    )
    assert {c["name"] for c in green["changes"]} == {"pytest", "left-behind"}
    assert len(json.dumps(small, ensure_ascii=False)) <= 250 and small["budget"]["dropped"]["changes"] >= 1
