"""Where a fixture error belongs: the user's fixture line, not the raise site inside the code it called.

Why: a setup (or teardown) error is reported by pytest as an error of the test, and the innermost user frame
of its traceback is often the library or project helper that raised (``db/pool.py:7``). What the person
reading the failure must change is the fixture that made that call (``conftest.py:7`` in ``database``): that
is where GitHub annotations, ``session.json`` and the report should point. Fixtures of installed plugins are
not the user's: their errors keep the usual innermost user frame.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest


def fixture_codes(item: pytest.Item) -> dict[Any, str]:
    """The code objects of the fixtures ``item`` requested (plain and yield fixtures) → fixture name."""
    info = getattr(item, "_fixtureinfo", None)
    codes: dict[Any, str] = {}
    for name, defs in (getattr(info, "name2fixturedefs", None) or {}).items():
        for fixturedef in defs:
            func = getattr(fixturedef, "func", None)
            try:
                code = getattr(inspect.unwrap(func), "__code__", None) if func is not None else None
            except ValueError:  # a cycle of __wrapped__
                code = None
            if code is not None:
                codes[code] = name
    return codes


def fixture_frame(
    item: pytest.Item, excinfo: Any, is_library: Any, rel: Any, root: Path
) -> tuple[str, int, str] | None:
    """``(file, line, fixture name)`` of the innermost traceback frame that runs one of the test's fixtures
    in the user's code; None when the error did not pass through such a fixture."""
    if excinfo is None:
        return None
    codes = fixture_codes(item)
    if not codes:
        return None
    try:
        entries = list(excinfo.traceback)
    except Exception:
        return None
    for entry in reversed(entries):
        name = codes.get(entry.frame.code.raw)
        if name is not None and not is_library(str(entry.path)):
            return rel(str(entry.path), root), entry.lineno + 1, name
    return None
