"""GitLab CI: a Code Quality report of the failures, and the JUnit properties GitLab shows.

The Code Quality report is GitLab's documented subset of the CodeClimate format: a JSON list of
``{"description", "check_name", "fingerprint", "severity", "location": {"path", "lines": {"begin"}}}``.
GitLab shows it in the merge request widget and on the changed lines, so a failure lands next to the
code that raised it. ``fingerprint`` is stable across runs for the same test and cause, which is what
lets GitLab tell a new failure from an old one.

JUnit: the plugin adds ``faildiag.*`` entries to each test's ``user_properties``; pytest's ``--junitxml``
writes them as ``<property>`` elements and GitLab's test report keeps them. ``junit_properties`` is the
single list of those names so the plugin and ``faildiag report`` agree.

Text from the run goes through ``sanitize``: redacted, control characters shown as ``\\x1b``; the
``content.body`` the format defines as Markdown is escaped Markdown.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..sanitize import display, md_text
from ._load import Failure, Session, load, short_title, workspace_relative

SEVERE_TYPES = frozenset({"crash", "hang", "oom"})


def severity(f: Failure) -> str:
    """``critical`` for crashes, hangs and OOMs (they take the job down), ``major`` for other failures."""
    return "critical" if f.type in SEVERE_TYPES else "major"


def fingerprint(f: Failure) -> str:
    """Stable for one test and one cause, different when either changes."""
    return hashlib.sha256(f"{f.nodeid}\0{f.group_key}".encode()).hexdigest()[:32]


def _path_of(f: Failure, workspace: str | None) -> tuple[str, int]:
    rel = workspace_relative(f.file, workspace)
    if rel:
        return rel, f.line if f.line and f.line > 0 else 1
    test_file = f.nodeid.split("::", 1)[0]
    return (workspace_relative(test_file, workspace) or test_file or "unknown"), 1


def codequality(session: Session, workspace: str | None = None) -> list[dict[str, Any]]:
    """The Code Quality issues, ranked like the annotations (biggest cause first)."""
    out: list[dict[str, Any]] = []
    groups = session.groups()  # the grouping the terminal and every other view count (store.group_by_cause)
    for i, group in enumerate(groups, 1):
        for f in group.failures:
            path, line = _path_of(f, workspace)
            desc = f"{f.nodeid}: {short_title(f)}"
            if f.fix_hints:
                desc += f" (fix: {f.fix_hints[0]})"
            out.append(
                {
                    "description": display(desc, one_line=True),
                    "check_name": display(f"faildiag/{f.cause_id or f.category}", one_line=True),
                    "fingerprint": fingerprint(f),
                    "severity": severity(f),
                    "location": {"path": display(path, one_line=True), "lines": {"begin": line}},
                    "categories": ["Bug Risk"],
                    "content": {"body": f"cause {i} of {len(groups)} ({group.count} test(s)): {md_text(f.summary)}"},
                }
            )
    return out


def write_codequality(out_dir: Path, path: Path, *, workspace: str | None = None) -> int:
    """Write the Code Quality JSON for ``out_dir`` to ``path`` (atomically). Returns the number of issues.

    Raises ``ReportInputError`` for a folder that is not faildiag output and OSError when ``path`` is not
    writable; the plugin guards the call."""
    from ..engine.snapshot import atomic_write

    issues = codequality(load(out_dir), workspace or os.environ.get("CI_PROJECT_DIR"))
    atomic_write(Path(path), json.dumps(issues, indent=2, ensure_ascii=False) + "\n")
    return len(issues)


def junit_properties(f: Failure | dict[str, Any]) -> list[tuple[str, str]]:
    """``(name, value)`` pairs for a test's ``user_properties``: the contract's three plus cause and confidence."""
    if isinstance(f, dict):
        get = f.get
    else:

        def get(key: str, default: Any = None) -> Any:
            return getattr(f, key, default)

    props = [
        ("faildiag.category", get("category")),
        ("faildiag.type", get("type")),
        ("faildiag.summary", get("summary")),
        ("faildiag.cause", get("cause_id")),
        ("faildiag.confidence", get("confidence")),
    ]
    return [(k, display(v)) for k, v in props if v not in (None, "")]
