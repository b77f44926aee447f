"""A conftest that fails to import stops pytest before any session (exit status 4, no test, no report hook):
``pytest --faildiag`` still says why, from the import error's own traceback, on stderr.

The diagnosis is what ``faildiag diagnose`` gives for the same text (a missing module, a name a release
removed, a syntax error in the project's own file); nothing is written and the exception goes on to pytest
unchanged, so its message and exit status stay what they were.
"""

from __future__ import annotations

import sys
import traceback

import pytest


def report_conftest_failure(early_config: pytest.Config, exc: BaseException) -> None:
    """Print the diagnosis of a conftest's import error (the plugin calls it when ``--faildiag`` is on). Never
    raises."""
    try:
        if type(exc).__name__ != "ConftestImportFailure":
            return
        cause = getattr(exc, "cause", None) or exc.__cause__ or exc
        text = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
        from ..engine import diagnose

        diag = diagnose(texts={"conftest-import.txt": text}, cwd=str(early_config.invocation_params.dir))
        top = diag.root_causes[0] if diag.root_causes else None
        lines = [f"faildiag: {getattr(exc, 'path', 'a conftest')} did not import: {diag.summary}"]
        if top is not None and top.fix_hints:
            lines.append(f"faildiag:   try: {top.fix_hints[0]}")
        from ..redact import redact_text

        sys.stderr.write(redact_text("\n".join(lines)) + "\n")
    except Exception as err:  # the plugin's own failure must not hide pytest's report of the conftest
        sys.stderr.write(f"faildiag: the conftest import error was not diagnosed ({type(err).__name__}: {err})\n")
