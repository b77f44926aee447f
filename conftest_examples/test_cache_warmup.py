"""An intermittent failure: the cache warm-up fails one run in three (a counter file makes the pattern
repeatable: the first run fails, the next two pass). The main job (scripts/examples.sh) points
``$FAILDIAG_EXAMPLE_STATE`` at a fresh folder under the output folder, so the session's run is the failing
one and its rerun passes; without it the counter lives in the system's temp folder. faildiag reruns it alone at
the end of the session (``--faildiag-rerun``, default 2; this folder's pytest.ini says 1) and reports it
``intermittent`` (it passed alone; it has no predecessors, so no order replay) in the report, the JUnit property
``faildiag.rerun`` and the terminal's "faildiag reruns" block."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

COUNTER = Path(os.environ.get("FAILDIAG_EXAMPLE_STATE") or tempfile.gettempdir()) / (
    f"faildiag-example-warmup-{os.getuid()}.count"
)


def warm_up_cache() -> bool:
    runs = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(runs + 1))
    return runs % 3 != 0  # the backing store answers in time two runs out of three


def test_the_cache_warms_up() -> None:
    assert warm_up_cache(), "cache warm-up timed out"
