"""kspy: the stack dumpers users run on a hung job, read as thread dumps (``parse/scan.py``, ``_PYSPY_THREAD``).

py-spy, pystack and gdb (CPython's ``python-gdb.py``) outputs are real: each tool was run here on a hung Python
process (a lock-ordering deadlock, a DataLoader whose worker never returns an item, a gloo ``all_reduce`` that
rank 1 never joins, torch on the CPU), paths redacted; they lie in ``tests/data/kb/stack_dumpers``. torch's
flight-recorder stack (ProcessGroupNCCL's watchdog) needs NCCL and GPUs: it is checked on the format its source
prints (``FlightRecorder::Entry::getTraceback``). A train log of the thread corpus holds a py-spy dump."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.rank import stuck_points
from pytest_faildiag.parse.scan import ScanResult, StackDump, scan_file, scan_text
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import top3, train_log_path

DUMPS = Path(__file__).resolve().parents[1] / "data" / "kb" / "stack_dumpers"


def _scan(path: Path) -> ScanResult:
    res = ScanResult()
    scan_file(str(path), "log", load_ruleset(), res)
    return res


def _where(d: StackDump) -> list[tuple[str, str, int]]:
    return [(f.func, Path(f.file).name, f.line) for f in d.innermost]


def test_py_spy_dump_of_a_lock_deadlock():
    """``py-spy dump``: ``Thread N (idle): "name"`` then ``func (file.py:N)`` lines, innermost first; ``--native``
    adds native frames (no line), ``--locals`` the ``Arguments:``/``Locals:`` under a frame: the same Python
    frames each time, and the process line above names the command."""
    for name in ("pyspy_lock_deadlock", "pyspy_native_lock_deadlock", "pyspy_locals_lock_deadlock"):
        res = _scan(DUMPS / f"{name}.txt")
        main, worker = res.dumps
        assert (main.kind, main.thread) == ("py-spy", 'Thread 9162 "MainThread" (idle)'), name
        assert _where(main) == [("main", "deadlock.py", 19), ("<module>", "deadlock.py", 25)], name
        # py-spy names a method by its qualified name (``Thread.run``); the frame keeps the function's own
        assert _where(worker)[:2] == [("worker", "deadlock.py", 10), ("run", "threading.py", 982)], name
        assert main.process.endswith("python deadlock.py")
        assert not res.error_lines and not res.findings, name  # frames and locals are not the program's output


def test_pystack_and_gdb_py_bt_of_the_same_deadlock():
    """pystack (``Traceback for thread N (python) [] (most recent call last):``, ``(Python) File …`` frames
    outermost first, ``(C)`` frames with ``--native``) and gdb's ``py-bt`` (``Traceback (most recent call
    first):``, a builtin's ``<built-in method …>`` line) and ``py-bt-full`` (``#N Frame 0x…, for file …``): the
    worker waits at deadlock.py:10 (``with a:``), the main thread at deadlock.py:19 (``with b:``)."""
    for name in (
        "pystack_lock_deadlock",
        "pystack_native_lock_deadlock",
        "gdb_pybt_lock_deadlock",
        "gdb_pybtfull_lock_deadlock",
    ):
        res = _scan(DUMPS / f"{name}.txt")
        worker, main = res.dumps
        assert worker.kind == main.kind == ("gdb" if name.startswith("gdb") else "pystack"), name
        assert _where(worker) == [
            ("worker", "deadlock.py", 10),
            ("run", "threading.py", 982),
            ("_bootstrap_inner", "threading.py", 1045),
            ("_bootstrap", "threading.py", 1002),
        ], name
        assert _where(main) == [("main", "deadlock.py", 19), ("<module>", "deadlock.py", 25)], name
        assert (worker.innermost[0].code, main.innermost[0].code) == ("with a:", "with b:"), name
        assert not res.tracebacks, name  # pystack's frames are no traceback cut before its exception


def test_a_deadlock_dump_places_the_wait_in_the_program_whatever_the_tool():
    """Before, none of these dumps was read: the log was a hang with no place; now the dump reasoning
    (``[[stuck_frame]]``) places it in the program's own code, the same for every tool."""
    for name in ("pyspy_lock_deadlock", "pystack_lock_deadlock", "gdb_pybt_lock_deadlock"):
        diag = diagnose([DUMPS / f"{name}.txt"])
        top = diag.root_causes[0]
        assert (top.rule, top.category) == ("stuck_frame", "model"), name
        assert "deadlock.py" in top.summary, name


def test_py_spy_dumps_of_a_gloo_collective_one_rank_never_joined():
    """Rank 0 waits in ``all_reduce`` (torch/distributed/distributed_c10d.py), rank 1 sleeps in the program's own
    code: the collective other ranks did not join is among the first two places offered."""
    for name in ("pyspy_gloo_rank_missing", "pyspy_native_gloo_rank_missing"):
        res = _scan(DUMPS / f"{name}.txt")
        assert _where(res.dumps[0])[0] == ("all_reduce", "distributed_c10d.py", 3252), name
        diag = diagnose([DUMPS / f"{name}.txt"])
        placed = [rc.category for rc in diag.root_causes[:2] if rc.rule == "stuck_frame"]
        assert "communication" in placed, name  # beside rank 1's own code, where it sleeps


def test_dataloader_worker_blocked_py_spy_subprocesses_and_pystack():
    """``py-spy dump --subprocesses`` of a DataLoader whose worker never returns an item: the main thread waits
    on the worker's queue (``_try_get_data``), the worker process in the dataset's ``__getitem__``; pystack's
    dump of the main process shows the same wait with the code of each frame (``self._selector.poll(timeout)``:
    code, not a timeout the program reported)."""
    res = _scan(DUMPS / "pyspy_dataloader_worker_blocked.txt")
    main, feeder, worker = res.dumps
    assert "_try_get_data" in [f.func for f in main.innermost]
    assert ("__getitem__", "loader_hang.py", 15) in _where(worker)
    assert worker.process.endswith("loader_hang.py")
    points = stuck_points(res, load_ruleset())
    # the main thread blocks in selectors.select under multiprocessing's queue (how it waits); the DataLoader's
    # _try_get_data, the first frame outward that is not the standard library's, says what it waits for
    assert points and "MainThread" in points[0]["detail"] and "_try_get_data" in points[0]["detail"]
    assert points[0]["category"] == "dataset"
    res = _scan(DUMPS / "pystack_dataloader_blocked.txt")
    assert [f.func for f in res.dumps[-1].innermost][:6] == ["select", "wait", "_poll", "poll", "get", "_try_get_data"]
    assert not any("timeout" in text for _, _, text in res.error_lines)


# The watchdog's log of a timed-out collective when the flight recorder is on: glog's line, then the stack the
# collective was called from, as torch's ``FlightRecorder::Entry::getTraceback`` prints it (the example in its
# source), each line behind torchrun's ``[rankN]:`` prefix
FLIGHT_RECORDER = """\
[rank1]:[E1118 20:32:23.957372583 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.
[rank1]:[E1118 20:32:23.957466207 ProcessGroupNCCL.cpp:667] Stack trace of the failed collective:
[rank1]:#0 all_reduce from pytorch/torch/distributed/distributed_c10d.py:2696
[rank1]:#1 wrapper from pytorch/torch/distributed/c10d_logger.py:83
[rank1]:#2 bar from /home/user/repro.py:15
[rank1]:#3 foo from /home/user/repro.py:24
[rank1]:#4 main from /home/user/repro.py:34
[rank1]:#5 <module> from /home/user/repro.py:40
[rank1]:
[rank1]:[E1118 20:32:23.957487695 ProcessGroupNCCL.cpp:681] [Rank 1] Some NCCL operations have failed or timed out.
"""


def test_flight_recorder_stack_of_the_failed_collective():
    # glog's line ends with the space after the colon (``"Stack trace of the failed collective: \n"``); a paste
    # may have dropped it
    for log in (FLIGHT_RECORDER.replace("collective:\n", "collective: \n"), FLIGHT_RECORDER):
        res = ScanResult()
        scan_text(log, "log", load_ruleset(), res)
        (d,) = res.dumps
        assert (d.kind, d.rank) == ("flight-recorder", "1")
        assert [f.func for f in d.innermost] == ["all_reduce", "wrapper", "bar", "foo", "main", "<module>"]
        assert (d.innermost[2].file, d.innermost[2].line) == ("/home/user/repro.py", 15)
    # the collective's caller: the stuck-frame table places it in communication
    diag = diagnose(texts={"stderr": FLIGHT_RECORDER})
    assert any(rc.rule == "stuck_frame" and rc.category == "communication" for rc in diag.root_causes)
    # fr_trace, the recorder's analyser, logs ``collective stack trace:`` and ``func at file:line`` lines
    res = ScanResult()
    text = "collective stack trace: \n all_reduce at /x/torch/distributed/distributed_c10d.py:2696\nrun at /home/user/t.py:9\n"
    scan_text(text, "log", load_ruleset(), res)
    assert [(f.func, f.line) for f in res.dumps[0].innermost] == [("all_reduce", 2696), ("run", 9)]


def test_train_log_py_spy_dump_of_a_ray_train_worker():
    """A Ray maintainer's ``py-spy dump`` of a training worker whose DataLoader never delivers: before, no dump
    was read from it; its three threads are, the training thread waiting on the worker queue."""
    res = _scan(train_log_path("pytorch/ray_train_dataloader_fork_after_cuda_deadlock"))
    assert [d.kind for d in res.dumps] == ["py-spy"] * 3
    training = res.dumps[2]
    assert training.thread.startswith("Thread 120142") and "TrainingThread" in training.thread
    funcs = [f.func for f in training.innermost]
    assert funcs[0] == "select" and "_try_get_data" in funcs
    diag = diagnose([train_log_path("pytorch/ray_train_dataloader_fork_after_cuda_deadlock")])
    assert diag.profile.type == "hang" and len(top3(diag)) == 3


def test_lines_like_a_header_elsewhere_open_no_dump():
    res = ScanResult()
    text = "Process 3: started\nThread 12 is done\nFrame 0x10 dropped\nERROR: collective failed\n"
    scan_text(text, "log", load_ruleset(), res)
    assert not res.dumps


def test_a_dumpers_relative_library_path_is_the_librarys_frame():
    """py-spy prints paths relative to ``sys.path`` (``ray/_private/worker.py``), so the stuck-frame table's last
    entries place the innermost frame by its owner as every traceback's frames are placed (``owner``), not by
    a ``site-packages`` folder the dump does not print: the Ray worker's wait is a library call that never
    returned, not the program's own code."""
    diag = diagnose([train_log_path("pytorch/ray_train_dataloader_fork_after_cuda_deadlock")])
    stuck = [rc for rc in diag.root_causes if rc.rule == "stuck_frame"]
    assert stuck and stuck[0].category == "library" and "worker.py" in stuck[0].summary
    # the program's own file in the same kind of dump is still the program's
    res = _scan(DUMPS / "pyspy_lock_deadlock.txt")
    assert stuck_points(res, load_ruleset())[0]["category"] == "model"


def test_a_stuck_frame_naming_an_unknown_owner_is_skipped_with_a_warning():
    team = '[[stuck_frame]]\nfunc = ".*"\nowner = "librar"\ncategory = "library"\nsummary = "x"\n'
    with pytest.warns(UserWarning, match="unknown owner 'librar'"):
        rs = load_ruleset([("team.toml", team)])
    assert all(entry.get("owner") != "librar" for entry in rs.stuck_frames)


def test_gdbs_no_source_line_is_not_a_missing_file():
    """gdb prints ``57\t./nptl/futex-internal.c: No such file or directory.`` where it has no source to list for
    the frame it stopped in: an aside of the backtrace, not a path the program failed to open."""
    for name in ("gdb_pybt_lock_deadlock", "gdb_pybtfull_lock_deadlock"):
        diag = diagnose([DUMPS / f"{name}.txt"], exit_code=1)
        assert not any(rc.rule == "py.file_not_found" for rc in diag.root_causes), name
        assert diag.root_causes[0].rule == "stuck_frame", name
    diag = diagnose(texts={"stderr": "cat: /data/train.txt: No such file or directory\n"}, exit_code=1)
    assert diag.root_causes[0].rule == "py.file_not_found"


def test_gdbs_no_source_line_pasted_with_spaces_is_not_a_missing_file():
    """A paste often turns gdb's tab into spaces (``360     ../Modules/gcmodule.c: No such file or directory.``):
    still the debugger's aside. The same real gdb dump re-delivered that way keeps its stuck frame first, and a
    train log of gdb stopping a training run at SIGSEGV inside CPython's garbage collector reads as the crash."""
    spaced = (DUMPS / "gdb_pybt_lock_deadlock.txt").read_text().expandtabs(8)
    assert "\t" not in spaced
    diag = diagnose(texts={"stderr": spaced}, exit_code=1)
    assert not any(rc.rule == "py.file_not_found" for rc in diag.root_causes)
    assert diag.root_causes[0].rule == "stuck_frame"
    log = train_log_path("environment/fastmaskrcnn_train_segfault_gc_bad_opencv_install")
    assert "360     ../Modules/gcmodule.c: No such file or directory." in log.read_text()
    crash = diagnose([log])
    assert crash.profile.type == "crash"
    assert not any(rc.rule == "py.file_not_found" for rc in crash.root_causes)
