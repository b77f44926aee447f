"""Helpers the reading tests share."""

from __future__ import annotations

from pathlib import Path

from pytest_faildiag.engine import diagnose


def file_verdict(path: Path) -> tuple:
    """What a diagnosis of the log file says: type, stage, top cause, its rule and first evidence with lines."""
    d = diagnose([str(path)])
    top = d.root_causes[0]
    return d.profile.type, d.profile.stage, top.category, top.rule, [(e.excerpt, e.line) for e in top.evidence[:2]]
