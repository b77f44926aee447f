"""`faildiag` command line: one sub-command per module under ``commands/``.

Each command module exposes ``configure(parser)`` (cheap: argparse only) and ``run(args) -> int``.
Heavy imports happen inside ``run`` so ``faildiag --help`` and ``faildiag diagnose`` stay fast.
Any error a command does not handle becomes one line on stderr and exit 2, never a traceback; so does a
command whose module cannot be imported (it names the module and the error, rather than vanishing from
the parser and reading as "invalid choice").
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

COMMANDS: dict[str, tuple[str, str]] = {
    "diagnose": ("pytest_faildiag.commands.diagnose", "diagnose logs, folders or stdin"),
    "run": ("pytest_faildiag.commands.run", "run a command, diagnose it if it fails or hangs"),
    "lock": ("pytest_faildiag.commands.lock", "write or diff the environment lock"),
    "fix": ("pytest_faildiag.commands.fix", "propose, apply and verify one fix"),
    "report": ("pytest_faildiag.commands.report", "re-render a snapshot folder"),
    "recover": ("pytest_faildiag.commands.recover", "diagnose the test a killed pytest session was running"),
    "retort": ("pytest_faildiag.commands.retort", "diagnose retort experiment runs"),
    "card": ("pytest_faildiag.commands.card", "draft a known-issue card from a snapshot, or lint a factory (--check)"),
    "job": ("pytest_faildiag.commands.job", "per-node table of a multi-node job folder (--job-dir)"),
    "mcp": ("pytest_faildiag.commands.mcp", "serve the tools to coding agents over MCP (stdio; extra `mcp`)"),
    "skill": ("pytest_faildiag.commands.skill", "print the agent skill (SKILL.md)"),
}


class UsageError(Exception):
    """Bad usage or unreadable input: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print usage + exit 2; keep it to one line
        raise UsageError(message)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI; with ``only``, just that command's module is imported (the others are listed by
    name), which keeps `faildiag run -- CMD` from paying for every command's imports."""
    parser = _Parser(prog="faildiag", description="Evidence-backed diagnoses of failed or hung runs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text, description=help_text)
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # a broken install or module (ImportError, SyntaxError...): listed, says why
            p = sub.add_parser(
                name,
                help=f"{help_text} (unavailable: cannot import {module_name})",
                description=help_text,
                add_help=False,
            )
            p.set_defaults(
                _broken=f"command {name!r} is unavailable: cannot import {module_name}: {type(exc).__name__}: {exc}"
            )
            continue
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.configure(p)
        p.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        only = argv[0] if argv and argv[0] in COMMANDS else None
        parser = build_parser(only)
        args, unknown = parser.parse_known_args(argv)  # parse_args, with the broken command's check first
        if getattr(args, "_broken", None):
            raise UsageError(args._broken)
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        if not getattr(args, "_module", None):
            build_parser().print_help(sys.stderr)
            return 2
        return int(args._module.run(args) or 0)
    except UsageError as exc:
        print(f"faildiag: {_shown(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: a command's unhandled error is one line, never a traceback
        print(f"faildiag: internal error: {type(exc).__name__}: {_shown(exc)}", file=sys.stderr)
        return 2


def _shown(exc: BaseException) -> str:
    """An error message on one line, redacted, control characters shown: it often quotes a file name or a
    field of the input, and the input may be hostile."""
    from .sanitize import display

    return display(exc, one_line=True)


if __name__ == "__main__":
    # run the imported module's main, not this __main__ copy: the commands raise pytest_faildiag.cli.UsageError,
    # a different class from __main__.UsageError, which would print as an "internal error"
    from pytest_faildiag.cli import main as _main

    sys.exit(_main())
