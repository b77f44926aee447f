"""faildiag for coding agents: the engine as tools (``tools``), served over the Model Context Protocol
(``mcp_server``, needs the optional ``mcp`` extra), confined to the server's roots (``roots``), answers
kept within an agent's context (``budget``), and the agent skill (``SKILL.md``, printed by ``faildiag skill``).

Nothing here imports the MCP SDK at import time: the package and every other command work without it.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["skill_text"]


def skill_text() -> str:
    """The agent skill shipped with the package (``SKILL.md``: front matter with ``name`` and ``description``)."""
    return resources.files(__name__).joinpath("SKILL.md").read_text(encoding="utf-8")
