"""diff_locks / format_diff on real locks, and the `faildiag lock` command as a real subprocess."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from pytest_faildiag.capture.envlock import build_lock, diff_locks, format_diff, save_lock


def _faildiag(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "lock", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


def test_a_distribution_installed_between_two_locks_is_reported_added(site):
    before = build_lock()
    site("faildiag-fake-pkg", "1.0.0")
    after = build_lock()
    changes = diff_locks(before, after)
    assert {"kind": "package", "name": "faildiag-fake-pkg", "old": None, "new": "1.0.0", "change": "added"} in changes
    assert "+ faildiag-fake-pkg 1.0.0 (added)" in format_diff(changes)
    assert "- faildiag-fake-pkg 1.0.0 (removed)" in format_diff(diff_locks(after, before))


def test_a_torch_upgrade_comes_first_as_old_arrow_new(site):
    site("torch", "2.5.1")
    green = build_lock()
    site("torch", "2.6.0", layer="b")
    site("faildiag-other", "0.1", layer="b")
    red = build_lock()
    lines = format_diff(diff_locks(green, red))
    assert lines[0] == "torch 2.5.1 → 2.6.0"
    assert "+ faildiag-other 0.1 (added)" in lines


def test_env_changes_are_reported_and_per_run_ids_are_not(monkeypatch):
    monkeypatch.delenv("NCCL_DEBUG", raising=False)
    monkeypatch.setenv("GITHUB_RUN_ID", "1")
    a = build_lock()
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("GITHUB_RUN_ID", "2")
    b = build_lock()
    lines = format_diff(diff_locks(a, b))
    assert "env NCCL_DEBUG: unset → INFO" in lines
    assert not any("GITHUB_RUN_ID" in line for line in lines)


def test_two_locks_of_an_unchanged_machine_have_no_diff():
    assert diff_locks(build_lock(), build_lock()) == []


def test_driver_and_cuda_build_changes_are_reported():
    old = build_lock()
    new = copy.deepcopy(old)
    old["gpu"] = {
        "status": "ok",
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "device_count": 1,
        "devices": [{"name": "NVIDIA A100-SXM4-80GB"}],
    }
    new["gpu"] = {
        "status": "ok",
        "driver_version": "535.104.05",
        "cuda_version": "12.2",
        "device_count": 1,
        "devices": [{"name": "NVIDIA A100-SXM4-80GB"}],
    }
    lines = format_diff(diff_locks(old, new))
    assert "NVIDIA driver 550.54.15 → 535.104.05" in lines and "driver CUDA 12.4 → 12.2" in lines


def test_diff_tolerates_garbage():
    assert diff_locks({}, {}) == []
    assert diff_locks({"packages": "nope", "env": []}, {"packages": {"a": "1"}}) == [
        {"kind": "package", "name": "a", "old": None, "new": "1", "change": "added"}
    ]


def test_format_diff_limits_long_lists():
    changes = [{"kind": "package", "name": f"p{i}", "old": "1", "new": "2", "change": "changed"} for i in range(30)]
    lines = format_diff(changes, limit=5)
    assert len(lines) == 6 and lines[-1] == "… and 25 more changes"


# ------------------------------------------------------------------------------------------------- CLI


def test_cli_writes_env_lock_json_in_cwd_by_default(tmp_path):
    r = _faildiag(cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lock = json.loads((tmp_path / "env.lock.json").read_text())
    assert lock["schema"] == "faildiag.lock/1" and "pytest" in lock["packages"]
    assert "Traceback" not in r.stderr


def test_cli_prints_the_lock_on_stdout_with_dash(tmp_path):
    r = _faildiag("--out", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["python"]["executable"]


def test_cli_diff_prints_human_lines_and_json(tmp_path, site):
    old = save_lock(build_lock(), tmp_path / "old.json")
    new_lock = build_lock()
    new_lock["packages"] = {**new_lock["packages"], "torch": "2.6.0"}
    old_lock = json.loads(old.read_text())
    old_lock["packages"] = {**old_lock["packages"], "torch": "2.5.1"}
    save_lock(old_lock, old)
    new = save_lock(new_lock, tmp_path / "new.json")
    r = _faildiag("--diff", str(old), str(new))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "torch 2.5.1 → 2.6.0"
    j = _faildiag("--diff", str(old), str(new), "--format", "json")
    assert {"kind": "package", "name": "torch", "old": "2.5.1", "new": "2.6.0", "change": "changed"} in json.loads(
        j.stdout
    )["changes"]
    same = _faildiag("--diff", str(new), str(new))
    assert same.stdout.strip() == "no changes"


@pytest.mark.parametrize("content", ["{broken", "[]"])
def test_cli_diff_of_a_bad_file_is_one_line_and_exit_2(tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    good = save_lock(build_lock(), tmp_path / "good.json")
    r = _faildiag("--diff", str(good), str(bad))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "bad.json" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_diff_of_a_missing_file_exits_2(tmp_path):
    r = _faildiag("--diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_cli_unwritable_out_exits_2(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    r = _faildiag("--out", str(target / "sub" / "env.lock.json"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_the_last_green_lock_is_kept_and_read_back(tmp_path, site):
    from pytest_faildiag.capture.envlock import load_green, save_green

    assert load_green(tmp_path) is None
    site("torch", "2.5.1")
    save_green(tmp_path / "faildiag-out", build_lock())
    site("torch", "2.6.0", layer="b")
    green = load_green(tmp_path / "faildiag-out")
    assert format_diff(diff_locks(green, build_lock()))[0] == "torch 2.5.1 → 2.6.0"
    (tmp_path / "faildiag-out" / "last-green.lock.json").write_text("{corrupt")
    assert load_green(tmp_path / "faildiag-out") is None
