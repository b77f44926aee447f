"""The MCP SDK is optional: without it `faildiag mcp` says how to install it, and everything else works."""

from __future__ import annotations

import os

from tests.agents.conftest import ROOT, child_env, cli


def _without_mcp(tmp_path) -> dict[str, str]:
    """An environment in which `import mcp` fails as it does when the package is not installed."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "mcp.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), str(ROOT)])
    return env


def test_faildiag_mcp_without_the_sdk_prints_one_line_saying_how_to_install_it(tmp_path):
    res = cli("mcp", "--root", str(tmp_path), cwd=tmp_path, env=_without_mcp(tmp_path), stdin=b"")
    assert res.returncode == 2 and res.stdout == b""
    err = res.stderr.decode()
    assert err.count("\n") == 1 and "pip install 'pytest-faildiag[mcp]'" in err


def test_the_package_and_the_other_commands_work_without_the_sdk(tmp_path):
    env = _without_mcp(tmp_path)
    log = ROOT / "tests" / "data" / "corpus" / "gpu" / "shape_mismatch" / "stderr.txt"
    diag = cli("diagnose", str(log), "--out", str(tmp_path / "out"), "--max-chars", "2000", cwd=tmp_path, env=env)
    assert diag.returncode == 0 and b"mat1 and mat2" in diag.stdout, diag.stderr
    skill = cli("skill", cwd=tmp_path, env=env)
    assert skill.returncode == 0 and skill.stdout.startswith(b"---\nname: ")
    imports = cli("--help", cwd=tmp_path, env=env)
    assert b"mcp" in imports.stderr + imports.stdout


def test_a_root_that_is_not_a_folder_is_one_line_and_exit_2(tmp_path):
    res = cli("mcp", "--root", str(tmp_path / "nope"), cwd=tmp_path, stdin=b"")
    assert res.returncode == 2 and res.stdout == b""
    assert res.stderr.decode().count("\n") == 1 and "not a folder" in res.stderr.decode()


def test_the_agent_modules_import_without_the_sdk(tmp_path):
    import subprocess
    import sys

    code = "import pytest_faildiag.agents.mcp_server, pytest_faildiag.agents.tools as t; print(sorted(t.TOOLS))"
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_without_mcp(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert "'diagnose'" in res.stdout and "'fix_apply'" in res.stdout
