"""Every real log excerpt under tests/data/kb (public issue threads, cited in each label) is diagnosed
with the type and the category its label names: the category first, and the type exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

KB = Path(__file__).resolve().parents[1] / "data" / "kb"
LOGS = sorted(p for p in KB.rglob("*.log") if p.with_suffix(".json").is_file())


def test_it_holds_a_real_log_for_every_stack_family():
    families = {p.parent.name for p in LOGS}
    assert {
        "ascend",
        "hccl",
        "npu_oom",
        "pta",
        "mindspore",
        "jax",
        "nccl",
        "torchvision",
        "checkpoint",
        "tokenizer",
        "compile",
        "config",
        "dataloader",
        "elastic",
    } <= families


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_it_diagnoses_the_real_log_as_labelled(log: Path):
    label = json.loads(log.with_suffix(".json").read_text())
    assert label["source_url"].startswith("https://github.com/")
    diag = diagnose([str(log)], exit_code=label.get("exit_code"))
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == label["type"], (diag.profile.type, cats)
    assert cats and cats[0] == label["category"], cats
    top = diag.root_causes[0]
    assert top.fix_hints, "a cause without a fix hint is not actionable"
    # a signature of the knowledge base named the cause: not the fallback that guesses by stack
    assert top.rule not in (None, "fallback") and not top.id.startswith("unknown."), (top.id, top.rule)
    # and its direct evidence points at the line of this log that shows it
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    cited = [e for e in top.evidence if e.kind == "direct" and e.source == log.name and e.line]
    assert any(0 < e.line <= len(lines) and e.excerpt[:80].strip() in lines[e.line - 1] for e in cited), [
        (e.source, e.line, e.excerpt[:80]) for e in top.evidence
    ]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_it_diagnoses_the_real_log_from_its_text_alone(log: Path):
    """A scorer may hand over the log only (no exit status, no command): the signature must carry it."""
    label = json.loads(log.with_suffix(".json").read_text())
    diag = diagnose([str(log)])
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == label["type"], (diag.profile.type, cats)
    assert label["category"] in cats[:3], cats
