"""What the cheap passing path of ``pytest --faildiag`` must still guarantee (bench/bench_plugin_overhead.py
measures its cost): a session killed outright leaves a journal naming the test it ran, with every id
redacted as before; a session that ended cleanly is not replayed; a passing session imports none of the
modules only a failure needs; subtests are still told apart from the call phase."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_faildiag.engine
from pytest_faildiag.integrations.pytest_journal import Journal, ended_cleanly
from pytest_faildiag.integrations.pytest_journal_replay import dead_tests, read_events
from pytest_faildiag.plugin import _skip_assert_rewrite
from pytest_faildiag.redact import MASK, redact_text

from .conftest import entry_for, session_index

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

# 80 passing tests (more than redaction's BULK_LINES, so the ids are redacted in one pass), one whose id
# carries a token, then one that SIGKILLs its own pytest process: nothing at session end runs.
KILLED_SUITE = f"""
import os, signal, pytest

@pytest.mark.parametrize("i", range(80))
def test_many(i):
    pass

@pytest.mark.parametrize("tok", ["{TOKEN}"])
def test_with_token(tok):
    pass

@pytest.mark.parametrize("tok", ["{TOKEN}"])
def test_killed(tok):
    os.kill(os.getpid(), signal.SIGKILL)

def test_never_runs():
    pass
"""


def _journal_starts(path: Path) -> list[str]:
    return [e["nodeid"] for e in read_events(path) if e.get("e") == "start"]


def test_a_sigkilled_session_leaves_every_start_line_and_names_the_killed_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k=KILLED_SUITE)
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", "-p", "no:randomly", timeout=180)
    assert result.ret in (-9, 137)
    journal = pytester.path / "faildiag-out" / "journal.jsonl"
    raw = journal.read_text(encoding="utf-8")
    assert TOKEN not in raw  # the batch-redacted ids and the per-id ones alike
    starts = _journal_starts(journal)
    assert len(starts) == 82  # each test's start was on disk before it ran: none lost to a buffer
    assert starts[:2] == ["test_k.py::test_many[0]", "test_k.py::test_many[1]"]
    assert starts[-1] == f"test_k.py::test_killed[{MASK}]" == redact_text(f"test_k.py::test_killed[{TOKEN}]")
    dead = dead_tests(read_events(journal))
    assert [d.nodeid for d in dead] == [f"test_k.py::test_killed[{MASK}]"]

    pytester.makepyfile(test_k="def test_fine():\n    pass\n")
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", timeout=180)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"previous session died while running test_k.py::test_killed[[]{MASK}]*"])
    assert [r["nodeid"] for r in session_index(pytester.path)["recovered"]] == [f"test_k.py::test_killed[{MASK}]"]

    # that session ended cleanly: the next one finds nothing to recover (and skips replaying its journal)
    assert ended_cleanly(journal)
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", timeout=180)
    result.assert_outcomes(passed=1)
    assert "previous session died" not in result.stdout.str()
    assert "recovered" not in session_index(pytester.path)


def test_batch_redacted_ids_are_written_exactly_as_one_by_one(tmp_path: Path) -> None:
    ids = [f"tests/test_x.py::test_{i}" for i in range(100)]
    ids[7] = f"tests/test_x.py::test_tok[{TOKEN}]"
    ids[50] = "tests/test_x.py::test_url[https://user:hunter2secret@example.com/x]"
    ids[90] = 'tests/test_x.py::test_quote[a"b\\c]'
    out = tmp_path / "out"
    journal = Journal(out / "journal.jsonl")
    journal.expect(ids)
    for nodeid in ids + ["tests/test_late.py::test_collected_later[" + TOKEN + "]"]:
        journal.mark("start", nodeid)
    journal.close()
    written = _journal_starts(out / "journal.jsonl")
    expected = [redact_text(n) for n in ids] + [f"tests/test_late.py::test_collected_later[{MASK}]"]
    assert written == expected
    assert MASK in written[7] and "hunter2secret" not in written[50] and written[90] == ids[90]


def _write_lines(path: Path, *lines: str | bytes) -> Path:
    path.write_bytes(b"".join(x if isinstance(x, bytes) else (x + "\n").encode() for x in lines))
    return path


def test_ended_cleanly_reads_only_a_complete_last_session_end(tmp_path: Path) -> None:
    start = json.dumps({"e": "start", "pid": 1, "nodeid": "t.py::a"})
    end = json.dumps({"e": "session_end", "pid": 1, "exitstatus": 0})
    assert ended_cleanly(_write_lines(tmp_path / "a.jsonl", start, end))
    assert not ended_cleanly(_write_lines(tmp_path / "b.jsonl", end, start))  # died in the next session
    assert not ended_cleanly(_write_lines(tmp_path / "c.jsonl", start, end.encode()[:-3]))  # torn last line
    assert not ended_cleanly(_write_lines(tmp_path / "d.jsonl"))
    assert not ended_cleanly(tmp_path / "missing.jsonl")
    long_start = json.dumps({"e": "start", "pid": 1, "nodeid": "x" * 10000})
    assert ended_cleanly(_write_lines(tmp_path / "e.jsonl", long_start, end))
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    assert not ended_cleanly(fifo)  # refused, not blocked on


MODULES_PROBE = """
import json, sys

def pytest_unconfigure(config):
    import pytest_faildiag.redact as redact
    names = sorted(m for m in sys.modules if m.startswith("pytest_faildiag"))
    compiled = sorted(n for n, v in vars(redact).items() if type(v).__name__ == "_lazy" and "sub" in vars(v))
    loaders = {m: type(sys.modules[m].__loader__).__name__ for m in names}
    with open("modules.json", "w") as f:
        json.dump({"modules": names, "compiled": compiled, "loaders": loaders}, f)
"""


def test_the_package_is_taken_off_pytests_rewrite_list(pytestconfig: pytest.Config) -> None:
    # what an installed wheel gets and an editable install (this checkout) never does: pytest marks the
    # distribution's package for rewriting, and its hook would then load every module of it
    from _pytest.assertion.rewrite import AssertionRewritingHook

    hook = AssertionRewritingHook(pytestconfig)
    hook.set_session(None)
    manager = pytest.PytestPluginManager()
    manager.rewrite_hook = hook
    hook.mark_rewrite("pytest_faildiag")
    where = list(pytest_faildiag.engine.__path__)
    assert hook.find_spec("pytest_faildiag.engine.api", where) is not None  # marked: pytest's hook would load it
    _skip_assert_rewrite(manager)
    assert hook.find_spec("pytest_faildiag.engine.api", where) is None  # Python's own import does


def test_a_green_run_imports_nothing_only_a_failure_needs(pytester: pytest.Pytester) -> None:
    # (no trigger word of redaction, such as "pass" or "token", in this test's name: it is in the paths the
    # session's command line holds, and the command line is redacted)
    pytester.makeconftest(MODULES_PROBE)
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n", test_two="def test_two():\n    pass\n")
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", timeout=180)
    result.assert_outcomes(passed=2)
    seen = json.loads((pytester.path / "modules.json").read_text())
    for module in ("pytest_faildiag.model", "pytest_faildiag.engine.api", "pytest_faildiag.capture.envlock"):
        assert module not in seen["modules"]
    assert "pytest_faildiag.integrations.pytest_journal" in seen["modules"]  # the journal did run
    # redaction's full pattern set is compiled on its first real use, which a clean passing session never has
    # (nor the secret-name pattern: the command line's -p and --faildiag hold no secret word)
    assert seen["compiled"] == []
    # the package's modules come through Python's own import, not pytest's assertion rewriter; only the
    # two loaded before the plugin could say so may stay rewritten (an editable install is never marked for
    # rewriting at all: pytest marks the files a distribution lists, which then are only its path hook)
    rewritten = {m for m, loader in seen["loaders"].items() if loader == "AssertionRewritingHook"}
    assert rewritten <= {"pytest_faildiag", "pytest_faildiag.plugin"}
    assert seen["loaders"]["pytest_faildiag.integrations.pytest_session"] == "SourceFileLoader"

    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", timeout=180)
    result.assert_outcomes(passed=2)
    # the previous session ended cleanly: its journal is set aside unread (no replay module, no dataclasses)
    assert (
        "pytest_faildiag.integrations.pytest_journal_replay"
        not in json.loads((pytester.path / "modules.json").read_text())["modules"]
    )

    pytester.makepyfile(test_ok="def test_ok():\n    assert 0\n")
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:xdist", "--faildiag-rerun=0", timeout=180)
    result.assert_outcomes(passed=1, failed=1)
    assert "pytest_faildiag.model" in json.loads((pytester.path / "modules.json").read_text())["modules"]
    assert entry_for(session_index(pytester.path), "test_ok")["category"] == "test_code"


def test_failing_subtests_are_told_apart_from_a_failing_call(pytester: pytest.Pytester) -> None:
    if not hasattr(pytest, "Subtests"):
        pytest.skip("this pytest has no built-in subtests (pytest 9+)")
    pytester.makepyfile(
        test_s="""
        def test_mixed(subtests):
            with subtests.test(msg="one"):
                assert 1 == 2
            assert 3 == 4

        def test_plain():
            assert 5 == 6
        """
    )
    result = pytester.runpytest("--faildiag", "-p", "no:xdist", "--faildiag-rerun=0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    tests = session_index(pytester.path)["tests"]
    mixed = [(t.get("subtest"), t["when"]) for t in tests if "test_mixed" in t["nodeid"]]
    assert mixed == [(1, "call"), (None, "call")]
    assert [t.get("subtest") for t in tests if "test_plain" in t["nodeid"]] == [None]


def test_the_journal_module_imports_without_pytest(tmp_path: Path) -> None:
    """``faildiag recover`` reads journals without pytest: the journal module must not need it."""
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "from pytest_faildiag.integrations.pytest_journal import ended_cleanly\n"
        f"print(ended_cleanly(__import__('pathlib').Path({str(tmp_path / 'none.jsonl')!r})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
