"""retort plugin: capture the evidence a later ``faildiag retort diagnose`` needs, while the run happens.

retort discovers plugins with pluggy (project name ``retort``) from the entry-point group ``retort`` (its
``get_plugin_manager()`` loads that group, whatever its docstring says), so pyproject registers this module
there. It implements
``retort_register_scorers`` and returns one scorer, ``faildiag_capture``. retort calls every scorer listed in
the workspace's ``responses:`` for each recorded run, on the live playpen, *before* the workspace is archived
— the last moment the agent's stdout/stderr, exit code and kill reason are all in hand. Enable it with one line
in ``workspace.yaml``::

    responses:
      - faildiag_capture

Contract with retort (why each rule exists):

* returns ``None`` — "no result for this run" — so the metric is omitted, never recorded as 0, and can never
  trip the ``test_coverage == 0`` gate or move an average;
* never raises — a scorer that raises is recorded as 0.0 by retort's collector;
* writes only dot-named files in ``<workspace>/.faildiag/`` — retort's harness check counts any file whose own
  name does not start with a dot as agent output, whatever folder it is in;
* never overwrites a capture with a re-score — ``retort rescore`` re-runs scorers on the archive with a synthetic
  exit code 0 and empty output, which would erase the real evidence; a re-score appends to ``.rescores.jsonl``
  (or, with no capture yet, writes one marked ``"origin": "rescore"``);
* a retry's workspace is seeded with the earlier attempt's folder, ``.faildiag/`` included: a capture from
  another workspace is kept as ``.capture.prior-N.json`` and the retry gets its own.

What it cannot see: runs stopped by a usage limit (retort raises before scoring) and experiments aborted by a
harness check or Ctrl-C; see docs/retort.md for the workaround.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import pluggy

from pytest_faildiag.fsio import atomic_write

hookimpl = pluggy.HookimplMarker("retort")

CAPTURE_DIR = ".faildiag"
CAPTURE_FILE = ".capture.json"  # dot-named too: retort's harness check tests the FILE name
RESCORE_FILE = ".rescores.jsonl"
SCHEMA = "faildiag.retort-capture/1"
_TAIL_CHARS = 20_000
_MAX_FILES = 2_000
_SKIP_DIRS = {
    "node_modules",
    "target",
    "build",
    "dist",
    "venv",
    ".venv",
    ".git",
    "__pycache__",
    "_build",
    "deps",
    ".build",
    ".gradle",
    CAPTURE_DIR,
}


def _tail(text: Any, limit: int = _TAIL_CHARS) -> str:
    s = text if isinstance(text, str) else ("" if text is None else str(text))
    return s[-limit:]


def _env_lock() -> dict[str, Any]:
    """The project's environment lock when that module is available, else a minimal stand-in."""
    try:
        from pytest_faildiag.capture.envlock import build_lock  # another module; may not exist yet

        lock = build_lock()
        if isinstance(lock, dict):
            return lock
        to_dict = getattr(lock, "to_dict", None)
        if callable(to_dict):
            return to_dict()
    except Exception:
        pass
    return {
        "schema": "faildiag.minimal-lock/1",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cwd_free_bytes": _free_bytes(),
    }


def _free_bytes() -> int | None:
    try:
        st = os.statvfs(os.getcwd())
        return st.f_bavail * st.f_frsize
    except (OSError, AttributeError):
        return None


def _file_list(root: Path) -> dict[str, Any]:
    files: list[dict[str, Any]] = []
    truncated = False
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            try:
                size = p.stat().st_size
            except OSError:
                size = None
            files.append({"path": p.relative_to(root).as_posix(), "size": size})
            if len(files) >= _MAX_FILES:
                truncated = True
                break
        if truncated:
            break
    return {"files": files, "truncated": truncated}


def build_capture(artifacts: Any, stack: Any) -> dict[str, Any]:
    """The capture record for one run (not yet redacted); reads attributes defensively."""
    meta = getattr(artifacts, "metadata", None)
    meta = dict(meta) if isinstance(meta, dict) else {}
    out_dir = getattr(artifacts, "output_dir", None)
    stack_d = {k: getattr(stack, k, None) for k in ("language", "agent", "framework")}
    extra = getattr(stack, "extra", None)
    if isinstance(extra, dict):
        stack_d["extra"] = {str(k): str(v) for k, v in extra.items()}
    return {
        "schema": SCHEMA,
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "stack": stack_d,
        "exit_code": getattr(artifacts, "exit_code", None),
        "kill_reason": meta.get("kill_reason"),
        "usage_limited": meta.get("usage_limited") == "true",
        "duration_seconds": getattr(artifacts, "duration_seconds", None),
        "token_count": getattr(artifacts, "token_count", None),
        "metadata": meta,
        "stdout_tail": _tail(getattr(artifacts, "stdout", "")),
        "stderr_tail": _tail(getattr(artifacts, "stderr", "")),
        "env_lock": _env_lock(),
        "workspace": _file_list(Path(out_dir)) if out_dir else {"files": [], "truncated": False},
    }


def redact_long(text: str, piece: int = 1_000) -> str:
    """Redact line by line, long lines in pieces: one regex pass over a 20 kB single-line agent stream is
    quadratic in the redactor and took tens of seconds; per-piece it is linear (a secret split across a piece
    boundary of an over-long line is the accepted cost)."""
    from pytest_faildiag.redact import MASK, PRIVATE_KEY_BLOCK, redact_text

    # a PEM block spans lines: masked whole first, or its body lines would pass the per-line redaction
    text = PRIVATE_KEY_BLOCK.sub(MASK, text)
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= piece:
            out.append(redact_text(line))
        else:
            out.append("".join(redact_text(line[i : i + piece]) for i in range(0, len(line), piece)))
    return "\n".join(out)


def _atomic_write(path: Path, text: str) -> None:
    atomic_write(path, text)


def _workspace_id(out_dir: Any) -> str:
    """A stable id of the live workspace (a digest, so no machine path lands in the archive)."""
    return hashlib.sha256(str(out_dir).encode("utf-8", "replace")).hexdigest()[:16]


def is_rescore(artifacts: Any) -> bool:
    """retort's ``rescore``/``recover`` call scorers on the ARCHIVED folder with a synthetic exit code 0, empty
    stdout/stderr and no runner metadata; a live run always carries the runner's metadata or some output."""
    meta = getattr(artifacts, "metadata", None)
    return (
        getattr(artifacts, "exit_code", None) == 0
        and not getattr(artifacts, "stdout", "")
        and not getattr(artifacts, "stderr", "")
        and not meta
    )


def _prior_name(folder: Path) -> str:
    n = 1
    while (folder / f".capture.prior-{n}.json").exists():
        n += 1
    return f".capture.prior-{n}.json"


def capture(artifacts: Any, stack: Any) -> Path | None:
    """Write ``<workspace>/.faildiag/.capture.json`` for this attempt; returns its path (None: no workspace).

    * a re-score (see :func:`is_rescore`) never replaces a capture: it is appended to ``.rescores.jsonl``; with
      no capture yet, it writes one marked ``"origin": "rescore"`` (its exit code and output are synthetic);
    * a capture that belongs to another workspace was copied in — retort seeds a retry or second chance with
      the earlier attempt's folder, dot-folders included — so it is kept as ``.capture.prior-N.json`` and this
      attempt gets its own capture;
    * the same live workspace scored twice keeps the first capture (first writer wins, even if concurrent).

    May raise; the scorer wraps it.
    """
    from pytest_faildiag.redact import redact_obj

    out_dir = getattr(artifacts, "output_dir", None)
    if not out_dir:
        return None
    root = Path(out_dir)
    if not root.is_dir():
        return None
    folder = root / CAPTURE_DIR
    folder.mkdir(exist_ok=True)
    target = folder / CAPTURE_FILE
    rescore = is_rescore(artifacts)
    prior: list[str] = []
    if target.exists():
        if rescore:
            note = {
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "origin": "rescore",
                "exit_code": getattr(artifacts, "exit_code", None),
                "note": "re-score; the original capture was kept",
            }
            with open(folder / RESCORE_FILE, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(note) + "\n")
            return target
        try:
            old = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        if (
            isinstance(old, dict)
            and old.get("workspace_id") == _workspace_id(out_dir)
            and old.get("origin") != "rescore"
        ):
            return target  # this attempt was already captured
        name = _prior_name(folder)
        os.replace(target, folder / name)
        prior = [name, *(old.get("prior_captures") or [] if isinstance(old, dict) else [])]
    raw = build_capture(artifacts, stack)
    raw["origin"] = "rescore" if rescore else "run"
    raw["workspace_id"] = _workspace_id(out_dir)
    if rescore:
        raw["note"] = (
            "written by a re-score (retort rescore/recover) of the archived folder: exit code and output "
            "are synthetic, not the run's"
        )
    if prior:
        raw["prior_captures"] = prior
    tails = {k: redact_long(raw.pop(k)) for k in ("stdout_tail", "stderr_tail")}
    data = redact_obj(raw)
    data.update(tails)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # first writer wins, even if concurrent
    except FileExistsError:
        return target
    os.close(fd)
    _atomic_write(target, json.dumps(data, indent=2, default=str) + "\n")
    return target


class FaildiagCaptureScorer:
    """A retort Scorer that records evidence and returns no score."""

    @property
    def name(self) -> str:
        return "faildiag_capture"

    def score(self, artifacts: Any, stack: Any) -> None:
        try:
            capture(artifacts, stack)
        except Exception as exc:  # never let capture fail a run: retort would record a raising scorer as 0.0
            try:
                from pytest_faildiag.sanitize import display  # the error may quote the agent's files or output

                print(
                    display(f"faildiag: retort capture skipped: {type(exc).__name__}: {exc}", one_line=True),
                    file=sys.stderr,
                )
            except Exception:
                pass
        return None


@hookimpl
def retort_register_scorers() -> list[FaildiagCaptureScorer]:
    """retort hook: contribute the capture scorer (listed in ``responses:`` to run)."""
    return [FaildiagCaptureScorer()]
