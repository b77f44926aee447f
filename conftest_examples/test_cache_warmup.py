"""An intermittent failure: the cache warm-up fails one run in three (a counter file in the system's temp
folder makes the pattern repeatable: the session's run fails, its reruns pass). faildiag reruns it alone at
the end of the session (``--faildiag-rerun``, default 2; this folder's pytest.ini says 1) and reports it
``intermittent`` (it passed alone; it has no predecessors, so no order replay) in the report, the JUnit property
``faildiag.rerun`` and the terminal's "faildiag reruns" block."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

COUNTER = Path(tempfile.gettempdir()) / f"faildiag-example-warmup-{os.getuid()}.count"


def warm_up_cache() -> bool:
    runs = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(runs + 1))
    return runs % 3 != 0  # the backing store answers in time two runs out of three


def test_the_cache_warms_up() -> None:
    assert warm_up_cache(), "cache warm-up timed out"
