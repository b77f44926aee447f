"""read_readiness: snapshots of the public readiness-agent (MindSpore / PTA pre-run certification)."""

from __future__ import annotations

import json

from pytest_faildiag.capture.envlock import read_readiness


def _write(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


VERDICT = {
    "schema_version": "readiness-agent/0.1",
    "skill": "readiness-agent",
    "status": "BLOCKED",
    "can_run": False,
    "target": "training",
    "summary": "Training is blocked because required readiness prerequisites remain unresolved.",
    "blockers": ["torch_npu is not importable"],
    "warnings": ["CANN 7.0 is older than recommended"],
    "next_action": "Resolve blockers and rerun readiness.",
    "evidence_level": "import",
    "checks": [
        {"id": "framework-importability", "status": "block", "summary": "import torch_npu failed"},
        {"id": "system-device", "status": "ok", "summary": "8 NPUs visible"},
    ],
    "blockers_detailed": [
        {
            "id": "framework-importability",
            "category": "framework_remediable",
            "summary": "torch_npu is not importable",
            "remediable": True,
        }
    ],
    "some_future_key": {"nested": [1, 2, 3]},
}
ENVELOPE = {
    "schema_version": "1.0.0",
    "skill": "readiness-agent",
    "run_id": "readiness-agent-0123456789ab",
    "status": "partial",
    "start_time": "2026-01-01T00:00:00Z",
    "artifacts": ["report.md", "meta/readiness-verdict.json"],
    "env_ref": "meta/env.json",
}


def test_a_full_snapshot_is_read(tmp_path):
    _write(tmp_path / "report.json", ENVELOPE)
    _write(tmp_path / "meta" / "readiness-verdict.json", VERDICT)
    _write(tmp_path / "meta" / "env.json", {"python": "3.10.14", "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyzABCD"})
    r = read_readiness(tmp_path)
    assert r["status"] == "BLOCKED" and r["can_run"] is False and r["target"] == "training"
    assert r["blockers"] == [
        {"id": "framework-importability", "category": "framework_remediable", "summary": "torch_npu is not importable"}
    ]
    assert r["failed_checks"] == [
        {"id": "framework-importability", "status": "block", "summary": "import torch_npu failed"}
    ]
    assert r["warnings"] == ["CANN 7.0 is older than recommended"]
    assert r["run"]["run_id"] == "readiness-agent-0123456789ab"
    assert r["env"]["python"] == "3.10.14" and "hf_abcdef" not in json.dumps(r)


def test_missing_keys_are_no_evidence(tmp_path):
    _write(tmp_path / "meta" / "readiness-verdict.json", {"status": "warn"})
    r = read_readiness(tmp_path)
    assert r["status"] == "WARN"
    assert (
        r["can_run"] is None and r["summary"] is None and r["blockers"] == [] and r["checks"] == [] and r["env"] is None
    )


def test_snapshot_in_an_out_folder_of_the_workspace(tmp_path):
    _write(tmp_path / "out" / "meta" / "readiness-verdict.json", VERDICT)
    r = read_readiness(tmp_path)
    assert r is not None and r["source"] == str(tmp_path / "out")


def test_envelope_only_report_is_accepted_when_it_is_readiness_agents(tmp_path):
    _write(tmp_path / "report.json", {**ENVELOPE, "status": "READY", "can_run": True})
    r = read_readiness(tmp_path)
    assert r["status"] == "READY" and r["can_run"] is True


def test_other_report_json_files_are_not_readiness_snapshots(tmp_path):
    _write(tmp_path / "report.json", {"schema": "faildiag.report/1", "summary": "x", "root_causes": []})
    assert read_readiness(tmp_path) is None
    assert read_readiness(tmp_path / "absent") is None


def test_corrupt_files_are_no_evidence_not_errors(tmp_path):
    _write(tmp_path / "meta" / "readiness-verdict.json", "{truncated")
    _write(tmp_path / "report.json", ENVELOPE)
    _write(tmp_path / "meta" / "env.json", "[]")
    r = read_readiness(tmp_path)
    assert r is not None and r["status"] is None and r["env"] is None and r["run"]["status"] == "partial"


def test_wrong_types_are_tolerated(tmp_path):
    _write(
        tmp_path / "meta" / "readiness-verdict.json",
        {"status": "BLOCKED", "can_run": "no", "checks": "all good", "blockers": "disk full", "warnings": None},
    )
    r = read_readiness(tmp_path)
    assert r["can_run"] is None and r["checks"] == [] and r["warnings"] == []
    assert r["blockers"] == [{"id": "", "category": None, "summary": "disk full"}]
