"""The diagnosis engine: analyze → validate/rank → snapshot → report. No pytest import here.

The names below load on first use: a passing pytest session imports ``engine.changes`` (to record the
green revision), and importing a submodule runs this file, which must not pull in the whole engine then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..fsio import atomic_write
    from .api import collect, diagnose
    from .report import render_markdown, render_text
    from .snapshot import report_dict, write_snapshot

_WHERE = {
    "collect": ".api",
    "diagnose": ".api",
    "render_markdown": ".report",
    "render_text": ".report",
    "report_dict": ".snapshot",
    "write_snapshot": ".snapshot",
    "atomic_write": "..fsio",
}

__all__ = ["collect", "diagnose", "render_markdown", "render_text", "report_dict", "write_snapshot", "atomic_write"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
