"""Bounded runs of the fuzz targets in ``fuzz_scan.py`` (the long runs are for a person or a nightly job),
plus the malformed ``error.json`` shapes torchelastic-like tools leave behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.robustness import fuzz_scan

ROOT = Path(__file__).resolve().parents[2]


def test_the_log_scanner_survives_a_bounded_fuzz_run() -> None:
    assert fuzz_scan.run_hypothesis("scan", 150) == 150


def test_report_and_fix_survive_malformed_snapshots() -> None:
    assert fuzz_scan.run_hypothesis("snapshot", 40) == 40


def test_the_fuzz_script_runs_standalone_and_says_which_driver_it_used() -> None:
    p = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "robustness" / "fuzz_scan.py"), "--runs", "20"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "20 scan inputs, no crash" in p.stdout


def test_the_fuzz_targets_do_fail_on_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_faildiag.parse.scan as scan

    def broken(*args, **kwargs):
        raise IndexError("planted")

    monkeypatch.setattr(scan, "scan_stream", broken)
    with pytest.raises(IndexError):
        fuzz_scan.scan_one(b"Traceback (most recent call last):\n")


MALFORMED_ERROR_JSON = [
    b"",
    b"{",
    b"null",
    b"[]",
    b'"just a string"',
    b"123",
    b'{"message": null}',
    b'{"message": 5}',
    b'{"message": {}}',
    b'{"message": {"message": null, "extraInfo": null}}',
    b'{"message": {"message": ["a"], "extraInfo": {"py_callstack": 7, "timestamp": {"x": 1}}}}',
    b'{"message": {"extraInfo": ["py_callstack"]}}',
    b'{"message": {"message": "\\u0000\\ud800 broken"}}',
    b"\xff\xfe\x00{",
    json.dumps(
        {
            "message": {
                "message": "RuntimeError: boom",
                "extraInfo": {"py_callstack": "Traceback (most recent call last):\n" * 5000, "timestamp": "1700000000"},
            }
        }
    ).encode(),
    b'{"message": ' * 5000 + b"1" + b"}" * 5000,  # nested deeper than the JSON parser's recursion limit
]


@pytest.mark.parametrize("body", MALFORMED_ERROR_JSON, ids=range(len(MALFORMED_ERROR_JSON)))
def test_malformed_error_json_gives_a_report_never_a_traceback(tmp_path: Path, body: bytes) -> None:
    run = tmp_path / "run"
    (run / "elastic" / "attempt_0" / "1").mkdir(parents=True)
    (run / "elastic" / "attempt_0" / "1" / "error.json").write_bytes(body)
    (run / "stderr.log").write_text(
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "train.py FAILED\nRoot Cause (first observed failure):\n"
        "  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 7)\n"
    )
    from pytest_faildiag.engine import diagnose, report_dict

    d = diagnose([run], exit_code=1)
    json.dumps(report_dict(d))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_faildiag.cli",
            "diagnose",
            str(run),
            "--exit-code",
            "1",
            "--format",
            "json",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert json.loads(p.stdout)["schema"] == "faildiag.report/1"


@pytest.mark.parametrize("command", ["report", "fix", "lock-diff", "diagnose-lock"])
def test_json_nested_too_deep_is_a_one_line_error_in_every_command(tmp_path: Path, command: str) -> None:
    snap = tmp_path / "snap"
    snap.mkdir()
    deep = snap / "report.json"
    deep.write_bytes(fuzz_scan.DEEP_JSON)
    (tmp_path / "log.txt").write_text("RuntimeError: boom\n")
    argv = {
        "report": ["report", str(snap)],
        "fix": ["fix", str(snap), "--format", "json"],
        "lock-diff": ["lock", "--diff", str(deep), str(deep)],
        "diagnose-lock": ["diagnose", str(tmp_path / "log.txt"), "--lock", str(deep), "--out", str(tmp_path / "o")],
    }
    p = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *argv[command]], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 2, (p.returncode, p.stderr[-500:])
    assert len(p.stderr.strip().splitlines()) == 1 and "internal error" not in p.stderr, p.stderr[-500:]


def test_an_enormous_line_without_a_newline_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # 64 MiB on one line (a progress bar redrawn with \r, never a \n), then the real error on its own line
    log = tmp_path / "bar.log"
    with open(log, "wb") as f:
        chunk = b"\rEpoch 1:  42%|####      | 420/1000 [00:42<00:58, 10.0it/s]" * 16384
        for _ in range(64 * 2**20 // len(chunk)):
            f.write(chunk)
        f.write(b"\nRuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)\n")
    # ru_maxrss survives execve on Linux (a child of a large pytest process starts with its parent's peak):
    # reset the high-water mark first and read VmHWM, the child's own peak, at the end
    script = (
        "import json, sys\n"
        "open('/proc/self/clear_refs', 'w').write('5')\n"
        "from pytest_faildiag.engine import diagnose, report_dict\n"
        "d = diagnose([sys.argv[1]], exit_code=1)\n"
        "hwm = [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
        "print(json.dumps({'cause': d.root_causes[0].id if d.root_causes else None, 'rss_mb': hwm / 1024}))\n"
    )
    p = subprocess.run([sys.executable, "-c", script, str(log)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)
    assert got["cause"] == "model.shape_mismatch"
    assert got["rss_mb"] < 200, got  # the 64 MiB line is never held whole


WRONG_TYPES = [
    (("root_causes", 0, "fix_hints"), True),
    (("root_causes",), {"a": 1}),
    (("root_causes", 0, "evidence"), "x"),
    (("root_causes", 0, "validation_checks"), 3),
    (("profile", "first_failure"), [1, 2]),
    (("next_actions",), 7),
    (("profile",), "oom"),
    (("root_causes", 0), None),
]


@pytest.mark.parametrize(("path", "value"), WRONG_TYPES, ids=[".".join(map(str, p)) for p, _ in WRONG_TYPES])
def test_a_hand_edited_report_with_wrong_types_gets_a_proposal_and_a_rendering(path: tuple, value: object) -> None:
    # found by the snapshot fuzz target: "fix_hints": true made `faildiag fix` fail with a TypeError
    from pytest_faildiag.engine import diagnose, report_dict

    doc = report_dict(
        diagnose(
            texts={"stderr": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"},
            exit_code=1,
            command="python train.py",
        )
    )
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    fuzz_scan.snapshot_one(doc)
