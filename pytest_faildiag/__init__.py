"""pytest-faildiag: evidence-backed diagnoses of failed or hung test and training runs.

The public API is the engine (``diagnose``, ``write_snapshot``, renderers) and the model types; the
pytest plugin, the run wrapper and the integrations are built on it.

Every name loads on first use: importing the package runs this file, and pytest imports the package to load
its plugin (``pytest_faildiag.plugin``) in every session, also those without ``--faildiag``, where the model
types (dataclasses, costly to define) are never needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import diagnose, render_markdown, render_text, write_snapshot
    from .model import Diagnosis, Evidence, FailurePoint, FailureProfile, RootCause, ValidationCheck
    from .parse.logread import InputError

__version__ = "0.1.0"

_WHERE = {
    "Diagnosis": ".model",
    "Evidence": ".model",
    "FailurePoint": ".model",
    "FailureProfile": ".model",
    "RootCause": ".model",
    "ValidationCheck": ".model",
    "InputError": ".parse.logread",
    "diagnose": ".engine",
    "write_snapshot": ".engine",
    "render_text": ".engine",
    "render_markdown": ".engine",
}

__all__ = [
    "Diagnosis",
    "Evidence",
    "FailurePoint",
    "FailureProfile",
    "RootCause",
    "ValidationCheck",
    "InputError",
    "diagnose",
    "write_snapshot",
    "render_text",
    "render_markdown",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
