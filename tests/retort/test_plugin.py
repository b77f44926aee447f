"""The retort plugin, loaded the way retort loads it: a pluggy PluginManager("retort") over entry points.

The hookspec class below declares retort's hook by name and signature (``retort_register_scorers() -> list``),
as read from retort's plugins.py; the scorer is then driven with an object carrying the attributes retort's
RunArtifacts has (output_dir, stdout, stderr, exit_code, duration_seconds, token_count, metadata).
"""

from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import pluggy
import pytest
from retort_helpers import PASSING_PY, Experiment

from pytest_faildiag.integrations import retort as rt
from pytest_faildiag.integrations import retort_plugin

hookspec = pluggy.HookspecMarker("retort")
SECRET = "sk-ant-" + "Q1w2E3r4T5y6U7i8O9p0" * 2


class RetortSpec:
    @hookspec
    def retort_register_scorers(self):  # noqa: D401 - mirrors retort's hook name
        """Return scorer instances."""


@dataclass
class Artifacts:
    output_dir: Path | None
    stdout: str = ""
    stderr: str = ""
    exit_code: int = -1
    duration_seconds: float = 0.0
    token_count: int = 0
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Stack:
    language: str = "python"
    agent: str = "claude-code"
    framework: str = "stdlib"
    extra: dict[str, str] = field(default_factory=dict)


def scorers_from_entry_points() -> list:
    pm = pluggy.PluginManager("retort")
    pm.add_hookspecs(RetortSpec)
    loaded = pm.load_setuptools_entrypoints("retort")
    assert loaded >= 1
    pm.check_pending()  # every hookimpl of ours matches a hookspec retort declares
    return [s for batch in pm.hook.retort_register_scorers() for s in (batch or [])]


def test_the_plugin_is_registered_under_the_group_retort_loads_and_no_other() -> None:
    values = {ep.value for ep in entry_points(group="retort")}
    assert "pytest_faildiag.integrations.retort_plugin" in values
    # what the next install registers (the installed metadata may predate a change to pyproject.toml)
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    groups = [
        g
        for g, eps in project["project"]["entry-points"].items()
        if "pytest_faildiag.integrations.retort_plugin" in eps.values()
    ]
    assert groups == ["retort"]


def test_pluggy_loads_it_and_it_contributes_one_capture_scorer() -> None:
    scorers = [s for s in scorers_from_entry_points() if s.name == "faildiag_capture"]
    assert len(scorers) == 1


def test_capture_writes_a_redacted_dotfolder_and_returns_no_score(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    scorer = next(s for s in scorers_from_entry_points() if s.name == "faildiag_capture")
    art = Artifacts(
        tmp_path,
        stdout="x" * 50_000 + "done",
        stderr=f"ANTHROPIC_API_KEY={SECRET}\nTimeout after 1800s",
        exit_code=124,
        duration_seconds=1800.2,
        token_count=0,
        metadata={"kill_reason": "wall"},
    )
    assert scorer.score(art, Stack()) is None
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert files == [".faildiag", ".faildiag/.capture.json", "app.py"]  # every added name starts with a dot
    cap = json.loads((tmp_path / ".faildiag" / ".capture.json").read_text())
    assert cap["exit_code"] == 124 and cap["kill_reason"] == "wall" and cap["duration_seconds"] == 1800.2
    assert cap["stdout_tail"].endswith("done") and len(cap["stdout_tail"]) <= 20_000
    assert SECRET not in json.dumps(cap)
    assert [f["path"] for f in cap["workspace"]["files"]] == ["app.py"]
    assert cap["env_lock"]


def test_a_rescore_does_not_overwrite_the_first_capture(tmp_path: Path) -> None:
    scorer = retort_plugin.FaildiagCaptureScorer()
    scorer.score(Artifacts(tmp_path, stderr="real failure", exit_code=1), Stack())
    scorer.score(Artifacts(tmp_path, stderr="", exit_code=0), Stack())  # what `retort rescore` passes
    cap = json.loads((tmp_path / ".faildiag" / ".capture.json").read_text())
    assert cap["exit_code"] == 1 and cap["stderr_tail"] == "real failure"
    assert len((tmp_path / ".faildiag" / ".rescores.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize("output_dir", [None, "missing", "file"])
def test_it_never_raises(tmp_path: Path, output_dir: str | None) -> None:
    target = None
    if output_dir == "missing":
        target = tmp_path / "nope"
    elif output_dir == "file":
        target = tmp_path / "f"
        target.write_text("")
    assert retort_plugin.FaildiagCaptureScorer().score(Artifacts(target), object()) is None


def test_it_never_raises_on_an_unwritable_workspace(tmp_path: Path) -> None:
    (tmp_path / ".faildiag").write_text("a file where the folder should be")
    assert retort_plugin.FaildiagCaptureScorer().score(Artifacts(tmp_path, exit_code=1), Stack()) is None


def test_the_diagnosis_reads_the_capture(experiment: Experiment) -> None:
    d = experiment.add_run(
        {"language": "python", "agent": "claude-code"}, status="crashed", error="exit 1", metrics={"_tokens": 0.0}
    )
    retort_plugin.FaildiagCaptureScorer().score(
        Artifacts(d, stderr="API Error: 429 Too Many Requests (rate_limit_error)", exit_code=1), Stack()
    )
    diag = rt.diagnose_experiments(experiment.root, rt.Options()).diagnoses[0]
    assert (diag.verdict, diag.subtype) == ("environment", "rate_limit")
    assert any(c.source.endswith(".faildiag/.capture.json") for c in diag.claims)


def test_captured_workspace_is_not_counted_as_agent_code(experiment: Experiment) -> None:
    d = experiment.add_run({"language": "python", "agent": "claude-code"}, files=PASSING_PY)
    retort_plugin.FaildiagCaptureScorer().score(Artifacts(d, exit_code=0), Stack())
    inv = rt.inventory(d)
    assert all(not s.startswith(".faildiag") for s in inv.sources)


def test_a_retry_seeded_with_the_earlier_attempts_folder_gets_its_own_capture(tmp_path: Path) -> None:
    scorer = retort_plugin.FaildiagCaptureScorer()
    first, retry = tmp_path / "ws1", tmp_path / "ws2"
    first.mkdir()
    scorer.score(Artifacts(first, stdout="done", exit_code=0, metadata={"wrote_nothing": "false"}), Stack())
    shutil.copytree(first, retry)  # retort seeds a second chance / retry with the earlier attempt's folder
    scorer.score(Artifacts(retry, stderr="agent crashed", exit_code=1, metadata={"kill_reason": ""}), Stack())
    cap = json.loads((retry / ".faildiag" / ".capture.json").read_text())
    assert (cap["exit_code"], cap["stderr_tail"], cap["origin"]) == (1, "agent crashed", "run")
    prior = json.loads((retry / ".faildiag" / cap["prior_captures"][0]).read_text())
    assert prior["exit_code"] == 0 and prior["stdout_tail"] == "done"
    # the same live workspace scored again keeps its first capture
    scorer.score(Artifacts(retry, stderr="other", exit_code=2, metadata={"x": "y"}), Stack())
    assert json.loads((retry / ".faildiag" / ".capture.json").read_text())["stderr_tail"] == "agent crashed"


def test_a_capture_written_by_a_rescore_is_marked_and_not_read_as_the_runs_exit(tmp_path: Path) -> None:
    d = tmp_path / "exp" / "runs" / "agent=claude-code_language=python" / "rep1-failed"
    d.mkdir(parents=True)
    (d / "_meta.json").write_text(
        json.dumps({"replicate": 1, "succeeded": False, "run_config": {"language": "python", "agent": "claude-code"}})
    )
    # what `retort rescore` passes: the archived folder, exit 0, no output, no runner metadata
    retort_plugin.FaildiagCaptureScorer().score(Artifacts(d, exit_code=0, duration_seconds=0.0), Stack())
    cap = json.loads((d / ".faildiag" / ".capture.json").read_text())
    assert cap["origin"] == "rescore" and "synthetic" in cap["note"]
    diag = rt.diagnose_experiments(tmp_path / "exp", rt.Options(run_tests=False)).diagnoses[0]
    assert not any("duration 0s" in c.text or "no model work" in c.text for c in diag.claims)
    assert diag.verdict == "unknown"  # a crash with no logs: the synthetic exit 0 is not evidence
