"""The failure type of logs that are not Python tracebacks, on output produced here by the real tools.

The contract (``profile.type``): ``crash`` is a process, or a process it depends on, that died from a signal;
a program that exits non-zero on its own (a compiler error, an installer that cannot resolve, a shell
command that fails) is ``runtime_error``. Each case runs the real program (bash, xargs, gcc, pip, python)
and diagnoses what it printed, first without an exit status (as a pasted log comes), then with it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.analyze import reported_signal_death
from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse.scan import ScanResult, scan_text
from pytest_faildiag.rules import load_ruleset

from .kb_helpers import fired

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells and signals")


def _scanned(text: str) -> ScanResult:
    result = ScanResult()
    scan_text(text, "log", load_ruleset(), result)
    return result


def _run(argv: list[str], cwd: Path | None = None) -> tuple[str, int]:
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=120)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stdout + p.stderr, p.returncode


def _bash(script: str) -> tuple[str, int]:
    # "; exit $?" keeps bash from exec'ing the last command, so that bash itself reports the job's signal
    return _run(["bash", "-c", script + "; exit $?"])


def _types(out: str, rc: int) -> tuple[str, str]:
    return diagnose(texts={"stderr": out}).profile.type, diagnose(texts={"stderr": out}, exit_code=rc).profile.type


def test_the_shells_killed_report_is_a_crash():
    out, rc = _bash('sh -c "echo loading shards; kill -KILL \\$\\$"')
    assert "Killed" in out and rc == 137
    assert _types(out, rc) == ("crash", "crash")
    diag = diagnose(texts={"stderr": out})
    assert fired(diag, "shell.job_killed")
    assert diag.root_causes[0].category == "resource"  # SIGKILL: most often the OOM killer


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_makes_report_of_a_recipe_killed_by_sigkill_is_a_crash(tmp_path):
    # GNU make prints the signal's strsignal(3) text where a failed recipe gets "Error N"
    (tmp_path / "Makefile").write_text("test:\n\tsh -c 'echo collecting; kill -9 $$$$'\n")
    out, rc = _run(["make", "test"], cwd=tmp_path)
    assert "] Killed" in out and rc == 2  # make's own status: a recipe failed
    assert _types(out, rc) == ("crash", "crash")
    diag = diagnose(texts={"stderr": out}, exit_code=rc)
    assert fired(diag, "shell.job_killed")
    assert diag.root_causes[0].category == "resource"


def test_the_shells_terminated_report_is_a_crash():
    out, rc = _bash('sh -c "echo step; kill -TERM \\$\\$"')
    assert "Terminated" in out and rc == 143
    assert _types(out, rc) == ("crash", "crash")
    assert fired(diagnose(texts={"stderr": out}), "shell.job_terminated")


def test_a_trace_breakpoint_trap_is_a_crash():
    out, rc = _bash(f'{sys.executable} -c "import os, signal; os.kill(os.getpid(), signal.SIGTRAP)"')
    assert "Trace/breakpoint trap" in out and rc == 133
    assert _types(out, rc) == ("crash", "crash")
    assert fired(diagnose(texts={"stderr": out}), "proc.sigtrap")


def test_an_abort_and_a_segfault_reported_by_the_shell_are_crashes():
    out, rc = _bash(f'{sys.executable} -c "import os; os.abort()"')
    assert "Aborted" in out
    assert _types(out, rc) == ("crash", "crash")
    out, rc = _bash(f'{sys.executable} -c "import ctypes; ctypes.string_at(0)"')
    assert "Segmentation fault" in out
    assert _types(out, rc) == ("crash", "crash")


@pytest.mark.skipif(shutil.which("xargs") is None, reason="needs xargs")
def test_a_signal_a_tool_reports_in_words_no_rule_knows_is_a_crash():
    # xargs: "sh: terminated by signal 3" (SIGQUIT): no rule knows it; the log says a process died of a signal
    p = subprocess.run(
        ["xargs", "sh", "-c", "echo working; kill -QUIT $$"], input="x\n", capture_output=True, text=True
    )
    out = p.stdout + p.stderr
    assert "terminated by signal 3" in out and p.returncode == 125
    assert reported_signal_death(_scanned(out)) == "SIGQUIT"
    assert _types(out, p.returncode) == ("crash", "crash")


def test_reported_signal_death_reads_statuses_and_names_only_of_fatal_signals():
    def sig(text: str) -> str | None:
        return reported_signal_death(_scanned(text))

    # make's report of a recipe whose shell exited 128+11 (real make output, see the next test for the run)
    assert sig("make: *** [Makefile:2: run] Error 139") == "SIGSEGV"
    assert sig("make: *** [Makefile:3: bad.o] Error 1") is None  # a compiler error: the recipe's own status
    assert sig("bash: line 1: not_a_command: command not found\nexit status 127") is None
    assert sig("KeyboardInterrupt\nexit code 130") is None  # SIGINT: a person stopped it, not a crash


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None, reason="needs make and gcc")
def test_a_build_that_fails_is_a_runtime_error_and_a_recipe_that_segfaults_is_a_crash(tmp_path: Path):
    (tmp_path / "bad.c").write_text("int main(void) {\n  int x = 1\n  return x;\n}\n")
    (tmp_path / "Makefile").write_text("bad.o: bad.c\n\tgcc -c bad.c -o bad.o\n")
    out, rc = _run(["make"], cwd=tmp_path)
    assert "error:" in out and "Error 1" in out
    assert _types(out, rc) == ("runtime_error", "runtime_error")
    (tmp_path / "segv.c").write_text("int main(void) { volatile int *p = 0; return *p; }\n")
    (tmp_path / "Makefile").write_text("run:\n\tgcc segv.c -o segv\n\t./segv; exit $$?\n")
    out, rc = _run(["make", "run"], cwd=tmp_path)
    assert "Error 139" in out
    assert _types(out, rc) == ("crash", "crash")


def test_an_installer_that_cannot_resolve_and_a_failing_shell_command_are_runtime_errors(tmp_path: Path):
    out, rc = _run(
        [sys.executable, "-m", "pip", "download", "--isolated", "--no-index", "--no-deps", "-d", str(tmp_path)]
        + ["no-such-dist-faildiag==1.0"]
    )
    assert "No matching distribution found" in out
    assert _types(out, rc) == ("runtime_error", "runtime_error")
    out, rc = _run(["bash", "-c", "set -e; echo step 1; ls /nonexistent/faildiag-dir; echo never"])
    assert "cannot access" in out
    assert _types(out, rc) == ("runtime_error", "runtime_error")


def test_a_silent_kill_after_progress_stays_a_hang():
    # killed without a word (a time limit's SIGKILL): only the status says it, after progress lines
    p = subprocess.run(["bash", "-c", "echo step 1; echo step 2; kill -KILL $$"], capture_output=True, text=True)
    assert p.returncode == -9 and "Killed" not in p.stdout + p.stderr
    assert diagnose(texts={"stdout": p.stdout}, exit_code=137).profile.type == "hang"
