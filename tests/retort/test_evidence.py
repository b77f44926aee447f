"""Evidence that settles a failure the code itself cannot: the turn budget, and what the scorer did for peer runs.

Archives are built with retort's real layout (real sqlite DB with retort's schema, real folders, a real
``.gitignore``); tests that need a rerun run the code's own tests for real.
"""

from __future__ import annotations

from pathlib import Path

from retort_helpers import PASSING_PY, Experiment

from pytest_faildiag.integrations import retort as rt

SWIFT = {"language": "swift", "agent": "hermes-local", "model": "local"}
TS = {"language": "typescript", "agent": "hermes-local", "model": "local"}
ZIG = {"language": "zig", "agent": "claude-code", "model": "sonnet"}
PY = {"language": "python", "agent": "claude-code", "model": "sonnet"}
FAILING_PY = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}


def diagnose(root: Path, **kw) -> dict[str, rt.RunDiagnosis]:
    result = rt.diagnose_experiments(root, rt.Options(**{"test_timeout": 120, **kw}))
    return {d.run: d for d in result.diagnoses}


def _completed(exp: Experiment, config: dict[str, str], rep: int, coverage: float) -> None:
    exp.add_run(
        config,
        rep,
        status="completed",
        error=None,
        metrics={"test_coverage": coverage, "code_quality": 0.9},
        files={"README.md": "done\n"},
    )


def test_an_unarchived_row_is_genuine_when_the_scorer_measured_its_language_elsewhere(experiment: Experiment) -> None:
    experiment.add_run(TS, 1, folder=False, metrics={"_duration_seconds": 1285.0, "_tokens": 4_778_117.0})
    _completed(experiment, TS, 2, 0.72)
    (d,) = diagnose(experiment.root, run_tests=False).values()
    assert (d.verdict, d.subtype) == ("genuine", "gate_fail")
    peer = next(c for c in d.claims if "measured test_coverage>0 for 1 other typescript run" in c.text)
    assert peer.kind == "direct" and "rep2 (0.72)" in peer.text
    assert any(c.kind == "hypothesis" and "not archived" in c.text for c in d.claims)


def test_an_unarchived_row_stays_an_archive_gap_when_no_run_of_its_language_was_measured(
    experiment: Experiment,
) -> None:
    experiment.add_run(TS, 1, folder=False)
    _completed(experiment, PY, 1, 0.9)  # another language's measurement says nothing about typescript's runner
    (d,) = diagnose(experiment.root, run_tests=False).values()
    assert (d.verdict, d.subtype) == ("infra_false_fail", "archive_gap")


def test_an_unarchived_row_that_did_no_model_work_is_not_blamed_on_the_model(experiment: Experiment) -> None:
    experiment.add_run(TS, 1, folder=False, metrics={"_duration_seconds": 20.0, "_tokens": 0.0})
    _completed(experiment, TS, 2, 0.72)
    (d,) = diagnose(experiment.root, run_tests=False).values()
    assert d.verdict == "environment"


def _archive_without_swift(tmp_path: Path) -> Experiment:
    (tmp_path / ".gitignore").write_text(
        "experiments/*/experiment-*/**/runs/**/*\n"
        "!experiments/*/experiment-*/**/runs/**/\n"
        "!experiments/*/experiment-*/**/runs/**/*.py\n"
        "!experiments/*/experiment-*/**/runs/**/*.md\n"
        "!experiments/*/experiment-*/**/runs/**/*.json\n"
    )
    return Experiment(tmp_path / "experiments" / "me" / "experiment-9")


def test_code_the_archive_cannot_hold_is_genuine_once_another_agent_was_measured_on_it(tmp_path: Path) -> None:
    exp = _archive_without_swift(tmp_path)
    exp.add_run(SWIFT, files={"README.md": "swift build && swift test\n", "FEEDBACK.md": "fix it\n"})
    _completed(exp, {**SWIFT, "agent": "claude-code", "model": "opus"}, 1, 1.0)
    (d,) = diagnose(exp.root, run_tests=False).values()
    assert (d.verdict, d.subtype) == ("genuine", "gate_fail")
    assert any("re-includes no .swift file" in c.text for c in d.claims)
    assert any("the archive cannot hold its sources" in c.text and c.kind == "hypothesis" for c in d.claims)


def test_a_first_attempt_whose_retry_completed_stays_an_archive_gap(tmp_path: Path) -> None:
    """The retry of the very same cell passing says the harness (or a transient), not the model, sank attempt 1."""
    exp = _archive_without_swift(tmp_path)
    first = exp.add_run(SWIFT, status="completed", error=None, metrics={"test_coverage": 1.0})
    first.rename(first.with_name("rep1-failed"))
    exp.add_run(SWIFT, status="completed", error=None, metrics={"test_coverage": 1.0}, files={"README.md": "ok\n"})
    (first.with_name("rep1-failed") / "scores.json").write_text('{"test_coverage": 0.0, "code_quality": 0.0}')
    runs = diagnose(exp.root, run_tests=False)
    (d,) = runs.values()
    assert d.run.endswith("rep1-failed") and d.retry_completed
    assert (d.verdict, d.subtype) == ("infra_false_fail", "archive_gap")


def test_tests_this_machine_cannot_run_are_genuine_when_the_scorer_ran_that_language(experiment: Experiment) -> None:
    code = {"src/main.zig": "pub fn add(a: i32, b: i32) i32 { return a + b; }\n", "tests/add.zig": "test {}\n"}
    experiment.add_run(ZIG, 1, succeeded=True, files=code)
    experiment.add_run(ZIG, 2, succeeded=True, files=code)
    _completed(experiment, ZIG, 3, 0.8)
    runs = diagnose(experiment.root)
    assert {(d.verdict, d.subtype) for d in runs.values()} == {("genuine", "gate_fail")}
    d = next(iter(runs.values()))
    assert d.test_run is not None and d.test_run.status == "toolchain_missing"


def test_tests_this_machine_cannot_run_stay_unknown_without_a_measured_peer(experiment: Experiment) -> None:
    code = {"src/main.zig": "pub fn add(a: i32, b: i32) i32 { return a + b; }\n", "tests/add.zig": "test {}\n"}
    experiment.add_run(ZIG, 1, succeeded=True, files=code)
    (d,) = diagnose(experiment.root).values()
    assert (d.verdict, d.subtype) == ("unknown", "insufficient_evidence")


def _turn_capped(exp: Experiment, files: dict[str, str]) -> rt.RunDiagnosis:
    (exp.root / "workspace.yaml").write_text("playpen:\n  timeout_minutes: 45\n  max_turns: 200\n")
    exp.add_run(
        PY,
        status="failed",
        error="",
        succeeded=False,
        metrics={"test_coverage": 0.95, "_duration_seconds": 1339.0, "_tokens": 22_000_000.0, "_turns": 201.0},
        files=files,
    )
    (d,) = diagnose(exp.root).values()
    return d


def test_an_agent_stopped_at_its_turn_cap_with_failing_code_did_not_finish(experiment: Experiment) -> None:
    d = _turn_capped(experiment, FAILING_PY)
    assert (d.verdict, d.subtype) == ("genuine", "non_termination")
    assert any("used 201 agent turns against the experiment's configured max_turns: 200" in c.text for c in d.claims)
    assert d.test_run is not None and d.test_run.status == "failed"


def test_an_agent_stopped_at_its_turn_cap_with_working_code_was_cut_off_by_the_harness(
    experiment: Experiment,
) -> None:
    d = _turn_capped(experiment, PASSING_PY)
    assert (d.verdict, d.subtype) == ("infra_false_fail", "harness_config")
    assert "max_turns" in d.action


def test_the_turn_budget_is_read_from_workspace_yaml(tmp_path: Path) -> None:
    (tmp_path / "workspace.yaml").write_text("playpen:\n  timeout_minutes: 60\n  stall_minutes: 25\n  max_turns: 150\n")
    assert rt.environment.experiment_limits(tmp_path) == {"timeout_s": 3600.0, "stall_s": 1500.0, "max_turns": 150.0}


LOGS = Path(__file__).parent / "logs"


def test_a_native_addon_that_could_not_download_its_headers_is_not_a_compile_error() -> None:
    """Captured from a real ``npm install`` of a run that depends on better-sqlite3, on a machine that reaches the
    npm registry but not the hosts prebuild-install and node-gyp download from: the build never started."""
    out = (LOGS / "npm-install-gyp-headers-unreachable.log").read_text()
    res = rt.groundtruth.npm_install_failure(out)
    assert res.status == "deps_unavailable"
    assert res.excerpt.startswith("a native addon's build could not download")
    assert not res.conclusive
