"""`faildiag run` end to end on real processes: exit statuses, signals, crashes, hangs, big output."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from .conftest import faildiag_cmd

PY = sys.executable


def test_it_exits_with_the_commands_own_status_and_passes_output_through(faildiag_run):
    r = faildiag_run([PY, "-c", "import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)"])
    assert r.returncode == 3
    assert "to stdout" in r.stdout
    assert "to stderr" in r.stderr
    assert (r.out / "logs" / "stdout.log").read_text() == "to stdout\n"
    assert (r.out / "logs" / "stderr.log").read_text() == "to stderr\n"
    assert r.report()["profile"]["exit_code"] == 3


def test_it_leaves_no_diagnosis_after_a_passing_run_but_keeps_its_lock(faildiag_run):
    r = faildiag_run([PY, "-c", "print('fine')"])
    assert r.returncode == 0
    assert r.stdout == "fine\n"
    assert r.stderr == ""
    assert not (r.out / "report.json").exists()
    assert (r.out / "last-green.lock.json").is_file()
    assert (r.out / "timeline.jsonl").is_file()


def test_it_hands_the_last_green_lock_to_the_next_failure(faildiag_run):
    faildiag_run([PY, "-c", "print('fine')"])
    r = faildiag_run([PY, "-c", "raise SystemExit(2)"])
    assert r.returncode == 2
    checks = [c["name"] for cause in r.report()["root_causes"] for c in cause["validation_checks"]]
    assert (r.out / "last-green.lock.json").is_file()
    assert (r.out / "artifacts" / "failure.lock.json").is_file()
    assert checks  # the diagnosis ran with both locks at hand


def test_it_reports_a_command_that_cannot_start_as_a_shell_would(faildiag_run):
    r = faildiag_run(["faildiag-no-such-command-xyz"])
    assert r.returncode == 127
    assert r.stderr.strip() == "faildiag: command not found: faildiag-no-such-command-xyz"


def test_it_refuses_a_missing_command_in_one_line(tmp_path):
    cp = subprocess.run(faildiag_cmd("--out", str(tmp_path / "o")), capture_output=True, text=True)
    assert cp.returncode == 2
    assert cp.stderr.count("\n") == 1 and "give the command" in cp.stderr


def test_it_diagnoses_a_process_killed_by_sigkill(faildiag_run):
    r = faildiag_run([PY, "-c", "import os, signal; print('step 1', flush=True); os.kill(os.getpid(), signal.SIGKILL)"])
    assert r.returncode == 137
    rep = r.report()
    assert rep["profile"]["signal"] == "SIGKILL"
    assert {c["category"] for c in rep["root_causes"]} >= {"resource", "harness"}
    run = r.run_json()
    assert run["returncode"] == -9 and run["signal"] == "SIGKILL"
    assert run["oom"] is not None  # the OOM-killer question was asked of the machine
    oom_check = [c for cause in rep["root_causes"] for c in cause["validation_checks"] if c["name"] == "oom-killer"]
    assert oom_check and oom_check[0]["status"] in {"failed", "skipped"}  # nothing was OOM-killed here


def test_it_diagnoses_a_segfault_with_the_python_frame_that_crashed(faildiag_run, script):
    s = script(
        "crash.py",
        """\
        import ctypes
        def read_null():
            return ctypes.string_at(0)
        print("about to crash")
        read_null()
    """,
    )
    r = faildiag_run([PY, str(s)])
    assert r.returncode == 139
    rep = r.report()
    assert rep["profile"]["type"] == "crash" and rep["profile"]["signal"] == "SIGSEGV"
    assert rep["root_causes"][0]["category"] == "library"
    # PYTHONFAULTHANDLER was injected: the dump names the user's frame
    log = (r.out / "logs" / "stderr.log").read_text()
    assert 'crash.py", line 3 in read_null' in log
    assert "about to crash" in (r.out / "logs" / "stdout.log").read_text()  # not lost in a pipe buffer
    assert not any(c["id"].startswith("hang.") for c in rep["root_causes"])


def _default_sigint() -> None:
    """Start like a shell's foreground job: a runner started in the background may pass SIGINT as ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_it_forwards_sigint_to_the_command_and_returns_its_status(tmp_path, script):
    s = script(
        "interruptible.py",
        """\
        import sys, time
        try:  # "ready" inside the try: a child descheduled right after printing it still handles the SIGINT
            print("ready", flush=True)
            time.sleep(30)
        except KeyboardInterrupt:
            print("child got SIGINT", flush=True)
            sys.exit(5)
    """,
    )
    proc = subprocess.Popen(
        faildiag_cmd("--out", str(tmp_path / "o"), "--quiet", "--", PY, str(s)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert "child got SIGINT" in out
    assert proc.returncode == 5


def test_it_keeps_its_memory_bounded_while_a_command_prints_200_mb(tmp_path, script):
    s = script(
        "noisy.py",
        """\
        import sys
        line = b"x" * 1023 + b"\\n"
        block = line * 1024
        for i in range(200):
            sys.stdout.buffer.write(block)
        sys.stdout.buffer.write(b"LAST LINE\\n")
        sys.stdout.flush()
    """,
    )
    out = tmp_path / "o"
    proc = subprocess.Popen(
        faildiag_cmd("--out", str(out), "--", PY, str(s)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    me = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, me.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    assert proc.wait(timeout=120) == 0
    assert 0 < peak < 100 * 2**20, f"faildiag run peaked at {peak / 2**20:.0f} MiB"
    log = out / "logs" / "stdout.log"
    assert log.stat().st_size < 20 * 2**20  # head + tail, not 200 MB
    data = log.read_bytes()
    assert data.endswith(b"LAST LINE\n")
    assert b"bytes omitted here" in data
    assert sum(1 for p in (out / "logs").iterdir()) == 2  # the tail segments were folded in


def test_it_detects_a_deadlock_dumps_every_python_process_and_stops_the_run(faildiag_run, script):
    s = script(
        "deadlock.py",
        """\
        import multiprocessing as mp
        import threading
        import time

        a, b = threading.Lock(), threading.Lock()

        def one():
            with a:
                time.sleep(0.2)
                with b:
                    pass

        def two():
            with b:
                time.sleep(0.2)
                with a:
                    pass

        def consumer(q):
            q.get()

        if __name__ == "__main__":
            ctx = mp.get_context("fork")
            q = ctx.Queue()
            worker = ctx.Process(target=consumer, args=(q,))
            worker.start()
            threads = [threading.Thread(target=one), threading.Thread(target=two)]
            for t in threads:
                t.start()
            print("started", flush=True)
            for t in threads:
                t.join()
    """,
    )
    start = time.monotonic()
    r = faildiag_run([PY, str(s)], "--hang-timeout", "1.5", "--grace", "2")
    assert time.monotonic() - start < 60
    assert r.returncode == 124
    rep = r.report()
    assert rep["profile"]["type"] == "hang"
    run = r.run_json()
    assert run["hung"] is True
    assert len(run["stacks"]) == 2  # the main process and its worker
    dumps = "\n".join((r.out / "stacks" / p).read_text() for p in os.listdir(r.out / "stacks"))
    assert f'File "{s}", line 10 in one' in dumps  # blocked on `with b:`
    assert f'File "{s}", line 16 in two' in dumps  # blocked on `with a:`
    assert f'File "{s}", line 20 in consumer' in dumps  # blocked on q.get()
    assert "deadlock.py" in (r.out / "process-tree.txt").read_text()
    text = r.stderr
    assert "hang" in text and "deadlock.py" in text
    # the run was stopped: nothing of it is left running
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(s) in " ".join(p.info["cmdline"] or [])]


def test_it_counts_a_growing_watched_file_as_progress(faildiag_run, script, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    s = script(
        "quiet_writer.py",
        f"""\
        import time
        with open({str(ckpt / "state.bin")!r}, "ab") as f:
            for _ in range(12):
                time.sleep(0.25)
                f.write(b"x" * 100)
                f.flush()
    """,
    )
    r = faildiag_run([PY, str(s)], "--hang-timeout", "1", "--watch", str(ckpt))
    assert r.returncode == 0, r.stderr


def test_its_stack_handler_chains_to_an_existing_sitecustomize(faildiag_run, script, tmp_path):
    user_site = tmp_path / "usersite"
    user_site.mkdir()
    (user_site / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITECUSTOMIZE_RAN = True\n")
    s = script(
        "probe.py",
        """\
        import builtins, os, signal
        print("chained:", getattr(builtins, "USER_SITECUSTOMIZE_RAN", False), flush=True)
        os.kill(os.getpid(), signal.SIGUSR1)  # would kill the process without faildiag's handler
        pid = os.fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGUSR1)
            os._exit(0)
        os.waitpid(pid, 0)
        print("alive", os.getpid(), pid, flush=True)
    """,
    )
    r = faildiag_run([PY, str(s)], "--hang-timeout", "30", env={"PYTHONPATH": str(user_site)})
    assert r.returncode == 0, r.stderr
    assert "chained: True" in r.stdout
    parent, child = r.stdout.split("alive")[1].split()
    stacks = r.out / "stacks"
    assert "line 3 in <module>" in (stacks / f"{parent}.txt").read_text()
    assert (stacks / f"{child}.txt").read_text().strip()  # the forked child wrote its own file


def test_it_reads_a_flight_recorder_dump_from_a_collected_folder(faildiag_run, script, tmp_path):
    src = Path(__file__).parents[1] / "data" / "corpus" / "gpu" / "nccl_watchdog_timeout" / "flight_recorder_rank_0.pkl"
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "nccl_trace_rank_0").write_bytes(src.read_bytes())
    r = faildiag_run([PY, "-c", "raise SystemExit(1)"], "--collect", str(dumps))
    assert r.returncode == 1
    fr = r.report()["flight_recorder"]
    assert fr[0]["rank"] == 0 and fr[0]["first_incomplete"]["op"] == "nccl:all_reduce"


def _wait_blocked_reading(wrapper: int, script_path: str) -> None:
    """Wait until the command sleeps in its read of the terminal.

    Why: Python writes ``input()``'s prompt, then enters ``read()``; a SIGINT that lands between the two runs
    only the C-level handler, and the KeyboardInterrupt waits until ``read()`` returns - so a Ctrl-C typed
    the moment the prompt shows can sit unseen (a race of CPython's, with or without faildiag). A person
    types later than that; the test waits for the read instead.
    """
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:  # the wrapper's other short-lived helpers may exit while they are listed
            kids = [p for p in psutil.Process(wrapper).children(recursive=True) if script_path in p.cmdline()]
            if kids and kids[0].status() == psutil.STATUS_SLEEPING:
                time.sleep(0.05)  # still asleep a moment later: the read, not a passing wait
                if kids[0].status() == psutil.STATUS_SLEEPING:
                    return
        except psutil.Error:
            pass
        time.sleep(0.02)


def test_a_command_can_read_the_terminal_and_ctrl_c_reaches_it(tmp_path, script):
    import pty

    s = script(
        "interactive.py",
        """\
        import sys
        name = input("name? ")
        print("hello", name, flush=True)
        try:
            input("again? ")
        except KeyboardInterrupt:
            print("interrupted by the terminal", flush=True)
            sys.exit(7)
    """,
    )
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session whose controlling terminal is the pty, like a shell's job
        # an interactive shell starts its jobs with SIGINT at default; a test runner started in the background
        # may have inherited SIG_IGN, which exec keeps and which would make Python ignore Ctrl-C
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(PY, faildiag_cmd("--out", str(tmp_path / "o"), "--quiet", "--", PY, str(s)))
    seen = b""

    def read_until(token: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 30
        while token not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:  # never block past the deadline: a lost prompt fails the test instead of hanging CI
                break
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
        assert token in seen, seen

    try:
        read_until(b"name? ")
        os.write(fd, b"world\n")
        read_until(b"again? ")
        _wait_blocked_reading(pid, str(s))
        os.write(fd, b"\x03")  # Ctrl-C typed on the terminal
        read_until(b"interrupted by the terminal")
    except BaseException:
        for p in [*psutil.Process(pid).children(recursive=True), psutil.Process(pid)]:
            p.kill()
        raise
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7
    assert b"hello world" in seen


def test_no_diagnose_keeps_the_evidence_and_quiet_keeps_faildiag_silent(faildiag_run):
    r = faildiag_run([PY, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(4)"], "--no-diagnose", "--quiet")
    assert r.returncode == 4
    assert r.stderr == "boom\n"  # only the command's own output
    assert not (r.out / "report.json").exists()
    assert r.run_json()["exit_status"] == 4
    assert (r.out / "logs" / "stderr.log").read_text() == "boom\n"


def test_a_repeated_passing_run_reuses_the_green_lock_until_the_environment_changes(faildiag_run):
    first = faildiag_run([PY, "-c", "pass"])
    green = first.out / "last-green.lock.json"
    built = green.stat().st_mtime_ns
    assert faildiag_run([PY, "-c", "pass"]).returncode == 0
    assert green.stat().st_mtime_ns == built  # same environment: the lock was not rebuilt
    assert faildiag_run([PY, "-c", "pass"], env={"FAILDIAG_TEST_KNOB": "1"}).returncode == 0
    assert green.stat().st_mtime_ns != built  # an environment variable changed: rebuilt
    assert json.loads(green.read_text())["schema"].startswith("faildiag.lock")
