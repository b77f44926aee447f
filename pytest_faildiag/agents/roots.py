"""The folders an agent-facing server may read and write: every path an agent names is resolved (symbolic
links followed, ``..`` collapsed) and kept only when the result lies inside one of them.

Why resolve first: an agent's arguments come from a model that reads logs, and a log can ask for anything
(``../../.ssh/id_rsa``, a symbolic link planted inside the project that points at ``/etc``). Comparing the
text of a path says nothing about where it leads; comparing the resolved path with the resolved roots does.
A folder handed to the engine is also checked inside (``check_tree``): the engine's folder walk reads the
files a symbolic link names, so a folder holding a link out of the roots is refused as a whole rather than
read in part. What is left is the race of a link swapped between the check and the read; the server
passes the resolved path on, so only a link inside that path could still move.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..sanitize import display

MAX_TREE_ENTRIES = 20_000


class PathOutsideRoots(ValueError):
    """A path the server will not touch; the message is one line for the agent."""


def _shown(raw: object) -> str:
    return display(raw, one_line=True, limit=300)


@dataclass(frozen=True)
class Roots:
    """The resolved roots; the first one is where relative paths start."""

    folders: tuple[Path, ...]

    @classmethod
    def of(cls, folders: Iterable[str | os.PathLike[str]]) -> Roots:
        """Resolve ``folders``. Raises PathOutsideRoots (one line) for one that is not an existing folder, and
        for none at all; the file-system root is refused (it would confine nothing)."""
        resolved: list[Path] = []
        for f in folders:
            p = Path(os.path.realpath(f))
            if not p.is_dir():
                raise PathOutsideRoots(f"{_shown(f)}: not a folder")
            if p == Path(p.anchor):
                raise PathOutsideRoots(f"{_shown(f)}: the file-system root cannot be a root (it confines nothing)")
            if p not in resolved:
                resolved.append(p)
        if not resolved:
            raise PathOutsideRoots("no root folder given")
        return cls(tuple(resolved))

    @property
    def first(self) -> Path:
        return self.folders[0]

    def contains(self, path: Path) -> bool:
        """True when the (already resolved) ``path`` is a root or lies inside one."""
        return any(path == r or path.is_relative_to(r) for r in self.folders)

    def resolve(self, raw: object, *, what: str = "path", must_exist: bool = True) -> Path:
        """``raw`` (relative names start at the first root) resolved, when it lies inside the roots. Raises
        PathOutsideRoots with the reason: not a string, empty, outside the roots, or (``must_exist``) missing."""
        if not isinstance(raw, str) or not raw.strip():
            raise PathOutsideRoots(f"{what}: give a path as a non-empty string")
        if "\x00" in raw:
            raise PathOutsideRoots(f"{what} {_shown(raw)}: a path cannot hold a NUL character")
        candidate = Path(raw) if os.path.isabs(raw) else self.first / raw
        resolved = Path(os.path.realpath(candidate))
        if not self.contains(resolved):
            raise PathOutsideRoots(f"{what} {_shown(raw)}: outside the server's roots ({self.describe()})")
        if must_exist and not os.path.exists(resolved):
            raise PathOutsideRoots(f"{what} {_shown(raw)}: no such file or folder")
        return resolved

    def resolve_all(self, raws: Sequence[object], *, what: str = "path") -> list[Path]:
        return [self.resolve(r, what=what) for r in raws]

    def check_tree(self, folder: Path, *, what: str = "folder") -> None:
        """Refuse ``folder`` when a symbolic link inside it (up to MAX_TREE_ENTRIES entries) leads out of the
        roots, or when it holds more entries than can be checked. Links to folders are not descended (the
        engine's walk does not follow them either), but where they lead is checked."""
        if not folder.is_dir():
            return
        count = 0
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            for name in (*dirnames, *filenames):
                count += 1
                if count > MAX_TREE_ENTRIES:
                    raise PathOutsideRoots(
                        f"{what} {_shown(folder)}: more than {MAX_TREE_ENTRIES} entries to check; "
                        "name the log files or a smaller folder"
                    )
                entry = os.path.join(dirpath, name)
                if os.path.islink(entry) and not self.contains(Path(os.path.realpath(entry))):
                    rel = os.path.relpath(entry, folder)
                    raise PathOutsideRoots(
                        f"{what} {_shown(folder)}: holds a symbolic link out of the server's roots "
                        f"({_shown(rel)}); name the files you mean"
                    )

    def relative(self, path: Path) -> str:
        """``path`` as the agent should name it: relative to the first root that holds it."""
        for r in self.folders:
            if path == r or path.is_relative_to(r):
                rel = path.relative_to(r)
                return str(rel) if r == self.first else str(r / rel)
        return str(path)

    def describe(self) -> str:
        return ", ".join(_shown(r) for r in self.folders)
