"""The file not found is the program subprocess was asked to start (``spawn:missing_program``): a tool the code
shells out to that is not installed or not on PATH is the installation's, not a configured data path's. Real
child processes (POSIX here; the train log is Windows' ``[WinError 2]`` through ffmpeg-python)."""

from __future__ import annotations

from tests.kb.kb_helpers import context_facts, run_failing, top3, train_log_without_rules


def test_a_program_that_is_not_installed_is_the_installations(tmp_path):
    diag, err = run_failing(
        tmp_path,
        """
        import subprocess
        subprocess.run(["faildiag-no-such-tool-xyz", "-version"], check=True)
        """,
    )
    assert "FileNotFoundError" in err and "_execute_child" in err
    assert "spawn:missing_program" in context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)


def test_a_missing_data_file_is_not_a_missing_program(tmp_path):
    """The same exception class raised by the program's own open(): no program was started, the fact stays off
    and the missing path keeps its usual homes (a configured path first)."""
    diag, err = run_failing(tmp_path, "open('data/train.csv').read()\n")
    assert "FileNotFoundError" in err
    assert "spawn:missing_program" not in context_facts(diag)
    assert top3(diag)[0] != "environment", top3(diag)


def test_train_log_ffmpeg_binary_not_on_path_without_rules():
    diag, label = train_log_without_rules("pytest_python/ffmpeg_python_winerror2_ffmpeg_binary_not_on_path")
    assert label["category"] == "environment"
    assert "spawn:missing_program" in context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)


def test_in_a_pytest_run_the_missing_program_keeps_the_installation_among_the_three(pytester):
    """A test that shells out to a tool the CI image lacks: the tests' code is on the stack, yet the installation
    keeps its place (a fact about what failed, not about who raised)."""
    from pytest_faildiag.engine.api import diagnose

    pytester.makepyfile(
        test_tool="import subprocess\n\ndef test_tool():\n    subprocess.run(['faildiag-no-such-tool-xyz'], check=True)\n"
    )
    result = pytester.runpytest("-p", "no:faildiag")
    out = "\n".join(result.outlines)
    assert "FileNotFoundError" in out
    diag = diagnose(texts={"stdout.txt": out}, exit_code=int(result.ret), command="pytest")
    assert "spawn:missing_program" in context_facts(diag)
    assert "environment" in top3(diag), top3(diag)
