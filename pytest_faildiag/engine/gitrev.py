"""The git revision a folder is at, and the record of the last green run's (``last-green.json``).

Why a module of its own: every passing ``pytest --faildiag`` session records its revision at the end, and
under pytest each module of ours is loaded through the assertion-rewriting import hook at a cost that grows
with its size, so this small part of ``changes`` is what a green session loads. Standard library only;
no pytest import.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from ..fsio import atomic_write
from ..store import LAST_GREEN_GIT

GIT_TIMEOUT = 10.0


def _git(args: list[str], cwd: Path, timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess[str] | None:
    """One bounded git call; ``None`` when git is missing or too slow (no git is no evidence, not an error)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def head_revision(path: Path) -> str | None:
    r = _git(["rev-parse", "--verify", "--quiet", "HEAD"], path)
    return r.stdout.strip() if r is not None and r.returncode == 0 and r.stdout.strip() else None


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# git reads these to find or shape the repository: with any of them set, only git itself answers
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")


def head_revision_fast(path: Path) -> str | None:
    """``head_revision`` read from the repository's files (``.git/HEAD``, the branch's ref file or
    ``packed-refs``) instead of a ``git`` process: a green ``pytest --faildiag`` session records its
    revision at every end, and starting git cost it more than the rest of its session end. Anything
    out of the ordinary (git environment variables, a mount point crossed on the way up, a ref in
    neither place: a reftable repository, a branch without commits) is left to ``git rev-parse``."""
    if any(os.environ.get(k) for k in _GIT_ENV):
        return head_revision(path)
    try:
        revision = _read_head(Path(path).absolute())
    except (OSError, ValueError, UnicodeDecodeError):
        revision = None
    return revision if revision is not None else head_revision(path)


def _read_head(start: Path) -> str | None:
    """HEAD's commit from the files of the repository ``start`` is in, or None when unsure."""
    dev = start.stat().st_dev
    for folder in (start, *start.parents):
        if folder.stat().st_dev != dev:
            return None  # git stops at a file-system boundary: let it decide
        dot = folder / ".git"
        if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
            line = dot.read_text(encoding="utf-8").strip()
            if not line.startswith("gitdir: "):
                return None
            gitdir = (folder / line[len("gitdir: ") :]).resolve()
        elif dot.is_dir():
            gitdir = dot
        else:
            continue
        return _resolve_head(gitdir)
    return None


def _resolve_head(gitdir: Path) -> str | None:
    head = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
    if _SHA.fullmatch(head):
        return head  # a detached HEAD
    if not head.startswith("ref: refs/"):
        return None
    ref = head[len("ref: ") :]
    common = gitdir
    if (gitdir / "commondir").is_file():  # a linked worktree keeps its branches in the main repository
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in dict.fromkeys((gitdir, common)):
        ref_file = base / ref
        if ref_file.is_file():
            value = ref_file.read_text(encoding="utf-8").strip()
            return value if _SHA.fullmatch(value) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            value, _, name = line.partition(" ")
            if name == ref and _SHA.fullmatch(value):
                return value
    return None


def record_green(out_dir: Path, root: Path) -> str | None:
    """After a green session: keep the git revision it ran at, the baseline of "changed since". Read from
    the repository's files (``head_revision_fast``); nothing is written outside a git repository."""
    revision = head_revision_fast(root)
    if revision is None:
        return None
    atomic_write(Path(out_dir) / LAST_GREEN_GIT, json.dumps({"revision": revision}) + "\n")
    return revision
