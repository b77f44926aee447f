"""Artifacts found next to logs: torchelastic error files, NCCL flight-recorder dumps, JUnit files,
environment locks. Each reader returns plain data or None; a malformed artifact is noted, never fatal.

Flight-recorder dumps are pickles written by PyTorch. Unpickling an untrusted file can run code, so the
reader allows no classes at all: the dump format is made of dicts, lists, tuples, strings and numbers.
"""

from __future__ import annotations

import json
import pickle
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

MAX_ARTIFACT = 64 * 1024 * 1024


class _NoClasses(pickle.Unpickler):
    def find_class(self, module: str, name: str):  # noqa: D401 - pickle API
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dump")


def read_flight_recorder(path: Path) -> dict[str, Any] | None:
    """Summarise a flight-recorder dump: per process group, the first collective that did not complete."""
    try:
        if path.stat().st_size > MAX_ARTIFACT:
            return None
        with open(path, "rb") as f:
            data = _NoClasses(f).load()
    except Exception:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return None
    entries = [e for e in data["entries"] if isinstance(e, dict)]
    rank = data.get("rank")
    if rank is None:
        digits = "".join(ch for ch in path.stem.split("_")[-1] if ch.isdigit())
        rank = int(digits) if digits else None
    completed = [e.get("collective_seq_id") for e in entries if e.get("state") == "completed"]
    first = next((e for e in entries if e.get("state") in ("scheduled", "started")), None)
    summary: dict[str, Any] = {
        "source": path.name, "rank": rank, "version": data.get("version"),
        "comm_lib_version": data.get("comm_lib_version"), "entries": len(entries),
        "last_completed": max([c for c in completed if isinstance(c, int)], default=None),
        "pg_status": data.get("pg_status"),
    }
    if first:
        frames = first.get("frames") or []
        user = next((fr for fr in reversed(frames) if isinstance(fr, dict) and "site-packages" not in str(fr.get("filename", ""))), None)
        summary["first_incomplete"] = {
            "op": str(first.get("profiling_name", "?")), "seq": first.get("collective_seq_id"), "state": first.get("state"),
            "timeout_ms": first.get("timeout_ms"), "sizes": first.get("input_sizes"),
            "where": f"{user.get('filename')}:{user.get('line')}" if user else None,
        }
    return summary


def read_elastic_error(path: Path) -> str | None:
    """torchelastic error.json → the text of the failure (message + its Python call stack)."""
    try:
        if path.stat().st_size > MAX_ARTIFACT:
            return None
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser goes
        return None
    msg = data.get("message") if isinstance(data, dict) else None
    if isinstance(msg, dict):
        extra = msg.get("extraInfo") or {}
        stack = extra.get("py_callstack") if isinstance(extra, dict) else None
        text = stack if isinstance(stack, str) and stack.strip() else str(msg.get("message", ""))
        ts = extra.get("timestamp") if isinstance(extra, dict) else None
        return (f"[error.json timestamp {ts}]\n" if ts else "") + text
    if isinstance(msg, str):
        return msg
    return None


def read_junit(path: Path) -> str | None:
    """JUnit XML → a pytest-like text of its failures, so the same rules read it."""
    try:
        if path.stat().st_size > MAX_ARTIFACT:
            return None
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    lines = []
    for case in root.iter("testcase"):
        for tag in ("failure", "error"):
            for el in case.findall(tag):
                name = f"{case.get('classname', '')}::{case.get('name', '')}"
                lines.append(f"FAILED {name} - {el.get('message', '')}")
                lines.extend((el.text or "").splitlines())
    return "\n".join(lines) if lines else None


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        if path.stat().st_size > MAX_ARTIFACT:
            return None
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than the parser goes
        return None
    return data if isinstance(data, dict) else None


def is_flight_recorder(path: Path) -> bool:
    return path.suffix == ".pkl" or path.name.startswith(("nccl_trace_rank_", "flight_recorder"))
