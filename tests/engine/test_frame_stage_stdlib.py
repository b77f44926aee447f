"""A standard-library mapping's ``__getitem__`` is a lookup, not a dataset's item (real Python output)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_faildiag.engine.reason import stage_from_frames
from pytest_faildiag.parse.scan import ScanResult, scan_text
from pytest_faildiag.rules import load_ruleset


def _frames(tmp_path: Path, body: str):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    result = ScanResult()
    scan_text(p.stderr, "stderr", load_ruleset(), result)
    return result.tracebacks[-1].frames


def test_a_missing_environment_variable_is_not_the_data_stage(tmp_path):
    frames = _frames(
        tmp_path,
        """
        import os

        def main():
            return os.environ["FAILDIAG_NO_SUCH_VARIABLE"]

        main()
        """,
    )
    assert frames[-1].func == "__getitem__"  # raised in os's own mapping (`<frozen os>` since Python 3.11)
    assert stage_from_frames(frames, load_ruleset().reasoning)[0] != "data"


def test_a_datasets_own_getitem_still_is(tmp_path):
    frames = _frames(
        tmp_path,
        """
        class Pairs:
            def __getitem__(self, i):
                return {"a": 1}[i]

        Pairs()[3]
        """,
    )
    assert stage_from_frames(frames, load_ruleset().reasoning)[0] == "data"
