"""`faildiag diagnose` as the contract describes it: files, folders, stdin, JSON, snapshots, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import CORPUS, corpus_cases

CASES = corpus_cases()


def _evidence_copy(case: Path, dest: Path) -> Path:
    """Only the run's own output, never the label or the script (as score_corpus.py does)."""
    ev = dest / "evidence"
    ev.mkdir()
    for f in case.iterdir():
        if f.name in {"stdout.txt", "stderr.txt", "junit.xml"} or f.suffix == ".pkl":
            shutil.copy(f, ev)
    return ev


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_it_diagnoses_each_real_gpu_failure_with_a_schema_valid_report(case, tmp_path, run_cli, report_schema):
    label = json.loads((case / "label.json").read_text())
    ev = _evidence_copy(case, tmp_path)
    rc = (case / "rc.txt").read_text().strip()
    cmd = (case / "cmd.txt").read_text().strip()
    p = run_cli(
        "diagnose", str(ev), "--format", "json", "--exit-code", rc, "--command", cmd, "--out", str(tmp_path / "out")
    )
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    jsonschema.validate(report, report_schema)
    cats = [c["category"] for c in report["root_causes"]]
    assert label["cause_group"] in cats[:3]
    assert report["profile"]["type"] == label["type"]
    on_disk = json.loads((tmp_path / "out" / "report.json").read_text())
    assert on_disk == report


def test_json_output_is_exactly_report_json_and_nothing_else(tmp_path, run_cli):
    p = run_cli(
        "diagnose", str(CORPUS / "shape_mismatch" / "stderr.txt"), "--format", "json", "--out", str(tmp_path / "o")
    )
    assert p.returncode == 0
    assert json.loads(p.stdout)["schema"] == "faildiag.report/1"
    assert p.stderr == b""


def test_it_writes_the_contract_snapshot_layout_without_temp_files(tmp_path, run_cli):
    out = tmp_path / "snap"
    p = run_cli("diagnose", str(CORPUS / "ckpt_truncated" / "stderr.txt"), "--exit-code", "1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    for rel in (
        "report.json",
        "report.md",
        "meta/failure-profile.json",
        "meta/root-causes.json",
        "artifacts/failure.lock.json",
    ):
        assert (out / rel).is_file(), rel
    assert not list(out.rglob("*.tmp"))
    report = json.loads((out / "report.json").read_text())
    assert json.loads((out / "meta" / "failure-profile.json").read_text()) == report["profile"]
    assert json.loads((out / "meta" / "root-causes.json").read_text()) == report["root_causes"]
    assert "reason" in json.loads((out / "artifacts" / "failure.lock.json").read_text())
    assert "# faildiag report" in (out / "report.md").read_text()


def test_it_reads_a_log_from_stdin(tmp_path, run_cli):
    data = (CORPUS / "device_mismatch" / "stderr.txt").read_bytes()
    p = run_cli("diagnose", "-", "--format", "json", "--out", str(tmp_path / "o"), stdin=data)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["root_causes"][0]["category"] == "model"
    assert report["profile"]["first_failure"]["source"] == "stdin"


def test_markdown_format_prints_the_report_for_people(tmp_path, run_cli):
    p = run_cli("diagnose", str(CORPUS / "nccl_duplicate_gpu"), "--format", "md", "--out", str(tmp_path / "o"))
    assert p.returncode == 0
    text = p.stdout.decode()
    assert text.startswith("# faildiag report")
    assert "Duplicate GPU detected" in text


def _one_line_error(p) -> str:
    err = p.stderr.decode()
    assert p.returncode == 2, (p.returncode, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("faildiag: ")
    return err


def test_a_missing_path_is_a_one_line_error(tmp_path, run_cli):
    assert "no such file" in _one_line_error(run_cli("diagnose", str(tmp_path / "nope.log")))


def test_a_folder_without_logs_is_a_one_line_error(tmp_path, run_cli):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "model.bin").write_bytes(b"\x00\x01" * 100)
    assert "no logs" in _one_line_error(run_cli("diagnose", str(tmp_path / "empty"), "--out", str(tmp_path / "o")))


def test_a_binary_file_is_a_one_line_error(tmp_path, run_cli):
    f = tmp_path / "core.log"
    f.write_bytes(bytes(range(256)) * 64)
    assert "binary" in _one_line_error(run_cli("diagnose", str(f), "--out", str(tmp_path / "o")))


def test_an_empty_file_is_a_one_line_error(tmp_path, run_cli):
    f = tmp_path / "empty.log"
    f.write_bytes(b"")
    assert "empty" in _one_line_error(run_cli("diagnose", str(f), "--out", str(tmp_path / "o")))


def test_a_symlink_loop_is_a_one_line_error(tmp_path, run_cli):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.symlink_to(b)
    b.symlink_to(a)
    assert "loop" in _one_line_error(run_cli("diagnose", str(a), "--out", str(tmp_path / "o")))


def test_unknown_options_are_a_one_line_usage_error(run_cli):
    _one_line_error(run_cli("diagnose", "--no-such-flag"))


def test_invalid_utf8_is_decoded_with_replacement_and_still_diagnosed(tmp_path, run_cli):
    f = tmp_path / "train.log"
    f.write_bytes(
        b"step 1 \xff\xfe\xfa garbage\nRuntimeError: mat1 and mat2 shapes cannot be multiplied (4x8 and 9x2)\n"
    )
    p = run_cli("diagnose", str(f), "--format", "json", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["root_causes"][0]["id"] == "model.shape_mismatch"


@pytest.mark.parametrize("engine", ["hyperscan", "re2", "python"])
def test_a_single_50_mb_line_gets_a_best_effort_result_not_a_traceback(tmp_path, run_cli, monkeypatch, engine):
    monkeypatch.setenv("FAILDIAG_SCAN_ENGINE", engine)
    f = tmp_path / "huge.log"
    with open(f, "wb") as fh:
        fh.write(b"x" * (50 * 1024 * 1024))
        fh.write(b"\nRuntimeError: Expected all tensors to be on the same device, but found at least two devices\n")
    p = run_cli("diagnose", str(f), "--format", "json", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["root_causes"][0]["id"] == "model.device_mismatch"
    assert any("over-long" in n for n in report.get("notes", []))  # read up to its cap, and said so


def test_an_unwritable_output_folder_still_prints_the_diagnosis(tmp_path, run_cli):
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "out").write_text("a file where a folder should be")
    p = run_cli("diagnose", str(CORPUS / "shape_mismatch" / "stderr.txt"), "--format", "json", "--out", str(ro / "out"))
    assert p.returncode == 0
    assert json.loads(p.stdout)["root_causes"]
    assert b"snapshot not written" in p.stderr


def test_exit_code_alone_is_evidence_enough(tmp_path, run_cli):
    f = tmp_path / "stdout.txt"
    f.write_text("about to start\n")
    p = run_cli("diagnose", str(f), "--exit-code", "139", "--format", "json", "--out", str(tmp_path / "o"))
    report = json.loads(p.stdout)
    assert report["profile"]["signal"] == "SIGSEGV"
    assert report["profile"]["type"] == "crash"


CLEAN_RUN = """\
import sys, traceback, warnings
warnings.warn("torch.cuda.amp.GradScaler(args...) is deprecated", FutureWarning)
for epoch in range(3):
    print(f"epoch {epoch} loss {1.0 / (epoch + 1):.3f}", flush=True)
if len(sys.argv) > 1:  # a retried step: the error is caught, printed, and the run goes on to succeed
    try:
        {}["shard-7"]
    except KeyError:
        traceback.print_exc()
print("done", flush=True)
"""


def _real_output(tmp_path: Path, *args: str) -> tuple[Path, int]:
    prog = tmp_path / "train.py"
    prog.write_text(CLEAN_RUN)
    p = subprocess.run([sys.executable, str(prog), *args], capture_output=True, text=True, timeout=60)
    ev = tmp_path / f"evidence{len(args)}"
    ev.mkdir()
    (ev / "stdout.log").write_text(p.stdout)
    (ev / "stderr.log").write_text(p.stderr)
    return ev, p.returncode


def test_a_run_that_exited_0_with_no_error_gets_no_cause(tmp_path, run_cli, report_schema):
    """A clean exit and evidence without an error is nothing to diagnose: it once got 'unrecognised failure
    (exit status 0); look in the model first' at 37 %. The same evidence with a failing status still gets the
    fallback's places to look, and a caught error a clean run printed is still read."""
    ev, rc = _real_output(tmp_path)
    assert rc == 0

    def report(evidence: Path, status: int) -> dict:
        p = run_cli(
            "diagnose", str(evidence), "--format", "json", "--exit-code", str(status), "--out", str(tmp_path / "o")
        )
        assert p.returncode == 0, p.stderr
        rep = json.loads(p.stdout)
        jsonschema.validate(rep, report_schema)
        return rep

    clean = report(ev, 0)
    assert clean["root_causes"] == [], clean["root_causes"]
    assert "nothing failed" in clean["summary"], clean["summary"]
    assert clean["next_actions"][0].startswith("nothing to diagnose"), clean["next_actions"]
    p = run_cli("diagnose", str(ev), "--format", "json", "--out", str(tmp_path / "o"))  # no status: it just ends
    unknown = json.loads(p.stdout)
    assert unknown["profile"]["type"] == "hang"  # a guess from a log that just ends: the report says how to settle it
    assert "--exit-code" in unknown["next_actions"][0], unknown["next_actions"]
    failing = report(ev, 1)
    assert failing["root_causes"] and failing["profile"]["exit_code"] == 1
    caught, rc = _real_output(tmp_path, "--retry")
    assert rc == 0
    with_error = report(caught, 0)
    assert with_error["root_causes"] and "KeyError" in with_error["profile"]["first_failure"]["excerpt"]


def test_a_crash_whose_stack_dump_is_in_the_evidence_is_not_told_to_rerun_for_it(tmp_path, run_cli):
    """A real segfault under `-X faulthandler` (as `faildiag run` starts every job): its stderr holds the dump, and
    the report said to rerun with faulthandler anyway. It now points at the dump and the program's call in it;
    the same crash without faulthandler still asks for the rerun."""
    prog = tmp_path / "crash.py"
    prog.write_text("import ctypes\n\n\ndef boom():\n    ctypes.string_at(0)\n\n\nboom()\n")

    def report(*flags: str) -> dict:
        p = subprocess.run([sys.executable, *flags, str(prog)], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0
        ev = tmp_path / f"ev{len(flags)}"
        ev.mkdir()
        (ev / "stderr.log").write_text(p.stderr)
        out = run_cli("diagnose", str(ev), "--format", "json", "--exit-code", "139", "--out", str(tmp_path / "o"))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def steps(rep: dict) -> list[str]:
        return rep["next_actions"] + [h for c in rep["root_causes"] for h in c["fix_hints"]]

    dumped = report("-X", "faulthandler")
    assert dumped["profile"]["type"] == "crash"
    assert not [s for s in steps(dumped) if "faulthandler" in s and "rerun" in s], steps(dumped)
    assert any("boom (crash.py:5)" in s for s in dumped["next_actions"]), dumped["next_actions"]
    bare = report()
    assert any("faulthandler" in s and "rerun" in s for s in steps(bare)), steps(bare)


def _aborting_program_stderr(tmp_path: Path, compilers: tuple[str, ...], name: str, source: str) -> Path:
    """Build ``source`` with the machine's compiler, run it (it must die of SIGABRT) and keep its stderr as the
    evidence file: the real output of a native program that aborted."""
    cc = next((found for c in compilers if (found := shutil.which(c))), None)
    if cc is None:
        pytest.skip("no compiler to build the aborting program")
    src = tmp_path / name
    src.write_text(source)
    subprocess.run([cc, str(src), "-o", str(tmp_path / "aborts")], check=True, capture_output=True, timeout=120)
    p = subprocess.run([str(tmp_path / "aborts")], capture_output=True, text=True, timeout=60)
    assert p.returncode == -6, (p.returncode, p.stderr)
    ev = tmp_path / "stderr.log"
    ev.write_text(p.stderr)
    return ev


def test_a_native_error_that_ends_in_an_abort_is_a_crash(tmp_path, run_cli):
    """A real C++ program whose exception nothing catches: std::terminate prints the message and calls abort().
    The message alone names an unsupported operation, yet the process died of SIGABRT: the contract's crash (it
    was read as unsupported_op even with exit status 134). std::terminate's own line says the abort, so the stderr
    alone reads the same."""
    ev = _aborting_program_stderr(
        tmp_path,
        ("c++", "g++"),
        "uncaught.cpp",
        "#include <stdexcept>\n"
        'int main() { throw std::runtime_error("Required aspect fp64 is not supported on the device"); }\n',
    )
    assert "terminate called after throwing" in ev.read_text()

    def read(*status: str) -> dict:
        out = run_cli("diagnose", str(ev), "--format", "json", *status, "--out", str(tmp_path / "o"))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    aborted = read("--exit-code", "134")
    assert aborted["profile"]["type"] == "crash", aborted["profile"]
    assert any(c["category"] == "model" for c in aborted["root_causes"][:3])  # float64 on the GPU stays a reading
    assert read()["profile"]["type"] == "crash"  # no exit status: "terminate called after throwing" is the abort


# a C program that prints an error and calls abort() itself (no C++ exception, no std::terminate line)
_PRINTS_THEN_ABORTS = (
    "#include <stdio.h>\n#include <stdlib.h>\n"
    'int main(void) { fprintf(stderr, "Required aspect fp64 is not supported on the device\\n"); abort(); }\n'
)


def test_an_abort_with_no_python_exception_before_it_is_a_crash_only_when_shown(tmp_path, run_cli):
    """A real C program that prints an error and calls abort() itself (no uncaught C++ exception, no
    std::terminate line): its exit status 134 is the abort, so the run is a crash; its stderr alone does not
    show the abort (the shell's "Aborted" goes to the shell's own stderr), so without the status the message's
    own type stands."""
    ev = _aborting_program_stderr(
        tmp_path,
        ("cc", "gcc", "c++"),
        "aborts.c",
        _PRINTS_THEN_ABORTS,
    )

    def type_of(*status: str) -> str:
        out = run_cli("diagnose", str(ev), "--format", "json", *status, "--out", str(tmp_path / "o"))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["profile"]["type"]

    assert type_of("--exit-code", "134") == "crash"
    assert type_of() == "unsupported_op"


def test_a_shells_report_of_the_abort_makes_the_crash(tmp_path, run_cli):
    """The same kind of program run by a real bash script: bash reports the job's death by SIGABRT on its own
    stderr ("bash: line 1: PID Aborted  ./prog", strsignal's text for the signal, as it reports "Killed"), so the
    captured stderr alone shows the abort and the run is a crash with no exit status given."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash to run the aborting program")
    _aborting_program_stderr(
        tmp_path,
        ("cc", "gcc", "c++"),
        "aborts.c",
        _PRINTS_THEN_ABORTS,
    )
    p = subprocess.run([bash, "-c", f"{tmp_path / 'aborts'}; exit 1"], capture_output=True, text=True, timeout=60)
    assert " Aborted" in p.stderr, p.stderr
    ev = tmp_path / "shell.log"
    ev.write_text(p.stderr)
    out = run_cli("diagnose", str(ev), "--format", "json", "--out", str(tmp_path / "o"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["profile"]["type"] == "crash"
