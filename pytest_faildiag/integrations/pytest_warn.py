"""How faildiag's pytest side reports a problem of its own: a ``PytestFaildiagWarning``, never an error.

A module of its own so that the session plugin and the hang watchdog both use it without importing each
other back.
"""

from __future__ import annotations

import sys
import warnings

import pytest


class PytestFaildiagWarning(pytest.PytestWarning):
    """An internal problem of faildiag: the diagnosis is missing or partial, the test outcome is untouched."""


def warn(msg: str, config: pytest.Config | None = None) -> None:
    """Emit a faildiag warning; never raises (``-W error`` turns warnings into exceptions). Outside a test
    (session start) pass ``config`` so the warning reaches pytest's summary instead of escaping it. The
    message names tests, files and errors of the run: redacted, control characters made visible."""
    from ..sanitize import display

    msg = display(msg)
    try:
        if config is not None:
            config.issue_config_time_warning(PytestFaildiagWarning(msg), stacklevel=2)
        else:
            warnings.warn(PytestFaildiagWarning(msg), stacklevel=2)
    except Exception:  # -W error made the warning an exception: print it rather than fail the run
        print(msg, file=sys.stderr)
