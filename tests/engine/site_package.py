"""Run a real Python program beside a package laid out in a real ``site-packages`` folder of ``tmp_path``.

The reasoning tests need a library whose frames are a library's (a path under ``site-packages/``) and a program
whose frames are the program's: one helper writes both and runs the program, so each test states only the
library's code and the program's lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def run_beside_package(tmp_path: Path, package: str, source: str, code: str) -> subprocess.CompletedProcess[str]:
    """Write ``source`` as ``site-packages/<package>/__init__.py`` and ``code`` as ``job.py``, run the job with
    that folder on ``PYTHONPATH`` and return the finished process (the tests expect it to fail)."""
    site = tmp_path / "lib" / "site-packages"
    (site / package).mkdir(parents=True, exist_ok=True)
    (site / package / "__init__.py").write_text(textwrap.dedent(source))
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": str(site)}
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode != 0, p.stdout + p.stderr
    return p
