"""`faildiag mcp [--root DIR ...]`: serve the Model Context Protocol on stdio for coding agents.

Needs the optional SDK (``pip install 'pytest-faildiag[mcp]'``); without it, one line says so and the exit
status is 2. The server reads and writes only under its roots (default: the folder it was started in).
See ``docs/agents.md``.
"""

from __future__ import annotations

import argparse
import sys

INSTALL_HINT = "pip install 'pytest-faildiag[mcp]'"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the server may read and write (repeatable; default: the current folder)",
    )


def run(args: argparse.Namespace) -> int:
    from ..agents.roots import PathOutsideRoots, Roots
    from ..cli import UsageError

    try:
        roots = Roots.of(args.root or ["."])
    except PathOutsideRoots as exc:
        raise UsageError(f"--root {exc}") from None
    try:
        import mcp.server.stdio  # noqa: F401  (the optional SDK)
    except ImportError:
        print(f"faildiag mcp: the MCP server needs the optional `mcp` package: {INSTALL_HINT}", file=sys.stderr)
        return 2
    from ..agents.mcp_server import serve

    return serve(roots)
