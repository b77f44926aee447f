"""CPython's spawn-bootstrap error (multiprocessing/spawn.py, _check_not_importing_main), #13.

CPython prints the sentence over two lines ("An attempt has been made to start a new process before the" /
"current process has finished its bootstrapping phase."), so a keyword holding the whole sentence never
matched a real log. Shown on the real error produced here (a script that starts a process at module level
under the spawn method) and on a train log from a public thread (Windows, spawn by default)."""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, run_failing, top3, train_log_path

UNGUARDED = """
import multiprocessing as mp
import sys

def work():
    print("working")

ctx = mp.get_context("spawn")
p = ctx.Process(target=work)
p.start()
p.join()
sys.exit(p.exitcode)
"""


def test_a_real_unguarded_spawn_is_the_programs_main_module(tmp_path):
    diag, err = run_failing(tmp_path, UNGUARDED, as_file=True)
    assert "current process has finished its bootstrapping phase" in err
    assert fired(diag, "py.spawn_main_not_guarded")
    assert top3(diag)[0] == "model"
    assert diag.profile.type == "runtime_error"


def test_the_thread_log_where_the_parent_saw_a_broken_pipe():
    text = train_log_path("pytest_python/multiprocessing_spawn_missing_main_guard").read_text()
    diag = diagnose(texts={"train.log": text})
    assert fired(diag, "py.spawn_main_not_guarded")
    assert top3(diag)[0] == "model"
