"""The words of Python's import system and of the CUDA runtime's device-creation errors place a failure at
start-up where no rule, frame or exception class did (``stage:startup`` in rules/05-reasoning.toml): "cannot
import name 'x' from 'y'", "No module named 'x'" and "partially initialized module" are said while a module is
imported; cudaErrorDevicesUnavailable and cudaErrorNoDevice when the device's context is created. Real processes
run here, and train logs of the thread corpus as their users pasted them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_faildiag.engine.api import diagnose

from .corpus_logs import run_failing, train_log


def test_an_import_failure_a_program_reports_as_json_is_placed_at_start_up(tmp_path: Path) -> None:
    # an application that catches the ImportError of an optional node and reports it as JSON (no traceback,
    # no exception class in front of the message), as plugin hosts do
    err, code = run_failing(
        tmp_path,
        """
        import json, sys
        try:
            from json import loads_fast
        except ImportError as e:
            print(json.dumps({"node": "loader", "exception": str(e)}, indent=2), file=sys.stderr)
            sys.exit(1)
        """,
    )
    assert "cannot import name 'loads_fast' from 'json'" in err
    diag = diagnose(texts={"stderr": err}, exit_code=code)
    assert diag.profile.stage == "startup"


def test_a_missing_module_a_program_logs_as_a_warning_is_placed_at_start_up(tmp_path: Path) -> None:
    # a library's own logged import failure of its compiled part, then its own error for the missing feature
    err, code = run_failing(
        tmp_path,
        """
        import logging, sys
        logging.basicConfig(format="WARNING %(asctime)s %(name)s] %(message)s")
        log = logging.getLogger("_custom_ops")
        try:
            import mylib_C_ops
        except ImportError as e:
            log.warning("Failed to import from mylib_C_ops with %r", e)
        print("error: the compiled ops are not available", file=sys.stderr)
        sys.exit(1)
        """,
    )
    assert "No module named 'mylib_C_ops'" in err
    diag = diagnose(texts={"stderr": err}, exit_code=code)
    assert diag.profile.stage == "startup"


def test_a_missing_module_while_pytest_collects_stays_collection(tmp_path: Path) -> None:
    # pytest's own report of a collection error outranks the import's words: pytest imports while it collects
    (tmp_path / "test_needs_missing.py").write_text("import mylib_absent_xyz\n\ndef test_one():\n    pass\n")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:faildiag", "test_needs_missing.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode == 2, p.stdout + p.stderr
    assert "No module named 'mylib_absent_xyz'" in p.stdout
    diag = diagnose(texts={"stdout": p.stdout}, exit_code=p.returncode)
    assert diag.profile.stage == "collection"


def test_cuda_devices_busy_or_unavailable_is_a_start_up_failure() -> None:
    # cudaErrorDevicesUnavailable is returned when the context is created: nothing had run on the device
    for name in (
        "environment/wsl2_insider_build_cuda_devices_busy_unavailable",
        "environment/windows_cuda_devices_busy_unavailable_bad_driver_install_a1111",
    ):
        diag, label = train_log(name)
        assert "busy or unavailable" in label["key_line"]
        assert diag.profile.stage == "startup", name
