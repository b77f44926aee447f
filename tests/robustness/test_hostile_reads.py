"""Every input is hostile: crafted folders, journals, sessions, pickles and JSON, run through the real CLI
(or a real pytest session) in a subprocess with a timeout, because hanging is one of the attacks.

Each test builds its crafted input itself: FIFOs, sockets, symlinks to devices and out of the named folder,
sparse gigabyte files, shared-reference pickles, deeply nested JSON. The secrets they aim at are planted in a
throw-away HOME, so a leak shows up as a marker string in what faildiag wrote.
"""

from __future__ import annotations

import json
import os
import pickle
import pickletools
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECRET = "SECRETMARK-7f3a9c"
ENV_MARK = "ENVMARK-c41d2e"
OOM_LOG = (
    'Traceback (most recent call last):\n  File "/w/train.py", line 9, in <module>\n    loss.backward()\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)

MEASURE = """
import resource, subprocess, sys, time
t = time.monotonic()
try:
    p = subprocess.run(sys.argv[2:], capture_output=True, timeout=float(sys.argv[1]))
    rc, out, err = p.returncode, p.stdout, p.stderr
except subprocess.TimeoutExpired as exc:
    rc, out, err = "timeout", exc.stdout or b"", exc.stderr or b""
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
sys.stdout.write(repr({"rc": rc, "seconds": time.monotonic() - t, "peak": peak,
                       "stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace")}))
"""


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The CLI's environment: the planted HOME, and pytest's temporary root moved next to it (this test's own
    tmp_path lies in the real one, which faildiag may read: the planted secrets must lie outside it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PYTEST_ADDOPTS"))}
    temproot = home.parent / "temproot"
    temproot.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
        PYTEST_DEBUG_TEMPROOT=str(temproot),
        **extra,
    )
    return env


def faildiag(*args: str, cwd: Path, home: Path, timeout: float = 60) -> dict:
    """The real CLI in a fresh process, measured: exit status, wall time, and the peak RSS of the CLI and
    anything it started (``RUSAGE_CHILDREN`` of a wrapper whose only child is the CLI)."""
    cmd = [sys.executable, "-c", MEASURE, str(timeout), sys.executable, "-m", "pytest_faildiag.cli", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=_env(home), timeout=timeout + 30)
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout)  # noqa: S307 - our own wrapper's repr of a dict of str/int/float


def plant_home(tmp_path: Path) -> Path:
    """A throw-away HOME holding the files an attacker wants: cloud credentials and an SSH key."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n# {SECRET}\nRuntimeError: CUDA out of memory {SECRET}\n"
    )
    (home / ".ssh").mkdir()
    key_body = "\n".join(f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ{SECRET}{i:02d}" for i in range(8))
    (home / ".ssh" / "id_rsa").write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{key_body}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    return home


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return proj


def written(folder: Path) -> str:
    """Everything faildiag wrote under ``folder``, as one string to search for leaked markers."""
    return "\n".join(
        p.read_text(errors="replace") for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()
    )


def bind_socket(path: Path) -> None:
    """A UNIX socket file at ``path`` (bound from its folder: socket paths are limited to ~100 bytes)."""
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path.name)
        s.close()
    finally:
        os.chdir(here)


def shared_reference_bomb(levels: int = 22) -> list:
    """``a = [a, a]`` nested ``levels`` deep: a few hundred bytes pickled, 2**levels lists when walked."""
    a: list = []
    for _ in range(levels):
        a = [a, a]
    return a


def hostile_dump() -> bytes:
    bomb = shared_reference_bomb()
    dump = {
        "version": bomb,
        "pg_status": bomb,
        "rank": 0,
        "entries": [
            {
                "state": "scheduled",
                "collective_seq_id": 3,
                "profiling_name": bomb,
                "input_sizes": bomb,
                "timeout_ms": bomb,
                "frames": [{"filename": bomb, "line": bomb}],
            }
        ],
    }
    data = pickle.dumps(dump, protocol=4)
    assert len(data) < 1024
    return data


def many_objects_dump(n: int = 3_000_000) -> bytes:
    """A few megabytes that unpickle into ``n`` empty dicts (~200 MB): one opcode per object."""
    return b"\x80\x04}\x94(\x8c\x07entries\x94](" + b"}" * n + b"eu."


def hostile_folder(tmp_path: Path, home: Path) -> Path:
    """Every special or huge thing a folder can hold, next to one real log."""
    d = tmp_path / "hostile"
    d.mkdir()
    (d / "train.log").write_text(OOM_LOG)
    os.mkfifo(d / "stuck.log")  # nobody ever writes: opening it for reading blocks forever
    bind_socket(d / "agent.sock.log")
    (d / "error.json").symlink_to("/dev/zero")  # grew to 7.5 GB in 15 s
    (d / "rank0.log").symlink_to("/dev/zero")
    (d / "urandom.txt").symlink_to("/dev/urandom")
    (d / "loop-a.log").symlink_to(d / "loop-b.log")
    (d / "loop-b.log").symlink_to(d / "loop-a.log")
    (d / "creds.log").symlink_to(home / ".aws" / "credentials")  # a link out of the named folder
    with open(d / "huge.log", "w") as f:  # a real text start, then a sparse gigabyte of NULs on one line
        f.write("RuntimeError: CUDA error: an illegal memory access was encountered\n" * 200)
    os.truncate(d / "huge.log", 1 << 30)
    (d / "sparse.json").touch()
    os.truncate(d / "sparse.json", 1 << 30)
    (d / "deep.json").write_text("[" * 900 + "]" * 900)
    (d / "env.lock.json").write_text('{"schema": "faildiag.lock/1", "packages": ' + "[" * 900 + "]" * 900 + "}")
    (d / "readiness.json").write_text("[" * 200_000 + "]" * 200_000)
    (d / "nccl_trace_rank_0.pkl").write_bytes(hostile_dump())
    (d / "nccl_trace_rank_1.pkl").write_bytes(many_objects_dump())
    (d / "results.xml").write_text("<testsuite>" + "<x>" * 50_000 + "</x>" * 50_000 + "</testsuite>")
    return d


def test_diagnose_on_any_folder_finishes_within_60s_and_300mb(tmp_path):
    home = plant_home(tmp_path)
    folder = hostile_folder(tmp_path, home)
    out = tmp_path / "out"
    r = faildiag("diagnose", str(folder), "--out", str(out), "--format", "json", cwd=tmp_path, home=home)
    assert r["rc"] == 0, r["stderr"]
    assert r["seconds"] < 60, r
    assert r["peak"] < 300 * 2**20, f"peak RSS {r['peak'] / 2**20:.0f} MB"
    report = json.loads(r["stdout"])
    assert report["profile"]["type"] == "oom"  # the real log still drives the diagnosis
    notes = "\n".join(report["notes"])
    for expected in (
        "stuck.log: a FIFO",
        "agent.sock.log: a socket",
        "error.json: a character device",
        "rank0.log: a character device",
        "urandom.txt: a character device",
        "loop-a.log: symbolic link loop",
        "creds.log: outside the folders faildiag may read",
        "sparse.json: larger than 16 MiB",
        "deep.json: JSON nested deeper than 64 levels",
        "env.lock.json: JSON nested deeper",
        "readiness.json: JSON nested deeper",
        "nccl_trace_rank_1.pkl: not a readable",
    ):
        assert expected in notes, notes
    assert len(json.dumps(report["flight_recorder"])) < 100_000  # the shared-reference dump: read, bounded
    assert "internal error" not in r["stderr"] and "Traceback" not in r["stderr"]
    assert SECRET not in r["stdout"] and SECRET not in written(out)
    assert (out / "report.json").stat().st_size < 1 << 20


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "socket"])
def test_a_special_file_named_on_the_command_line_is_a_one_line_error(tmp_path, target):
    home = plant_home(tmp_path)
    path = tmp_path / "named.log"
    if target == "fifo":
        os.mkfifo(path)
    elif target == "socket":
        bind_socket(path)
    else:
        path.symlink_to(target)
    r = faildiag("diagnose", str(path), "--out", str(tmp_path / "out"), cwd=tmp_path, home=home, timeout=30)
    assert r["rc"] == 2 and r["seconds"] < 30
    assert r["stderr"].count("\n") == 1 and "not a regular file" in r["stderr"], r["stderr"]


def test_json_nested_900_deep_is_a_clear_error_not_a_recursion_error(tmp_path):
    home = plant_home(tmp_path)
    (tmp_path / "t.log").write_text(OOM_LOG)
    (tmp_path / "deep.lock.json").write_text('{"packages": ' + "[" * 900 + "]" * 900 + "}")
    r = faildiag(
        "diagnose",
        str(tmp_path / "t.log"),
        "--lock",
        str(tmp_path / "deep.lock.json"),
        "--out",
        str(tmp_path / "out"),
        cwd=tmp_path,
        home=home,
    )
    assert r["rc"] == 2 and "nested deeper than 64 levels" in r["stderr"], r["stderr"]
    assert "RecursionError" not in r["stderr"] and r["stderr"].count("\n") == 1
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "report.json").write_text('{"schema": "faildiag.report/1", "summary": ' + "[" * 900 + "]" * 900 + "}")
    r = faildiag("report", str(snap), "--format", "html", cwd=tmp_path, home=home)
    assert r["rc"] == 2 and "RecursionError" not in r["stderr"] and "internal error" not in r["stderr"]


def test_a_shared_reference_flight_recorder_pickle_is_bounded(tmp_path):
    home = plant_home(tmp_path)
    d = tmp_path / "dumps"
    d.mkdir()
    (d / "stderr.log").write_text(
        "[rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, "
        "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600005 milliseconds before timing out.\n"
    )
    (d / "nccl_trace_rank_0.pkl").write_bytes(hostile_dump())
    r = faildiag("diagnose", str(d), "--out", str(tmp_path / "out"), "--format", "json", cwd=tmp_path, home=home)
    assert r["rc"] == 0 and r["seconds"] < 30 and r["peak"] < 300 * 2**20, r
    assert len(r["stdout"]) < 1 << 20  # was a 1.1 GB report
    fr = json.loads(r["stdout"]).get("flight_recorder") or []
    assert fr and fr[0]["first_incomplete"]["seq"] == 3  # the dump is still read, only bounded
    assert len(json.dumps(fr)) < 200_000


def test_pickle_code_execution_stays_refused(tmp_path):
    home = plant_home(tmp_path)
    pwned = tmp_path / "PWNED"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {pwned}",))

    d = tmp_path / "dumps"
    d.mkdir()
    (d / "stderr.log").write_text(OOM_LOG)
    (d / "nccl_trace_rank_0.pkl").write_bytes(pickle.dumps({"entries": [Evil()]}))
    assert any(op.name == "REDUCE" for op, _, _ in pickletools.genops((d / "nccl_trace_rank_0.pkl").read_bytes()))
    r = faildiag("diagnose", str(d), "--out", str(tmp_path / "out"), "--format", "json", cwd=tmp_path, home=home)
    assert r["rc"] == 0
    assert not pwned.exists()
    assert any("nccl_trace_rank_0.pkl: not a readable" in n for n in json.loads(r["stdout"])["notes"])


def crafted_journal(out: Path, paths: list[str], pid: int = 4242) -> None:
    """A journal saying process ``pid`` died running a test whose commands wrote ``paths``."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        {"e": "session_start", "t": 1.0, "pid": pid},
        {"e": "process", "t": 1.0, "pid": pid, "main_thread": 1},
        {"e": "start", "t": 2.0, "pid": pid, "nodeid": "test_k.py::test_killed"},
    ]
    lines += [{"e": "artifact", "t": 2.5, "pid": pid, "nodeid": "test_k.py::test_killed", "path": p} for p in paths]
    (out / "journal.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def attack_paths(tmp_path: Path, home: Path, out: Path, proj: Path) -> list[str]:
    (out / "planted.log").symlink_to(home / ".aws" / "credentials")  # inside the out folder, pointing out
    (out / ".stacks-4242.txt").symlink_to(home / ".ssh" / "id_rsa")
    (out / "zero.stdout").symlink_to("/dev/zero")
    os.mkfifo(out / "fifo.stderr")
    (proj / "run1.stderr").write_text(OOM_LOG)  # a real output file inside the project: still read
    return [
        "/proc/self/environ",
        "/etc/passwd",
        str(home / ".aws" / "credentials"),
        str(out / "planted.log"),
        str(proj / ".." / "home" / ".ssh" / "id_rsa"),
        str(out / "zero.stdout"),
        str(out / "fifo.stderr"),
        str(proj / "run1.stderr"),
    ]


def assert_nothing_leaked(out: Path) -> None:
    text = written(out)
    assert SECRET not in text and ENV_MARK not in text
    assert "root:x:0:0" not in text  # /etc/passwd


def test_recover_reads_only_inside_the_allowed_folders(tmp_path):
    home = plant_home(tmp_path)
    proj = project(tmp_path)
    out = proj / "faildiag-out"
    crafted_journal(out, [])
    crafted_journal(out, attack_paths(tmp_path, home, out, proj))
    env_cmd = [sys.executable, "-m", "pytest_faildiag.cli", "recover", "--out", str(out), "--format", "json"]
    proc = subprocess.run(
        env_cmd, capture_output=True, text=True, cwd=proj, env=_env(home, LEAK_ME=ENV_MARK), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    killed = json.loads(proc.stdout)["killed"]
    assert [k["nodeid"] for k in killed] == ["test_k.py::test_killed"]
    assert_nothing_leaked(out)
    evidence = out / killed[0]["slug"] / "evidence"
    assert OOM_LOG.strip() in (evidence / "run1.stderr").read_text()  # the legitimate output file was read
    assert killed[0]["type"] == "oom"
    journal_txt = (evidence / "journal.txt").read_text()
    for name in ("environ", "passwd", "credentials", "planted.log", "id_rsa"):
        assert f"{name}: outside the folders faildiag may read" in journal_txt, journal_txt
    assert "zero.stdout: a character device" in journal_txt and "fifo.stderr: a FIFO" in journal_txt


def test_the_next_pytest_session_recovers_without_reading_outside(pytester, tmp_path):
    home = plant_home(tmp_path)
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    out = pytester.path / "faildiag-out"
    crafted_journal(out, [])
    crafted_journal(out, attack_paths(tmp_path, home, out, pytester.path))
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    env = _env(home, LEAK_ME=ENV_MARK)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--faildiag", "-q"],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recovered = json.loads((out / "session.json").read_text())["recovered"]
    assert [r["nodeid"] for r in recovered] == ["test_k.py::test_killed"]
    assert_nothing_leaked(out)
    assert OOM_LOG.strip() in (out / recovered[0]["slug"] / "evidence" / "run1.stderr").read_text()


def test_a_huge_crafted_journal_is_read_streaming_and_bounded(tmp_path):
    home = plant_home(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    with open(out / "journal.jsonl", "w") as f:
        f.write(json.dumps({"e": "session_start", "t": 1, "pid": 1}) + "\n")
        for pid in range(200_000):  # 200,000 processes that all "died"
            f.write(f'{{"e": "start", "t": 2, "pid": {pid}, "nodeid": "t.py::test_{pid}"}}\n')
        f.write("[" * 100_000 + "\n")  # a line nested too deep to parse
        f.write('{"e": "start", "pid": 7, "nodeid": "' + "x" * (2 << 20) + '"}\n')  # longer than any real line
    r = faildiag("recover", "--out", str(out), "--format", "json", cwd=tmp_path, home=home, timeout=120)
    assert r["rc"] == 0, r["stderr"]
    assert len(json.loads(r["stdout"])["killed"]) == 64  # at most MAX_DEAD snapshots, not 200,000
    assert r["peak"] < 300 * 2**20
    (out / "journal.jsonl").unlink()
    (out / "journal.jsonl").symlink_to("/dev/zero")
    r = faildiag("recover", "--out", str(out), cwd=tmp_path, home=home, timeout=30)
    assert r["rc"] == 2 and "a character device, not a regular file" in r["stderr"]


def crafted_session(out: Path, files: list[tuple[str, int]]) -> None:
    out.mkdir(parents=True)
    tests = [
        {
            "nodeid": f"tests/test_x.py::test_{i}",
            "when": "call",
            "outcome": "failed",
            "category": "model",
            "type": "runtime_error",
            "summary": f"failure {i}",
            "confidence": 0.5,
            "file": f,
            "line": line,
            "slug": None,
            "snapshot": None,
        }
        for i, (f, line) in enumerate(files)
    ]
    (out / "session.json").write_text(json.dumps({"schema": "faildiag.session/1", "tests": tests}))


def test_the_html_report_embeds_only_project_files_and_redacts_them(tmp_path):
    home = plant_home(tmp_path)
    proj = project(tmp_path)
    (proj / "tests").mkdir()
    (proj / "tests" / "test_x.py").write_text(
        "import os\n\n\ndef test_0():\n    API_KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz012345'\n"
        "    assert os.environ.get('X') == 'needle-line-6'\n"
    )
    (proj / "tests" / "link.py").symlink_to(home / ".ssh" / "id_rsa")
    os.mkfifo(proj / "tests" / "fifo.py")
    out = proj / "faildiag-out"
    crafted_session(
        out,
        [
            ("tests/test_x.py", 6),
            (str(home / ".ssh" / "id_rsa"), 4),
            ("../home/.ssh/id_rsa", 3),
            ("tests/link.py", 2),
            (str(home / ".aws" / "credentials"), 3),
            ("/etc/passwd", 1),
            ("tests/fifo.py", 1),
            ("/dev/zero", 1),
        ],
    )
    r = faildiag("report", str(out), "--format", "html", cwd=proj, home=home, timeout=60)
    assert r["rc"] == 0, r["stderr"]
    page = r["stdout"]
    assert "needle-line-6" in page  # the project's own test file is shown around its failing line
    assert "abcdefghijklmnopqrstuvwxyz012345" not in page  # ... redacted
    assert SECRET not in page and "OPENSSH PRIVATE KEY" not in page and "root:x:0:0" not in page


def retort_experiment(tmp_path: Path, home: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    try:
        from tests.retort.retort_helpers import Experiment
    finally:
        sys.path.remove(str(ROOT))
    exp = Experiment(tmp_path / "exp")
    rep = exp.add_run({"agent": "claude", "model": "m1"}, 1, status="failed")
    (rep / "scores.json").unlink()
    (rep / "scores.json").symlink_to("/dev/zero")
    os.mkfifo(rep / "_agent_stdout.log")
    (rep / "_agent_stderr.log").symlink_to(home / ".aws" / "credentials")
    (rep / "evaluation.md").symlink_to(home / ".aws" / "credentials")
    (rep / "findings.jsonl").write_text("[" * 100_000 + "\n")
    (rep / "_meta.json").write_text('{"run_config": ' + "[" * 900 + "]" * 900 + "}")
    return exp.root


def test_retort_reads_of_an_agent_written_run_folder_are_bounded_and_contained(tmp_path):
    home = plant_home(tmp_path)
    root = retort_experiment(tmp_path, home)
    started = time.monotonic()
    r = faildiag("retort", "diagnose", "--experiment-dir", str(root), "--format", "json", cwd=tmp_path, home=home)
    assert r["rc"] == 0, r["stderr"]
    assert time.monotonic() - started < 60 and r["peak"] < 300 * 2**20
    runs = json.loads(r["stdout"])["runs"]
    assert len(runs) == 1
    assert SECRET not in r["stdout"]
    claims = " ".join(c["text"] for c in runs[0]["claims"])
    assert "not read" in claims or "unreadable" in claims, claims


def test_the_pickle_object_budget_refuses_before_anything_is_built():
    from pytest_faildiag.parse import artifacts

    data = many_objects_dump()
    assert len(data) < 4 << 20  # a few megabytes on disk ...
    started = time.monotonic()
    with pytest.raises(pickle.UnpicklingError, match="more than 2000000 pickle opcodes"):
        artifacts.load_pickle(data)  # ... that would unpickle into 3 million dicts
    assert time.monotonic() - started < 10
    assert artifacts.load_pickle(many_objects_dump(1000)) == {"entries": [{}] * 1000}  # under budget: read
