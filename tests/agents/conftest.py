"""Helpers for the agent tests: real failing runs in a temporary project, and the real MCP server driven by
the SDK's own stdio client (``mcp.client.stdio.stdio_client`` + ``ClientSession``) as an agent drives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A training script that needs DATA_DIR; faildiag's fix for it is an environment change (tests/fix does the same).
TRAIN = """
import os

data_dir = os.environ["DATA_DIR"]
with open(os.path.join(data_dir, "train.csv")) as f:
    print("rows", len(f.read().splitlines()))
"""


def child_env(**extra: str) -> dict[str, str]:
    """The environment of every subprocess: this checkout first on the import path, no DATA_DIR."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("DATA_DIR", None)
    env.update(extra)
    return env


def cli(
    *args: str, cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", *args],
        cwd=cwd,
        env=env or child_env(),
        capture_output=True,
        input=stdin,
        timeout=timeout,
    )


def make_data_dir_project(root: Path) -> Path:
    """A project whose `python train.py` really fails for a missing DATA_DIR; its output is saved to out.log."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir()
    (root / "data" / "train.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (root / "train.py").write_text(textwrap.dedent(TRAIN).lstrip(), encoding="utf-8")
    res = subprocess.run(
        [sys.executable, "train.py"], cwd=root, env=child_env(), capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 1 and "KeyError: 'DATA_DIR'" in res.stderr, res.stderr
    (root / "out.log").write_text(res.stderr, encoding="utf-8")
    return root


def server_params(*roots: Path, cwd: Path | None = None) -> Any:
    from mcp import StdioServerParameters

    args = ["-m", "pytest_faildiag.cli", "mcp"]
    for r in roots:
        args += ["--root", str(r)]
    return StdioServerParameters(command=sys.executable, args=args, env=child_env(), cwd=str(cwd) if cwd else None)


Session = Any
Scenario = Callable[[Session], Awaitable[Any]]


def with_server(*roots: Path, scenario: Scenario, cwd: Path | None = None, timeout: float = 300) -> Any:
    """Start `faildiag mcp --root ...` as a subprocess, connect the SDK's stdio client, run ``scenario(session)``."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def main() -> Any:
        with anyio.fail_after(timeout):
            async with stdio_client(server_params(*roots, cwd=cwd)) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await scenario(session)

    return anyio.run(main)


def structured(result: Any) -> dict[str, Any]:
    """A successful tool result's structured content (and its text twin, which must say the same)."""
    assert not _is_error(result), _text(result)
    data = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    assert isinstance(data, dict)
    assert json.loads(_text(result)) == data
    return data


def error_line(result: Any) -> str:
    """A refused call's reason: a tool error with one line of text."""
    assert _is_error(result), _text(result)
    text = _text(result)
    assert "\n" not in text.strip() and "Traceback" not in text
    return text


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def report_schema() -> dict[str, Any]:
    return json.loads((ROOT / "pytest_faildiag" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
