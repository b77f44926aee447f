"""Every attempt of a replicate, environment evidence from run metadata, and robustness of the whole pass.

Archives are built with retort's real layout (real sqlite DB, real folders); tests run for real; the CLI is
the real one. Folder layouts follow retort's archiver: a crash lands in ``repN-failed``; a retry that succeeds
renames the older ``repN`` to ``repN-failed`` (keeping ``succeeded: true``); a second chance is seeded with
``FEEDBACK.md``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from retort_helpers import PASSING_PY, Experiment, cell_of, run_cli

from pytest_faildiag.integrations import retort as rt

PY = {"language": "python", "agent": "claude-code", "model": "sonnet"}


def diagnose(root: Path, **kw) -> dict[str, rt.RunDiagnosis]:
    result = rt.diagnose_experiments(root, rt.Options(**{"test_timeout": 120, **kw}))
    return {d.run: d for d in result.diagnoses}


def write_rep(
    folder: Path,
    *,
    succeeded: bool,
    scores: dict[str, float],
    files: dict[str, str] | None = None,
    config: dict[str, str] = PY,
) -> Path:
    folder.mkdir(parents=True)
    (folder / "_meta.json").write_text(json.dumps({"replicate": 1, "run_config": config, "succeeded": succeeded}))
    (folder / "scores.json").write_text(json.dumps(scores))
    (folder / "TASK.md").write_text("Build a small library.\n")
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


ZERO = {"test_coverage": 0.0, "code_quality": 0.0}


def test_a_crashed_second_chance_in_rep1_failed_supersedes_rep1_without_a_db(tmp_path: Path) -> None:
    cell = tmp_path / "exp" / "runs" / cell_of(PY)
    write_rep(cell / "rep1", succeeded=True, scores=ZERO, files={"calc.py": "x = 1\n"})
    write_rep(cell / "rep1-failed", succeeded=False, scores=ZERO, files={"FEEDBACK.md": "fix it\n"})
    result = rt.diagnose_experiments(tmp_path / "exp", rt.Options(run_tests=False))
    by = {d.run: d for d in result.diagnoses}
    first, retry = by[f"runs/{cell_of(PY)}/rep1"], by[f"runs/{cell_of(PY)}/rep1-failed"]
    assert first.superseded_by == f"runs/{cell_of(PY)}/rep1-failed" and first.superseded
    assert retry.superseded_by is None and not retry.superseded
    roll = rt.rollup(result)
    assert (roll["failed_runs"], roll["total_runs"], roll["superseded_attempts"]) == (1, 1, 1)


def test_a_renamed_attempt_is_superseded_by_the_retry_that_replaced_it(tmp_path: Path) -> None:
    cell = tmp_path / "exp" / "runs" / cell_of(PY)
    write_rep(cell / "rep1-failed", succeeded=True, scores=ZERO, files={"calc.py": "x = 1\n"})
    write_rep(cell / "rep1", succeeded=True, scores={"test_coverage": 0.9, "code_quality": 1.0}, files=PASSING_PY)
    (d,) = rt.diagnose_experiments(tmp_path / "exp", rt.Options(run_tests=False)).diagnoses
    assert d.run.endswith("rep1-failed") and d.superseded_by.endswith("/rep1") and d.retry_completed
    assert any("renamed" in c.text for c in d.claims)


def test_with_a_crashed_db_row_the_older_rep1_is_the_superseded_attempt(experiment: Experiment) -> None:
    retry = experiment.add_run(PY, status="crashed", error="exit 1", metrics={"_duration_seconds": 900.0})
    write_rep(retry.parent / "rep1", succeeded=True, scores=ZERO, files={"calc.py": "x = 1\n"})
    by = diagnose(experiment.root, run_tests=False)
    older = by[f"runs/{cell_of(PY)}/rep1"]
    assert older.superseded_by == f"runs/{cell_of(PY)}/rep1-failed"
    assert not by[f"runs/{cell_of(PY)}/rep1-failed"].superseded


def test_a_cell_nested_by_a_model_id_with_a_slash_is_walked(tmp_path: Path) -> None:
    cfg = {"language": "python", "model": "mlxlocal/org--coder"}
    write_rep(tmp_path / "exp" / "runs" / cell_of(cfg) / "rep2-failed", succeeded=False, scores=ZERO, config=cfg)
    (tmp_path / "exp" / "retort.db").write_bytes(b"")  # an empty file: no rows, folders are walked
    runs = diagnose(tmp_path / "exp", run_tests=False)
    assert list(runs) == ["runs/language=python_model=mlxlocal/org--coder/rep2-failed"]


def test_a_working_unittest_suite_in_tests_py_is_not_no_tests(experiment: Experiment) -> None:
    files = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "tests.py": "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    }
    experiment.add_run(PY, files=files)
    (d,) = diagnose(experiment.root).values()
    assert d.test_run is not None and (d.test_run.status, d.test_run.passed) == ("passed", 1)
    assert d.verdict == "infra_false_fail"
    assert any("1 passed, 0 failed" in c.text for c in d.claims)  # the count survives redaction


def test_one_collection_error_counts_once(experiment: Experiment) -> None:
    experiment.add_run(PY, files={"calc.py": "x = 1\n", "tests/test_calc.py": "import calc\nassert False\n"})
    (d,) = diagnose(experiment.root).values()
    assert d.test_run is not None and (d.test_run.passed, d.test_run.failed) == (0, 1)


def test_tests_importing_a_module_nobody_wrote_are_a_genuine_miss(experiment: Experiment) -> None:
    experiment.add_run(
        PY,
        files={
            "tests.py": "import unittest\nfrom app import app\n\n\nclass T(unittest.TestCase):\n"
            "    def test_it(self):\n        self.assertTrue(app)\n"
        },
    )
    (d,) = diagnose(experiment.root).values()
    assert (d.verdict, d.subtype) == ("genuine", "no_code")
    assert any("never written" in c.text for c in d.claims)


def test_runs_doing_no_model_work_at_the_same_time_are_an_outage(experiment: Experiment) -> None:
    for lang in ("java", "erlang"):
        experiment.add_run(
            {**PY, "language": lang},
            metrics={"_duration_seconds": 23.0, "_tokens": 0.0},
            files={"Main.java": "class Main {}\n"},
        )
    experiment.add_run({**PY, "language": "go"}, status="completed", error=None, metrics={"test_coverage": 0.8})
    runs = diagnose(experiment.root, run_tests=False)
    assert {(d.verdict, d.subtype) for d in runs.values()} == {("environment", "serving_failure")}
    assert all(any("did no model work within" in c.text for c in d.claims) for d in runs.values())


def test_a_run_at_the_configured_wall_clock_says_so(experiment: Experiment) -> None:
    (experiment.root / "workspace.yaml").write_text("playpen:\n  timeout_minutes: 30\n  stall_minutes: 10\n")
    experiment.add_run(PY, status="crashed", error="", metrics={"_duration_seconds": 1800.01, "_tokens": 0.0})
    (d,) = diagnose(experiment.root, run_tests=False).values()
    assert (d.verdict, d.subtype) == ("genuine", "non_termination")
    assert any("configured wall clock of 1800s" in c.text and c.kind == "direct" for c in d.claims)


def test_a_build_file_naming_sources_the_archive_lacks_is_an_archive_gap(experiment: Experiment) -> None:
    experiment.add_run({**PY, "language": "c"}, files={"Makefile": "SRCS = main.c http.c\nall:\n\tcc $(SRCS)\n"})
    (d,) = diagnose(experiment.root, run_tests=False).values()
    assert (d.verdict, d.subtype) == ("infra_false_fail", "archive_gap")
    assert any("main.c" in c.text and c.source.endswith("Makefile") for c in d.claims)


def test_a_half_written_folder_is_unknown_with_the_reason(experiment: Experiment) -> None:
    d = experiment.add_run(PY)
    for f in d.iterdir():
        f.unlink()
    (diag,) = diagnose(experiment.root, run_tests=False).values()
    assert diag.verdict == "unknown" and any("half-written" in c.text for c in diag.claims)


def test_a_hanging_rerun_is_unknown_and_names_its_timeout(experiment: Experiment) -> None:
    files = {"calc.py": "x = 1\n", "tests/test_hang.py": "import time\n\n\ndef test_hang():\n    time.sleep(300)\n"}
    experiment.add_run(PY, files=files)
    (d,) = diagnose(experiment.root, test_timeout=5).values()
    assert d.verdict == "unknown" and "--test-timeout" in d.action and "5s" in d.action
    assert any("5s timeout" in c.text for c in d.claims)


def test_the_roll_up_counts_per_experiment_and_lists_scores_that_would_change(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)  # passes its tests: a scorer false-fail
    experiment.add_run({**PY, "language": "go"}, status="completed", error=None, metrics={"test_coverage": 0.8})
    result = rt.diagnose_experiments(experiment.root, rt.Options())
    roll = rt.rollup(result)
    (exp,) = roll["experiments"].values()
    assert (exp["recorded_failures"], exp["harness"], exp["genuine"]) == (1, 1, 0)
    assert exp["scores_that_would_change"][0].endswith("rescore)")
    assert "score would change:" in rt.render_text(result, roll)


def test_a_second_pass_with_the_same_out_reuses_the_reruns(experiment: Experiment, tmp_path: Path) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    out = tmp_path / "out"
    args = ["diagnose", "--experiment-dir", str(experiment.root), "--format", "json", "--out", str(out)]
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert "reused" not in first.stdout and list((out / ".rerun-cache").glob("*.json"))
    second = run_cli(*args)
    assert second.returncode == 0 and "rerun reused from an earlier pass" in second.stdout
    # the same content in a fresh copy (a new checkout) still hits the cache; a changed file does not
    copy = tmp_path / "copy"
    shutil.copytree(experiment.root, copy)
    third = run_cli("diagnose", "--experiment-dir", str(copy), "--format", "json", "--out", str(out))
    assert "rerun reused" in third.stdout
    (next((copy / "runs").glob("*/rep1")) / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    fourth = run_cli("diagnose", "--experiment-dir", str(copy), "--format", "json", "--out", str(out))
    assert "rerun reused" not in fourth.stdout and '"tests_fail"' in fourth.stdout


def test_a_missing_toolchain_in_the_agents_stderr_is_an_environment_cause(experiment: Experiment) -> None:
    experiment.add_run(
        {**PY, "language": "rust"},
        status="crashed",
        error="agent exited 127",
        files={"_agent_stderr.log": "running tests\nbash: cargo: command not found\n"},
    )
    (d,) = diagnose(experiment.root, run_tests=False).values()
    assert (d.verdict, d.subtype) == ("environment", "missing_toolchain")
    assert any(c.source.endswith("_agent_stderr.log") and "cargo: command not found" in c.text for c in d.claims)


def test_two_attempts_the_archive_cannot_order_count_as_one_recorded_run(tmp_path: Path) -> None:
    cell = tmp_path / "exp" / "runs" / cell_of(PY)
    write_rep(cell / "rep1", succeeded=True, scores=ZERO, files={"calc.py": "x = 1\n"})
    write_rep(cell / "rep1-failed", succeeded=False, scores=ZERO)
    result = rt.diagnose_experiments(tmp_path / "exp", rt.Options(run_tests=False))
    assert len(result.diagnoses) == 2
    assert all(any("does not record which attempt came first" in c.text for c in d.claims) for d in result.diagnoses)
    roll = rt.rollup(result)
    assert (roll["failed_runs"], roll["total_runs"]) == (1, 1)


def test_an_archive_whose_gitignore_keeps_no_sources_of_the_language_is_an_archive_gap(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text(
        "experiments/*/experiment-*/**/runs/**/*\n"
        "!experiments/*/experiment-*/**/runs/**/\n"
        "!experiments/*/experiment-*/**/runs/**/*.py\n"
        "!experiments/*/experiment-*/**/runs/**/*.md\n"
    )
    exp = Experiment(tmp_path / "experiments" / "me" / "experiment-9")
    exp.add_run({**PY, "language": "swift"}, files={"README.md": "swift build && swift test\n"})
    exp.add_run(PY)  # python IS kept: an empty python folder stays a plain no-code miss
    runs = {d.run.split("language=")[1]: d for d in diagnose(exp.root, run_tests=False).values()}
    swift = next(d for k, d in runs.items() if k.startswith("swift"))
    assert (swift.verdict, swift.subtype) == ("infra_false_fail", "archive_gap")
    assert any("re-includes no .swift file" in c.text for c in swift.claims)
    python = next(d for k, d in runs.items() if k.startswith("python"))
    assert python.subtype == "no_code"
