"""`faildiag skill`: print the agent skill (``SKILL.md``, front matter with ``name`` and ``description``) that
coding agents load, e.g. ``faildiag skill > .claude/skills/faildiag/SKILL.md``."""

from __future__ import annotations

import argparse
import sys


def configure(p: argparse.ArgumentParser) -> None:
    """No options: the skill is one file."""


def run(args: argparse.Namespace) -> int:
    from ..agents import skill_text

    sys.stdout.write(skill_text())
    return 0
