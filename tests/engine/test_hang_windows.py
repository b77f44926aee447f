"""Where a hung thread waits: the standard library's waiting frames and the caller that says what for (#13).

A thread dump's innermost frames are often the standard library's waiting primitives (``selectors.select``,
``multiprocessing``'s connection and queue, ``threading``'s locks): they say *how* a thread waits, not *for
what*. The stuck-frame table is matched over those frames and the first frame outward that is not the standard
library's (``engine/rank.py`` ``_waiting_window``), so a DataLoader that waits for its worker reads as the data
pipeline, and a plain multiprocessing pool does not. py-spy prints the standard library's paths relative to
``sys.path`` (``selectors.py``): Python's own list of its modules (``sys.stdlib_module_names``) tells them from the
program's. Real faulthandler dumps (tests/data/kb/hang_windows, README) and the same programs run live."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.rank import stuck_points
from pytest_faildiag.parse.scan import Frame, ScanResult, scan_file
from pytest_faildiag.rules import load_ruleset

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "hang_windows"
DUMPERS = Path(__file__).resolve().parents[1] / "data" / "kb" / "stack_dumpers"


def _points(path: Path) -> list[dict]:
    res = ScanResult()
    rs = load_ruleset()
    scan_file(str(path), "log", rs, res)
    return stuck_points(res, rs)


def _program(readme: str, name: str) -> str:
    """The program the README shows for ``name`` (its fenced block), with a shorter timer."""
    text = (DATA / readme).read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    src = next(b for b in blocks if name in b)
    return src.replace("dump_traceback_later(5,", "dump_traceback_later(2,")


@pytest.mark.parametrize("name", ["faulthandler_loader_hang.txt"])
def test_a_dataloader_waiting_for_its_worker_reads_as_the_data_pipeline(name):
    points = _points(DATA / name)
    main = next(p for p in points if p["category"] == "dataset")
    assert "stuck in _try_get_data (dataloader.py:1291" in main["detail"]
    diag = diagnose([DATA / name])
    assert diag.profile.type == "hang"
    assert (diag.root_causes[0].category, diag.root_causes[0].rule) == ("dataset", "stuck_frame")


def test_a_multiprocessing_pool_is_not_a_dataloader():
    """The pool's threads block in multiprocessing's connection (``_recv``), the queue code the DataLoader also
    waits in; no frame of the data pipeline is there, so no stuck point says dataset."""
    points = _points(DATA / "faulthandler_pool_hang.txt")
    assert points and all(p["category"] != "dataset" for p in points)
    assert diagnose([DATA / "faulthandler_pool_hang.txt"]).root_causes[0].category != "dataset"


def test_py_spy_relative_standard_library_paths_are_not_the_program():
    """py-spy prints ``selectors.py`` and ``multiprocessing/connection.py`` relative to sys.path: read as the
    standard library's waiting frames, the main thread's caller is the DataLoader, and no stuck point is "called
    from" a standard-library file."""
    points = _points(DUMPERS / "pyspy_dataloader_worker_blocked.txt")
    main = next(p for p in points if "MainThread" in p["detail"])
    assert main["category"] == "dataset" and "called from loader_hang.py:21" in main["detail"]
    assert not any("called from selectors.py" in p["detail"] for p in points)


def test_the_window_stops_at_the_first_frame_that_is_not_the_standard_library():
    """A program's own function named like a waiting primitive outward of its own code is not read: the window
    ends at the program's frame."""
    from pytest_faildiag.engine.rank import _waiting_window

    libs = load_ruleset().reasoning.libraries
    frames = [
        Frame("/usr/lib/python3.11/threading.py", 327, "wait"),
        Frame("/home/user/job/app.py", 10, "work"),
        Frame("/home/user/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", 1291, "_try_get_data"),
    ]
    assert [f.func for f in _waiting_window(frames, libs)] == ["wait", "work"]


@pytest.mark.parametrize(
    ("readme_name", "script", "want_dataset"),
    [("loader_hang", "loader_hang.py", True), ("pool_hang", "pool_hang.py", False)],
)
def test_live_hung_programs(tmp_path, readme_name, script, want_dataset):
    """The README's programs run for real (torch on the CPU for the DataLoader), dumped by faulthandler."""
    if want_dataset:
        pytest.importorskip("torch")
    src = _program("README.md", "DataLoader(" if want_dataset else "mp.Pool(")
    (tmp_path / script).write_text(src)
    # its own session: the DataLoader's worker (and the pool's) outlive the main process faulthandler ends, blocked
    # for ever in the item, holding the output open; the whole group goes afterwards, the output is a file
    log = tmp_path / "stderr.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, script], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
        try:
            proc.wait(timeout=120)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1 and "Timeout (0:00:02)!" in log.read_text()
    points = _points(log)
    assert points
    assert any(p["category"] == "dataset" for p in points) is want_dataset
