"""Real output folders for the CI reporters: snapshots written by the real engine from real failure text.

Nothing here fakes a report: every ``report.json`` comes from ``diagnose`` + ``write_snapshot`` on a
recorded failure (the GPU corpus), on a real process that ran out of memory under a real rlimit while
psutil sampled it, or on the real faulthandler dumps of a real two-rank gloo job that hung.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.snapshot import report_dict, write_snapshot

ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIRS = (ROOT / "tests" / "data" / "corpus" / "gpu",)


def corpus_case(name: str) -> Path:
    for base in CORPUS_DIRS:
        if (base / name / "stderr.txt").is_file():
            return base / name
    pytest.skip(f"corpus case {name} not available")


def snapshot_from_texts(
    out: Path,
    texts: dict[str, str],
    *,
    exit_code: int | None = None,
    context: dict[str, Any] | None = None,
    extra_files: dict[str, str] | None = None,
) -> dict:
    diag = diagnose(texts=texts, exit_code=exit_code, context=context)
    write_snapshot(diag, out, extra_files=extra_files)
    return report_dict(diag)


def snapshot_from_case(out: Path, case: str) -> dict:
    d = corpus_case(case)
    rc_text = (d / "rc.txt").read_text().strip() if (d / "rc.txt").is_file() else ""
    rc = int(rc_text) if rc_text.lstrip("-").isdigit() else 1
    texts = {n: (d / n).read_text(errors="replace") for n in ("stderr.txt", "stdout.txt") if (d / n).is_file()}
    return snapshot_from_texts(out, texts, exit_code=rc or 1)


def entry(nodeid: str, slug: str, report: dict, file: str | None, line: int | None, **over: Any) -> dict:
    """A session.json test entry the way the plugin writes it (agreed interface)."""
    top = (report.get("root_causes") or [{}])[0]
    e = {
        "nodeid": nodeid,
        "slug": slug,
        "when": "call",
        "outcome": "failed",
        "category": top.get("category", "unknown"),
        "type": report["profile"]["type"],
        "summary": report["summary"],
        "confidence": top.get("confidence", 0.0),
        "cause_id": top.get("id"),
        "file": file,
        "line": line,
        "fix_hints": top.get("fix_hints", []),
        "snapshot": slug,
    }
    e.update(over)
    return e


def write_session(out: Path, tests: list[dict]) -> Path:
    groups: dict[str, list[str]] = {}
    for t in tests:
        groups.setdefault(t.get("cause_id") or t["summary"], []).append(t["nodeid"])
    data = {
        "schema": "faildiag.session/1",
        "tests": tests,
        "groups": [{"cause_id": k, "tests": v} for k, v in groups.items()],
    }
    (out / "session.json").write_text(json.dumps(data, indent=2))
    return out


TEST_FILE = """import torch


def test_forward_shapes():
    model = torch.nn.Linear(128, 10)
    x = torch.randn(64, 256)
    assert model(x).shape == (64, 10)


def test_big_alloc():
    torch.empty(400 * 2**30, dtype=torch.uint8, device="cuda")
"""


@pytest.fixture(scope="session")
def workspace(tmp_path_factory) -> Path:
    """A checkout: a test file whose lines the annotations point at, and an output folder."""
    ws = tmp_path_factory.mktemp("workspace")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_models.py").write_text(TEST_FILE)
    return ws


@pytest.fixture(scope="session")
def session_out(workspace: Path) -> Path:
    """A session with 9 failed tests and 4 causes: 5× the same shape error, 2× OOM, 1 device mismatch, 1 NaN."""
    out = workspace / "faildiag-out"
    out.mkdir()
    tfile = str(workspace / "tests" / "test_models.py")
    tests = []
    shape = snapshot_from_case(out / "shape-0", "shape_mismatch")
    tests.append(entry("tests/test_models.py::test_forward_shapes", "shape-0", shape, tfile, 7))
    for i in range(1, 5):
        rep = snapshot_from_case(out / f"shape-{i}", "shape_mismatch")
        tests.append(entry(f"tests/test_models.py::test_forward_shapes[{i}]", f"shape-{i}", rep, tfile, 7))
    for i in range(2):
        rep = snapshot_from_case(out / f"oom-{i}", "cuda_oom_single")
        tests.append(entry(f"tests/test_models.py::test_big_alloc[{i}]", f"oom-{i}", rep, tfile, 11))
    rep = snapshot_from_case(out / "device", "device_mismatch")
    tests.append(entry("tests/test_models.py::test_device", "device", rep, tfile, 5))
    rep = snapshot_from_case(out / "nan", "nan_anomaly")
    tests.append(entry("tests/test_models.py::test_nan", "nan", rep, tfile, 6))
    return write_session(out, tests)


ALLOC_SCRIPT = r"""
import os, resource, sys, time, traceback
resource.setrlimit(resource.RLIMIT_AS, (700 * 2**20, 700 * 2**20))
blocks = []


def preload_dataset():
    while True:
        blocks.append(b"\x01" * (24 * 2**20))  # touched pages: RSS really grows
        time.sleep(0.03)


try:
    preload_dataset()
except MemoryError:
    traceback.print_exc()
    sys.stderr.flush()
    os._exit(1)  # die holding the memory, as a killed process does
"""


@pytest.fixture(scope="session")
def oom_snapshot(tmp_path_factory) -> Path:
    """A real process that ran out of memory (RLIMIT_AS) while psutil sampled it into timeline.jsonl."""
    import psutil  # a declared dependency: its absence is a broken install, not a reason to skip

    snap = tmp_path_factory.mktemp("oom") / "snap"
    proc = subprocess.Popen([sys.executable, "-c", ALLOC_SCRIPT], stderr=subprocess.PIPE, text=True)
    p = psutil.Process(proc.pid)
    t0 = time.monotonic()
    samples = []
    while proc.poll() is None and time.monotonic() - t0 < 30:
        try:
            if p.status() == psutil.STATUS_ZOMBIE:  # exited: its memory reads as 0, which it never was
                break
            rss = p.memory_info().rss / 2**30
            cpu = p.cpu_percent(None)
        except psutil.Error:
            break
        if rss == 0 and samples:  # exited between the two calls
            break
        samples.append({"t": round(time.monotonic() - t0, 3), "rss_gib": round(rss, 4), "gpu_gib": None, "cpu": cpu})
        time.sleep(0.04)
    _, err = proc.communicate(timeout=30)
    assert "MemoryError" in err, err[-2000:]
    timeline = "".join(json.dumps(s) + "\n" for s in samples)
    snapshot_from_texts(
        snap,
        {"stderr.txt": err},
        exit_code=proc.returncode,
        context={"timeline": samples},
        extra_files={"timeline.jsonl": timeline},
    )
    return snap


HANG_SCRIPT = r"""
import faulthandler, os, signal, sys, time
import torch
import torch.distributed as dist


def load_shard(rank):
    print("rank 1 loading its shard", file=sys.stderr, flush=True)
    time.sleep(600)  # rank 1 never reaches the collective


def main():
    rank = int(os.environ["RANK"])
    faulthandler.register(signal.SIGTERM, chain=True)  # the CI step's time limit sends SIGTERM: dump, then die
    dist.init_process_group("gloo", rank=rank, world_size=2)
    t = torch.ones(4)
    if rank == 1:
        load_shard(rank)
    print("rank 0 entering all_reduce", file=sys.stderr, flush=True)
    dist.all_reduce(t)


main()
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def hang_snapshot(tmp_path_factory) -> Path:
    """A real two-rank gloo job where rank 1 never joins the all_reduce, stopped by a time limit (SIGTERM,
    sent once both ranks are where they hang) on which faulthandler dumps each rank's stack.
    The logs are merged with ``[rankN]:`` prefixes, as ``torchrun --tee`` writes them."""
    pytest.importorskip("torch")
    base = tmp_path_factory.mktemp("hang")
    script = base / "train_dist.py"
    script.write_text(HANG_SCRIPT)
    port = _free_port()
    procs, logs = [], []
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        logs.append(base / f"rank{rank}.err")
        with open(logs[-1], "w") as err:
            procs.append(subprocess.Popen([sys.executable, str(script)], env=env, stderr=err))
    try:
        deadline = time.monotonic() + 120
        markers = ("rank 0 entering all_reduce", "rank 1 loading its shard")
        while not all(m in log.read_text() for m, log in zip(markers, logs, strict=True)):
            # a rank that exits (or never gets there) is a crash where a hang was expected: a regression to
            # report, never a skip
            ended = [f"rank {r} exited with {p.returncode}" for r, p in enumerate(procs) if p.poll() is not None]
            if ended or time.monotonic() > deadline:
                tails = "\n".join(
                    f"--- rank {r}:\n{log.read_text(errors='replace')[-600:]}" for r, log in enumerate(logs)
                )
                pytest.fail(
                    f"the gloo job did not reach its hang ({'; '.join(ended) or 'still starting after 120 s'}):\n{tails}"
                )
            time.sleep(0.1)
        time.sleep(0.5)  # rank 0 is inside the collective now
        # the job's time limit: SIGTERM, rank 0 first so rank 1's exit cannot end rank 0's wait
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    errs = [log.read_text(errors="replace") for log in logs]
    merged = "".join(f"[rank{r}]:{line}" for r, e in enumerate(errs) for line in e.splitlines(keepends=True))
    snap = base / "snap"
    # 124: the status CI runners and GNU timeout report for a run stopped at its time limit
    snapshot_from_texts(snap, {"stderr.txt": merged}, exit_code=124)
    return snap
