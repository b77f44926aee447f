"""The plugin survives its own faults: the engine raising, a full disk, an output folder it cannot create,
SIGKILL while snapshots are being written. In each case the test's own outcome is reported as it really was,
faildiag says what went wrong as a warning, and nothing half-written is ever read back.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = """
def test_passes():
    assert 1 + 1 == 2


def test_fails_for_real():
    print("loading shard 3" * 200)
    raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
"""


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_", "FAILDIAG"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def run_pytest(cwd: Path, *args: str, preexec=None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A real pytest process (pipes, not files, carry its output: pipes are not subject to RLIMIT_FSIZE)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=timeout,
        preexec_fn=preexec,
    )


def assert_real_outcome_and_warned(p: subprocess.CompletedProcess[str], warning: str) -> None:
    out = p.stdout + p.stderr
    assert p.returncode == 1, out[-3000:]  # TESTS_FAILED: not INTERNAL_ERROR (3), not USAGE_ERROR (4)
    assert "INTERNALERROR" not in out, out[-3000:]
    assert "1 failed, 1 passed" in out, out[-3000:]
    assert "FAILED test_faulty.py::test_fails_for_real" in out and "PASSED test_faulty.py::test_passes" in out
    assert warning in out, out[-3000:]


def test_the_engine_raising_becomes_a_warning_and_the_outcomes_stay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_faildiag.engine.api as api

    def exploding(*args, **kwargs):
        raise RuntimeError("engine exploded on purpose")

    monkeypatch.setattr(api, "diagnose", exploding)  # the plugin looks it up on each failure
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    pytester.makepyfile(test_faulty=TESTS)
    result = pytester.runpytest("--faildiag", "-rA")
    result.assert_outcomes(failed=1, passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    assert "engine exploded on purpose" in text and "PytestFaildiagWarning" in text
    assert "INTERNALERROR" not in text
    index = json.loads((pytester.path / "faildiag-out" / "session.json").read_text())
    assert index["tests"] == []  # nothing diagnosed, and it says so instead of inventing an entry


def test_the_engine_raising_under_warnings_as_errors_still_keeps_the_outcomes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_faildiag.engine.api as api

    monkeypatch.setattr(api, "diagnose", lambda *a, **k: (_ for _ in ()).throw(MemoryError("engine out of memory")))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    pytester.makepyfile(test_faulty=TESTS)
    result = pytester.runpytest("--faildiag", "-W", "error", "-W", "ignore::pytest.PytestAssertRewriteWarning", "-rA")
    result.assert_outcomes(failed=1, passed=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@contextlib.contextmanager
def full_tmpfs(where: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs filled to the last byte; skips where mounting is not allowed (not root, no CAP_SYS_ADMIN)."""
    where.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True, text=True)
    if m.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {m.stderr.strip() or m.returncode}")
    try:
        with contextlib.suppress(OSError), open(where / "filler", "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 4096)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_disk_leaves_the_outcomes_and_warns(tmp_path: Path) -> None:
    (tmp_path / "test_faulty.py").write_text(TESTS)
    with full_tmpfs(tmp_path / "full") as full:
        p = run_pytest(tmp_path, "--faildiag", f"--faildiag-out={full / 'out'}")
        assert_real_outcome_and_warned(p, "PytestFaildiagWarning")
        assert "No space left on device" in p.stdout + p.stderr
        assert not (full / "out" / "session.json").exists() or json.loads((full / "out" / "session.json").read_text())


def _limit_file_size() -> None:
    """In the child: files may not grow past 4 KiB (writes then fail with EFBIG instead of killing it)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_files_that_cannot_grow_leave_the_outcomes_and_warn(tmp_path: Path) -> None:
    # the portable stand-in for a full disk (no mount needed): every write past 4 KiB fails with EFBIG
    (tmp_path / "test_faulty.py").write_text(TESTS)
    p = run_pytest(tmp_path, "--faildiag", preexec=_limit_file_size)
    assert_real_outcome_and_warned(p, "PytestFaildiagWarning")
    assert "File too large" in p.stdout + p.stderr
    for report in (tmp_path / "faildiag-out").rglob("report.json"):
        json.loads(report.read_text())  # whatever was written is whole


def test_an_output_folder_that_cannot_be_created_leaves_the_outcomes_and_warns(tmp_path: Path) -> None:
    # chmod 0555 is no obstacle to root; a path below a regular file cannot be created by anyone
    (tmp_path / "test_faulty.py").write_text(TESTS)
    (tmp_path / "a-file").write_text("not a folder\n")
    p = run_pytest(tmp_path, "--faildiag", "--faildiag-out=a-file/out")
    assert_real_outcome_and_warned(p, "PytestFaildiagWarning")
    assert "Not a directory" in p.stdout + p.stderr
    assert (tmp_path / "a-file").read_text() == "not a folder\n"
    # the diagnosis itself still reached the terminal, with the failure
    assert "- faildiag -" in p.stdout and "shape" in p.stdout.split("- faildiag -", 1)[1]


def test_a_read_only_file_system_leaves_the_outcomes_and_warns(tmp_path: Path) -> None:
    # a read-only mount stops root too (EROFS), unlike chmod 0555
    (tmp_path / "test_faulty.py").write_text(TESTS)
    ro = tmp_path / "ro"
    ro.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], capture_output=True, text=True)
    if m.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {m.stderr.strip() or m.returncode}")
    try:
        p = run_pytest(tmp_path, "--faildiag", f"--faildiag-out={ro / 'out'}")
        assert_real_outcome_and_warned(p, "PytestFaildiagWarning")
        assert "Read-only file system" in p.stdout + p.stderr
        assert "- faildiag -" in p.stdout  # the diagnosis still reached the terminal
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


MANY = """
import pytest


@pytest.mark.parametrize("n", range(400))
def test_fails_with_output(n):
    print(("rank %d: step output " % n) * 3000)
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
"""


def test_sigkill_while_snapshots_are_written_leaves_nothing_half_written(tmp_path: Path) -> None:
    (tmp_path / "test_many.py").write_text(MANY)
    out = tmp_path / "faildiag-out"
    p = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--faildiag"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and p.poll() is None:
            if out.is_dir() and sum(1 for _ in out.glob("*/report.json")) >= 3:
                break
            time.sleep(0.02)
        assert p.poll() is None, "the session ended before it could be killed mid-way"
        p.send_signal(signal.SIGKILL)
    finally:
        p.kill()
        p.wait()
    snapshots = [d for d in out.iterdir() if d.is_dir()]
    assert snapshots
    for d in snapshots:
        if (d / "report.json").exists():
            json.loads((d / "report.json").read_text())  # whole, or absent: never torn
    assert not (out / "session.json").exists()  # the controller never reached session end

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest_faildiag.cli", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=clean_env(),
            timeout=120,
        )

    results = [cli("recover", "--out", str(out), "--format", "json"), cli("report", str(out), "--format", "md")]
    results += [cli("report", str(d), "--format", fmt) for d in snapshots[:4] for fmt in ("text", "github")]
    for r in results:
        assert "Traceback" not in r.stderr, r.stderr[-2000:]
        assert r.returncode in (0, 2), (r.args, r.returncode, r.stderr)
        if r.returncode == 2:
            assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    recovered = json.loads(results[0].stdout)
    # at most the one test that was running (none when the kill fell between a result and the next start)
    assert len(recovered["killed"]) <= 1, recovered
    assert all(k["nodeid"].startswith("test_many.py::test_fails_with_output[") for k in recovered["killed"])
    # and the next session on the same folder starts, recovers the dead test and reports its own outcome
    (tmp_path / "test_many.py").write_text(TESTS.replace("test_fails_for_real", "test_fails_again"))
    nxt = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--faildiag"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert nxt.returncode == 1 and "1 failed, 1 passed" in nxt.stdout, nxt.stdout[-3000:]
    assert "INTERNALERROR" not in nxt.stdout + nxt.stderr
