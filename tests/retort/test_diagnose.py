"""`faildiag retort diagnose` on experiments with retort's real layout, real sqlite DBs and real test runs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from retort_helpers import PASSING_PY, REAL_EXP, Experiment, run_cli

from pytest_faildiag.integrations import retort as rt

CONTRACT_KEYS = {"run", "verdict", "subtype", "claims", "action"}
VERDICT_SUBTYPES = {
    "infra_false_fail": {
        "scorer_gap",
        "mis_measurement",
        "undeclared_deps",
        "permission_auto_deny",
        "concurrency_env_contention",
        "harness_launch",
        "harness_config",
        "archive_gap",
    },
    "genuine": {
        "no_code",
        "compile_error",
        "tests_fail",
        "no_tests",
        "spec_shortfall",
        "non_termination",
        "wrong_location",
    },
    "environment": {
        "rate_limit",
        "auth_expired",
        "stray_process",
        "resource_exhaustion",
        "registry_outage",
        "serving_failure",
        "agent_start_failure",
        "missing_toolchain",
    },
    "unknown": {"insufficient_evidence"},
}
PY = {"language": "python", "agent": "claude-code", "model": "sonnet"}


def diagnose(root: Path, **kw) -> dict[str, rt.RunDiagnosis]:
    result = rt.diagnose_experiments(root, rt.Options(test_timeout=120, **kw))
    return {d.run: d for d in result.diagnoses}


def only(root: Path, **kw) -> rt.RunDiagnosis:
    runs = diagnose(root, **kw)
    assert len(runs) == 1, list(runs)
    return next(iter(runs.values()))


def test_passing_tests_with_a_recorded_zero_are_a_scorer_false_fail(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("infra_false_fail", "mis_measurement")
    assert d.test_run is not None and d.test_run.status == "passed" and d.test_run.passed == 2
    assert d.test_run.coverage and d.test_run.coverage > 0.5
    assert any(c.kind == "direct" and "tests pass" in c.text for c in d.claims)


def test_a_project_in_a_subfolder_is_a_scorer_gap(experiment: Experiment) -> None:
    files = {f"pkg/{k}": v for k, v in PASSING_PY.items()}
    files["pkg/pyproject.toml"] = "[project]\nname = 'pkg'\nversion = '0.1'\n"
    experiment.add_run(PY, files=files)
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("infra_false_fail", "scorer_gap")
    assert d.test_run is not None and d.test_run.root == "pkg"
    assert any("pkg" in c.text for c in d.claims if "source file" in c.text)


def test_failing_tests_are_a_genuine_miss(experiment: Experiment) -> None:
    files = dict(PASSING_PY)
    files["calc.py"] = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
    experiment.add_run(PY, files=files)
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("genuine", "tests_fail")
    assert d.test_run is not None and d.test_run.failed == 1 and d.test_run.passed == 1


def test_code_that_does_not_parse_is_a_compile_error(experiment: Experiment) -> None:
    files = dict(PASSING_PY)
    files["calc.py"] = "def add(a, b)\n    return a + b\n"
    experiment.add_run(PY, files=files)
    assert (only(experiment.root).subtype) == "compile_error"


def test_an_import_nobody_declared_is_undeclared_deps(experiment: Experiment) -> None:
    files = dict(PASSING_PY)
    files["calc.py"] = "import zz_not_a_real_dist_faildiag\n" + files["calc.py"]
    files["requirements.txt"] = "pytest\n"
    experiment.add_run(PY, files=files)
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("infra_false_fail", "undeclared_deps")
    assert d.test_run is not None and d.test_run.missing_module == "zz_not_a_real_dist_faildiag"


def test_a_declared_but_missing_dependency_is_not_ground_truth(experiment: Experiment) -> None:
    files = dict(PASSING_PY)
    files["calc.py"] = "import zz_not_a_real_dist_faildiag\n" + files["calc.py"]
    files["requirements.txt"] = "zz-not-a-real-dist-faildiag==1.0\n"
    experiment.add_run(PY, files=files)
    d = only(experiment.root)
    assert d.test_run is not None and d.test_run.status == "deps_unavailable"
    assert d.verdict != "infra_false_fail" or d.subtype != "undeclared_deps"
    assert d.verdict == "unknown" or any(c.kind == "hypothesis" for c in d.claims)


def test_code_without_tests_is_no_tests(experiment: Experiment) -> None:
    experiment.add_run(PY, files={"calc.py": PASSING_PY["calc.py"]})
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("genuine", "no_tests")


def test_a_wall_clock_kill_is_non_termination_even_at_zero_tokens(experiment: Experiment) -> None:
    experiment.add_run(
        PY, status="crashed", error="Timeout after 1800s", metrics={"_tokens": 0.0}, files={"calc.py": "x = 1\n"}
    )
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("genuine", "non_termination")
    assert d.run.endswith("rep1-failed")


def test_a_db_row_without_an_archive_is_an_archive_gap(experiment: Experiment) -> None:
    experiment.add_run(PY, folder=False)
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("infra_false_fail", "archive_gap")
    assert d.run == "runs/agent=claude-code_language=python_model=sonnet/rep1"


def test_an_empty_workspace_is_no_code_but_says_what_it_cannot_rule_out(experiment: Experiment) -> None:
    experiment.add_run(PY)
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("genuine", "no_code")
    assert any(c.kind == "hypothesis" and "blocked" in c.text for c in d.claims)


def test_an_empty_archive_of_a_run_that_measured_coverage_is_an_archive_gap(experiment: Experiment) -> None:
    experiment.add_run(
        PY, status="failed", error="answers wrong (factual_accuracy=0.5)", metrics={"test_coverage": 0.9}
    )
    assert only(experiment.root).subtype == "archive_gap"


def test_a_usage_limit_in_claude_stream_json_is_an_environment_rate_limit(experiment: Experiment) -> None:
    log = "\n".join(
        json.dumps(e)
        for e in [
            {"type": "system", "subtype": "init"},
            {
                "type": "assistant",
                "message": {
                    "content": [{"type": "text", "text": "Starting."}],
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
            },
            {
                "type": "result",
                "subtype": "error_during_execution",
                "is_error": True,
                "result": "Claude AI usage limit reached|1767225600",
                "total_cost_usd": 0.0,
            },
        ]
    )
    experiment.add_run(
        PY, status="crashed", error="agent exited 1", metrics={"_tokens": 0.0}, files={"_agent_stdout.log": log}
    )
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("environment", "rate_limit")
    assert any(c.kind == "direct" and c.source.endswith("_agent_stdout.log") for c in d.claims)


def test_rate_limit_words_in_the_models_own_work_are_not_a_rate_limit(experiment: Experiment) -> None:
    log = "\n".join(
        json.dumps(e)
        for e in [
            {
                "type": "assistant",
                "message": {
                    "content": [{"type": "text", "text": "I'll add rate limiting (429 Too Many Requests) middleware."}]
                },
            },
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "is_error": True,
                            "content": "AssertionError: expected 429 Too Many Requests",
                        }
                    ]
                },
            },
            {"type": "result", "subtype": "success", "is_error": False, "result": "Done"},
        ]
    )
    experiment.add_run(PY, files={**PASSING_PY, "_agent_stdout.log": log})
    d = only(experiment.root)
    assert d.subtype != "rate_limit"
    assert (d.verdict, d.subtype) == ("infra_false_fail", "mis_measurement")


def test_a_denied_write_tool_with_no_code_is_permission_auto_deny(experiment: Experiment) -> None:
    log = "\n".join(
        json.dumps(e)
        for e in [
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "is_error": True,
                            "content": "Claude requested permissions to write to /w/calc.py, but you "
                            "haven't granted it yet.",
                        }
                    ]
                },
            },
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": "I could not write files.",
                "permission_denials": [{"tool_name": "Write", "tool_input": {"file_path": "/w/calc.py"}}],
            },
        ]
    )
    experiment.add_run(PY, files={"_agent_stdout.log": log})
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("infra_false_fail", "permission_auto_deny")


def test_an_expired_login_in_codex_json_is_auth_expired(experiment: Experiment) -> None:
    log = json.dumps({"type": "error", "message": "unexpected status 401 Unauthorized: token expired"})
    experiment.add_run(
        {**PY, "agent": "codex"}, status="crashed", error="codex exited 1", files={"_agent_stdout.log": log + "\n"}
    )
    assert (only(experiment.root).subtype) == "auth_expired"


def test_opencode_print_logs_stderr_permission_line_is_read(experiment: Experiment) -> None:
    stderr = (
        "INFO  2026-01-01T00:00:00 +1ms service=permission permission=external_directory "
        "pattern=/tmp/x action=deny evaluated\n"
    )
    experiment.add_run(
        {**PY, "agent": "opencode"}, status="crashed", error="opencode exited 1", files={"_agent_stderr.log": stderr}
    )
    assert only(experiment.root).subtype == "permission_auto_deny"


def test_wrong_answers_with_passing_tests_are_a_spec_shortfall(experiment: Experiment) -> None:
    experiment.add_run(
        PY, error="answers wrong (factual_accuracy=0.5)", metrics={"test_coverage": 0.9}, files=PASSING_PY
    )
    assert only(experiment.root).subtype == "spec_shortfall"


def test_a_repn_failed_folder_without_a_db_row_is_found(tmp_path: Path) -> None:
    d = tmp_path / "exp" / "runs" / "language=python_model=x" / "rep2-failed"
    d.mkdir(parents=True)
    (d / "_meta.json").write_text(
        json.dumps({"replicate": 2, "run_config": {"language": "python", "model": "x"}, "succeeded": False})
    )
    runs = diagnose(tmp_path / "exp", run_tests=False)
    assert list(runs) == ["runs/language=python_model=x/rep2-failed"]


def test_all_zero_scores_json_in_a_plain_rep_folder_is_found_without_a_db(tmp_path: Path) -> None:
    d = tmp_path / "exp" / "runs" / "language=python" / "rep1"
    d.mkdir(parents=True)
    (d / "scores.json").write_text(json.dumps({"test_coverage": 0.0, "code_quality": 0.0}))
    ok = tmp_path / "exp" / "runs" / "language=python" / "rep2"
    ok.mkdir()
    (ok / "scores.json").write_text(json.dumps({"test_coverage": 0.8, "code_quality": 1.0}))
    assert list(diagnose(tmp_path / "exp", run_tests=False)) == ["runs/language=python/rep1"]


def test_malformed_json_files_are_reported_not_fatal(experiment: Experiment) -> None:
    d = experiment.add_run(PY, files=PASSING_PY)
    (d / "_meta.json").write_text("{not json")
    (d / "scores.json").write_text("[1, 2")
    diag = only(experiment.root)
    assert any("malformed" in c.text for c in diag.claims)
    assert diag.verdict == "infra_false_fail"


def test_the_real_archived_experiment_is_diagnosed_with_sources_on_every_claim() -> None:
    runs = diagnose(REAL_EXP, run_tests=False)
    assert len(runs) == 5  # its retort.db records 5 failed rows
    for name, d in runs.items():
        assert name.startswith("runs/agent=hermes-local_language=python_prompt=")
        assert d.subtype in VERDICT_SUBTYPES[d.verdict]
        assert all(c.kind in {"direct", "hypothesis"} and c.source for c in d.claims)
        assert any("test_coverage=0" in c.text for c in d.claims)


def test_a_folder_of_experiments_is_walked(tmp_path: Path) -> None:
    a = Experiment(tmp_path / "all" / "exp-a" / "bookshop")
    a.add_run(PY, folder=False)
    b = Experiment(tmp_path / "all" / "exp-b")
    b.add_run(PY, folder=False)
    runs = diagnose(tmp_path / "all")
    assert sorted(runs) == [
        "exp-a/bookshop/runs/agent=claude-code_language=python_model=sonnet/rep1",
        "exp-b/runs/agent=claude-code_language=python_model=sonnet/rep1",
    ]


def test_rollup_counts_and_trust(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    experiment.add_run(PY, rep=2, files={"calc.py": "x = 1\n"})
    for rep in (3, 4, 5, 6, 7, 8, 9, 10):
        experiment.add_run(
            PY, rep=rep, status="completed", error=None, metrics={"test_coverage": 0.9}, files=PASSING_PY
        )
    result = rt.diagnose_experiments(experiment.root, rt.Options())
    roll = rt.rollup(result)
    assert roll["failed_runs"] == 2 and roll["total_runs"] == 10
    assert roll["by_verdict"]["infra_false_fail"] == 1 and roll["by_verdict"]["genuine"] == 1
    assert roll["measurements_trustworthy"] is False


# --------------------------------------------------------------------------- CLI


def test_cli_json_is_exactly_the_contract(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    experiment.add_run(PY, rep=2, folder=False)
    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"runs"}
    assert len(data["runs"]) == 2
    for entry in data["runs"]:
        assert set(entry) == CONTRACT_KEYS
        assert entry["subtype"] in VERDICT_SUBTYPES[entry["verdict"]]
        for c in entry["claims"]:
            assert set(c) == {"text", "kind", "source"} and c["kind"] in {"direct", "hypothesis"}


def test_cli_text_has_a_rollup_and_out_folder_gets_files(experiment: Experiment, tmp_path: Path) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    out = tmp_path / "out"
    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Roll-up: 1 failed of 1 recorded runs" in proc.stdout
    assert "[infra_false_fail/mis_measurement]" in proc.stdout
    assert json.loads((out / "retort-rollup.json").read_text())["by_verdict"]["infra_false_fail"] == 1
    assert json.loads((out / "retort-diagnosis.json").read_text())["runs"][0]["test_run"]["status"] == "passed"
    assert not (out / ".work").exists()


def test_cli_missing_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = run_cli("diagnose", "--experiment-dir", str(tmp_path / "nope"), "--format", "json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_cli_folder_without_any_experiment_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = run_cli("diagnose", "--experiment-dir", str(tmp_path / "empty"))
    assert proc.returncode == 2 and "no retort experiment" in proc.stderr


def test_cli_locked_db_gives_a_best_effort_result(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    holder = sqlite3.connect(experiment.db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--format", "json", "--no-run-tests")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 0, proc.stderr
    assert "locked" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    runs = json.loads(proc.stdout)["runs"]
    assert [r["run"] for r in runs] == ["runs/agent=claude-code_language=python_model=sonnet/rep1"]
    assert any("locked" in c["text"] for c in runs[0]["claims"])


def test_cli_corrupt_db_gives_a_best_effort_result(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    experiment.db.write_bytes(b"this is not a database" * 100)
    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--format", "json", "--no-run-tests")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["runs"][0]["run"].endswith("rep1")


def test_cli_redacts_secrets_from_error_messages(experiment: Experiment) -> None:
    secret = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    experiment.add_run(PY, status="crashed", error=f"auth failed for key {secret}: invalid api key")
    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--format", "json")
    assert proc.returncode == 0
    assert secret not in proc.stdout
    assert json.loads(proc.stdout)["runs"][0]["subtype"] == "auth_expired"


def test_rescore_writes_changes_and_leaves_the_db_alone_unless_asked(experiment: Experiment, tmp_path: Path) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    before = experiment.db.read_bytes()
    out = tmp_path / "out"
    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--rescore", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    change = json.loads((out / "rescore.json").read_text())["changes"][0]
    assert change["test_coverage"]["old"] == 0 and change["test_coverage"]["new"] > 0.5
    assert change["db_written"] is False
    assert experiment.db.read_bytes() == before

    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--rescore", "--write-db", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    con = sqlite3.connect(experiment.db)
    status, err = con.execute("SELECT status, error_message FROM experiment_runs").fetchone()
    cov = con.execute("SELECT value FROM run_results WHERE metric_name='test_coverage'").fetchone()[0]
    con.close()
    assert (status, err) == ("completed", None) and cov > 0.5


def test_write_db_without_rescore_is_bad_usage(experiment: Experiment) -> None:
    proc = run_cli("diagnose", "--experiment-dir", str(experiment.root), "--write-db")
    assert proc.returncode == 2 and "--rescore" in proc.stderr


def test_ab_reports_both_arms_of_an_env_dependent_failure(experiment: Experiment) -> None:
    files = {
        "calc.py": "import os\n\n\ndef ok():\n    return os.environ.get('FD_FLAKY') == 'fixed'\n",
        "test_calc.py": "from calc import ok\n\n\ndef test_ok():\n    assert ok()\n",
    }
    d = experiment.add_run(PY, files=files)
    proc = run_cli("ab", "--run-dir", str(d), "--variable", "FD_FLAKY", "--b", "fixed", "-n", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    arms = {a["arm"]: a for a in json.loads(proc.stdout)["arms"]}
    assert arms["A"]["passed"] == 0 and arms["A"]["outcomes"] == ["failed", "failed"]
    assert arms["B"]["passed"] == 2


def test_ab_missing_run_dir_is_exit_2(tmp_path: Path) -> None:
    proc = run_cli("ab", "--run-dir", str(tmp_path / "none"), "--variable", "X")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_the_experiment_folder_is_not_written_to(experiment: Experiment) -> None:
    experiment.add_run(PY, files=PASSING_PY)
    snapshot = sorted(p.relative_to(experiment.root).as_posix() for p in experiment.root.rglob("*"))
    run_cli("diagnose", "--experiment-dir", str(experiment.root))
    assert sorted(p.relative_to(experiment.root).as_posix() for p in experiment.root.rglob("*")) == snapshot


def test_real_fixture_copy_is_diagnosed_by_the_cli(tmp_path: Path) -> None:
    shutil.copytree(REAL_EXP, tmp_path / "exp19")
    proc = run_cli("diagnose", "--experiment-dir", str(tmp_path / "exp19"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["runs"]) == 5


def test_a_kill_message_after_the_agents_stderr_is_still_non_termination(experiment: Experiment) -> None:
    experiment.add_run(
        PY,
        status="crashed",
        error="some agent noise\nmore noise\nKilled after 1876s — stalled (no progress for 25m, unproductive loop)",
        files={"calc.py": "x = 1\n"},
    )
    assert only(experiment.root).subtype == "non_termination"


def test_a_whole_factor_level_failing_instantly_is_a_harness_config_cohort(experiment: Experiment) -> None:
    instant = {"_duration_seconds": 1.2, "_tokens": 0.0, "_cost_usd": 0.0}
    for lang in ("python", "go", "rust"):
        experiment.add_run(
            {"language": lang, "tooling": "beads"}, status="failed", error="", metrics=instant, succeeded=False
        )
        experiment.add_run(
            {"language": lang, "tooling": "none"},
            status="completed",
            error=None,
            metrics={"test_coverage": 0.9},
            files=PASSING_PY,
        )
    runs = diagnose(experiment.root, run_tests=False)
    assert len(runs) == 3
    for d in runs.values():
        assert (d.verdict, d.subtype) == ("infra_false_fail", "harness_config")
        assert any(c.kind == "direct" and "tooling=beads" in c.text for c in d.claims)


def test_one_run_that_did_no_model_work_is_an_environment_start_failure(experiment: Experiment) -> None:
    experiment.add_run(PY, status="crashed", error="", metrics={"_duration_seconds": 2.0, "_tokens": 0.0})
    experiment.add_run({**PY, "language": "go"}, status="completed", error=None, metrics={"test_coverage": 0.9})
    d = only(experiment.root)
    assert (d.verdict, d.subtype) == ("environment", "agent_start_failure")  # one run: not a whole-level config
    assert any(c.kind == "direct" and "0 tokens" in c.text and "no model work" in c.text for c in d.claims)
    assert any(c.kind == "hypothesis" and "not logged in" in c.text for c in d.claims)


def test_an_older_archive_without_a_factor_in_its_folder_name_is_matched(experiment: Experiment) -> None:
    d = experiment.add_run(PY, folder=False, files=None)
    legacy = d.parent.parent / "agent=claude-code_language=python" / "rep1"
    legacy.mkdir(parents=True)
    for k, v in PASSING_PY.items():
        (legacy / k).parent.mkdir(parents=True, exist_ok=True)
        (legacy / k).write_text(v)
    diag = only(experiment.root)
    assert diag.run == "runs/agent=claude-code_language=python/rep1"
    assert diag.verdict == "infra_false_fail"
    assert any(c.kind == "hypothesis" and "subset" in c.text for c in diag.claims)


def test_a_superseded_crashed_attempt_does_not_count_against_trust(experiment: Experiment) -> None:
    experiment.add_run(PY, status="completed", error=None, metrics={"test_coverage": 0.9}, files=PASSING_PY)
    first = experiment.root / "runs" / "agent=claude-code_language=python_model=sonnet" / "rep1-failed"
    first.mkdir()
    (first / "_meta.json").write_text(json.dumps({"replicate": 1, "run_config": PY, "succeeded": False}))
    result = rt.diagnose_experiments(experiment.root, rt.Options(run_tests=False))
    assert [d.run for d in result.diagnoses] == ["runs/agent=claude-code_language=python_model=sonnet/rep1-failed"]
    assert result.diagnoses[0].superseded is True
    assert any("retry of the identical configuration" in c.text for c in result.diagnoses[0].claims)
    assert rt.rollup(result)["measurements_trustworthy"] is True


def test_tests_that_need_unarchived_task_data_are_not_called_failing(experiment: Experiment) -> None:
    files = {
        "loader.py": "import csv\n\n\ndef rows():\n    with open('data/kaggle/matches.csv') as fh:\n"
        "        return list(csv.reader(fh))\n",
        "test_loader.py": "from loader import rows\n\n\ndef test_rows():\n    assert len(rows()) > 10\n",
    }
    experiment.add_run(PY, error="answers wrong (factual_accuracy=0.0)", metrics={"test_coverage": 0.7}, files=files)
    d = only(experiment.root)
    assert d.test_run is not None and d.test_run.status == "data_missing"
    assert d.subtype == "spec_shortfall"  # from retort's recorded gate, not from our data-less rerun


def test_a_refusal_quoted_in_evaluation_md_explains_an_empty_workspace(experiment: Experiment) -> None:
    d = experiment.add_run(PY)
    (d / "evaluation.md").write_text(
        "# Evaluation\n\n- **Status:** FAILED — no generated code.\n\nThe agent's "
        'write_file calls were refused ("Refusing to write to sensitive system path" '
        "for the temp workspace), so nothing was persisted.\n"
    )
    diag = only(experiment.root)
    assert (diag.verdict, diag.subtype) == ("infra_false_fail", "permission_auto_deny")
    assert any(c.source.endswith("evaluation.md") and "Refusing to write" in c.text for c in diag.claims)


def test_a_refusal_the_model_routed_around_does_not_override_working_code(experiment: Experiment) -> None:
    d = experiment.add_run(PY, files=PASSING_PY)
    (d / "evaluation.md").write_text(
        '- **Status:** ok\n\nOne write was refused ("Refusing to write to sensitive '
        'system path"); the agent used the shell instead.\n'
    )
    assert only(experiment.root).subtype == "mis_measurement"


def test_a_failed_row_whose_configuration_was_later_completed_is_marked_superseded(experiment: Experiment) -> None:
    experiment.add_run(PY, status="crashed", error="", folder=False)
    experiment.add_run(PY, status="completed", error=None, metrics={"test_coverage": 0.9}, files=PASSING_PY)
    result = rt.diagnose_experiments(experiment.root, rt.Options(run_tests=False))
    assert len(result.diagnoses) == 1 and result.diagnoses[0].superseded
    assert result.diagnoses[0].subtype == "archive_gap"  # not judged on the retry's folder
    assert any("superseded by a recorded retry" in c.text for c in result.diagnoses[0].claims)
