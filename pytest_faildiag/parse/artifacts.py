"""Artifacts found next to logs: torchelastic error files, NCCL flight-recorder dumps, JUnit files,
environment locks. Each reader returns plain data or None; a malformed artifact is noted, never fatal.

Flight-recorder dumps are pickles written by PyTorch. Unpickling an untrusted file can run code, so the
reader allows no classes at all: the dump format is made of dicts, lists, tuples, strings and numbers.
A pickle can also be small and still cost gigabytes: each opcode may build an object (one byte per empty
dict), and memo references share one object many times over (``a = [a, a]`` twenty levels deep is a few
hundred bytes that print as a million lists). So the opcodes are counted before anything is built, and
only a bounded, plain copy of the fields the engine uses leaves this module.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, NoReturn

from ..fsio import MAX_JSON_BYTES, ReadRefused, load_json, loads_json, read_capped

MAX_ARTIFACT = 64 * 1024 * 1024  # a flight-recorder dump or a JUnit file; JSON has its own, smaller cap
MAX_PICKLE_OPS = 2_000_000  # a default 2000-entry dump is ~0.9M opcodes; 2M empty dicts cost ~170 MB
MAX_FIELD_NODES = 2_000  # values copied out of a dump into the report, per field
MAX_FIELD_DEPTH = 8
MAX_FIELD_CHARS = 1_000

# Opcodes that import or call: refused before loading (``find_class`` refuses them again while loading).
_CODE_OPS = frozenset(
    {
        "GLOBAL",
        "STACK_GLOBAL",
        "REDUCE",
        "INST",
        "OBJ",
        "NEWOBJ",
        "NEWOBJ_EX",
        "BUILD",
        "EXT1",
        "EXT2",
        "EXT4",
        "PERSID",
        "BINPERSID",
    }
)


# pickle, pickletools and xml.etree are imported where a dump or a JUnit file is read: every ``faildiag
# diagnose`` imports this module for ``is_flight_recorder``, and most are given neither.


def check_pickle(data: bytes, max_ops: int = MAX_PICKLE_OPS) -> None:
    """Walk the opcodes without building anything: UnpicklingError for more than ``max_ops`` of them
    (the object budget) or for any opcode that imports or calls."""
    import pickle
    import pickletools

    for n, (op, _arg, _pos) in enumerate(pickletools.genops(io.BytesIO(data)), 1):
        if n > max_ops:
            raise pickle.UnpicklingError(f"more than {max_ops} pickle opcodes")
        if op.name in _CODE_OPS:
            raise pickle.UnpicklingError(f"refusing the {op.name} opcode in a dump")


def load_pickle(data: bytes, max_ops: int = MAX_PICKLE_OPS) -> Any:
    """Unpickle plain data only, within the object budget. Raises UnpicklingError (or ValueError, EOFError
    for a cut file) for anything else."""
    import pickle

    check_pickle(data, max_ops)

    class _NoClasses(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> NoReturn:  # noqa: D401 - pickle API
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dump")

        def persistent_load(self, pid: Any) -> Any:
            raise pickle.UnpicklingError("refusing a persistent id in a dump")

    return _NoClasses(io.BytesIO(data)).load()


def plain(
    value: Any, *, max_nodes: int = MAX_FIELD_NODES, max_depth: int = MAX_FIELD_DEPTH, max_chars: int = MAX_FIELD_CHARS
) -> Any:
    """A JSON-safe copy of unpickled data, at most ``max_nodes`` values however often a shared object
    repeats (each repeat counts: the copy is what gets serialised), ``max_depth`` levels deep, strings cut
    to ``max_chars``, cycles and anything cut marked ``"…"``. Iterative, so no depth can recurse too far."""
    budget = [max_nodes]

    def scalar(v: Any) -> Any:
        if v is None or isinstance(v, bool | int | float):
            return v if not isinstance(v, int) or abs(v) < 1 << 63 else str(v)[:max_chars]
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        return v[:max_chars] if isinstance(v, str) else f"<{type(v).__name__}>"

    def make(
        v: Any, depth: int, ancestors: frozenset[int]
    ) -> tuple[Any, list[tuple[Any, Any, Any, int, frozenset[int]]]]:
        budget[0] -= 1
        if not isinstance(v, dict | list | tuple | set | frozenset):
            return scalar(v), []
        if budget[0] < 0 or depth >= max_depth or id(v) in ancestors:
            return "…", []
        inner = ancestors | {id(v)}
        if isinstance(v, dict):
            out_d: dict[str, Any] = {}
            return out_d, [(out_d, str(scalar(k)), c, depth + 1, inner) for k, c in v.items()]
        out_l: list[Any] = []
        return out_l, [(out_l, None, c, depth + 1, inner) for c in v]

    root, todo = make(value, 0, frozenset())
    todo.reverse()
    while todo:
        parent, key, child, depth, ancestors = todo.pop()
        if budget[0] <= 0:
            if isinstance(parent, list) and (not parent or parent[-1] != "…"):
                parent.append("…")
            continue
        node, more = make(child, depth, ancestors)
        if isinstance(parent, dict):
            parent[key] = node
        else:
            parent.append(node)
        todo.extend(reversed(more))
    return root


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and abs(v) < 1 << 63 else None


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v[:MAX_FIELD_CHARS] if isinstance(v, str) else str(plain(v, max_nodes=50))[:MAX_FIELD_CHARS]


def read_flight_recorder(path: Path) -> dict[str, Any] | None:
    """Summarise a flight-recorder dump: per process group, the first collective that did not complete.
    None for anything that is not a plain, bounded dump (see the module docstring)."""
    try:
        data = load_pickle(read_capped(path, MAX_ARTIFACT))
    except Exception:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return None
    entries = [e for e in data["entries"] if isinstance(e, dict)]
    rank = _int(data.get("rank"))
    if rank is None:
        digits = "".join(ch for ch in path.stem.split("_")[-1] if ch.isdigit())[:18]
        rank = int(digits) if digits else None
    completed = [_int(e.get("collective_seq_id")) for e in entries if e.get("state") == "completed"]
    first = next((e for e in entries if e.get("state") in ("scheduled", "started")), None)
    summary: dict[str, Any] = {
        "source": path.name,
        "rank": rank,
        "version": _text(data.get("version")),
        "comm_lib_version": _text(data.get("comm_lib_version")),
        "entries": len(entries),
        "last_completed": max([c for c in completed if c is not None], default=None),
        "pg_status": plain(data.get("pg_status")),
    }
    if first:
        raw_frames = first.get("frames")
        frames: list[Any] = raw_frames if isinstance(raw_frames, list) else []
        user = next(
            (
                fr
                for fr in reversed(frames)
                if isinstance(fr, dict) and "site-packages" not in (_text(fr.get("filename")) or "")
            ),
            None,
        )
        summary["first_incomplete"] = {
            "op": _text(first.get("profiling_name", "?")),
            "seq": _int(first.get("collective_seq_id")),
            "state": str(first.get("state")),
            "timeout_ms": plain(first.get("timeout_ms")),
            "sizes": plain(first.get("input_sizes")),
            "where": f"{_text(user.get('filename'))}:{_text(user.get('line'))}" if user else None,
        }
    return summary


def read_elastic_error(path: Path) -> str | None:
    """torchelastic error.json → the text of the failure (message + its Python call stack)."""
    data = read_json(path, dicts_only=False)
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
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(read_capped(path, MAX_ARTIFACT))
    except (OSError, ET.ParseError, ValueError):
        return None
    lines = []
    for case in root.iter("testcase"):
        for tag in ("failure", "error"):
            for el in case.findall(tag):
                name = f"{case.get('classname', '')}::{case.get('name', '')}"
                lines.append(f"FAILED {name} - {el.get('message', '')}")
                lines.extend((el.text or "").splitlines())
    return "\n".join(lines) if lines else None


def read_notebook(path: Path) -> str | None:
    """A Jupyter notebook (nbformat 4, what Jupyter, JupyterLab, VS Code and Colab save) -> the text its code cells
    printed, in order: stream output (stdout and stderr, where a ``!python train.py`` cell's whole run lands) and
    each error output's traceback (the kernel's, ANSI colours and all: the scanner cleans them). Rich results
    (figures, tables) say nothing about a failure and are left out. "" for a notebook saved without output, None
    for a file that is not a readable notebook."""
    try:
        nb = loads_json(read_capped(path, MAX_ARTIFACT))
    except (OSError, ValueError):
        return None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return None
    parts: list[str] = []
    for cell in cells:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for out in outputs if isinstance(outputs, list) else []:
            parts.extend(_printed(out))
    return "".join(parts)


def _printed(out: Any) -> list[str]:
    """What one output of a cell printed, as text ending in a newline (nbformat keeps multi-line strings as lists
    of lines)."""
    if not isinstance(out, dict):
        return []
    kind = out.get("output_type")
    if kind == "stream":
        text = _joined(out.get("text"), "")
    elif kind == "error":
        text = _joined(out.get("traceback"), "\n") or f"{out.get('ename', '')}: {out.get('evalue', '')}"
    else:
        return []
    return [text if text.endswith("\n") else text + "\n"] if text else []


def _joined(value: Any, sep: str) -> str:
    if isinstance(value, str):
        return value
    return sep.join(v for v in value if isinstance(v, str)) if isinstance(value, list) else ""


def read_json(path: Path, *, dicts_only: bool = True) -> Any:
    """A JSON artifact within the bounds of ``fsio.load_json`` (size, value count, depth); None when it
    is not readable, not JSON, too large, too deep, or (by default) not an object."""
    data, _problem = load_json_artifact(path)
    return data if isinstance(data, dict) or not dicts_only else None


def load_json_artifact(path: Path) -> tuple[Any, str | None]:
    """(data, None), or (None, why it was not read) in words for a note: malformed, too large, too deep."""
    try:
        return load_json(path, limit=MAX_JSON_BYTES), None
    except ReadRefused as exc:
        return None, str(exc.strerror).removesuffix("; skipped")
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    except ValueError as exc:
        return None, str(exc).removesuffix("; not read") if str(exc).startswith("JSON ") else "malformed JSON"


def is_flight_recorder(path: Path) -> bool:
    return path.suffix == ".pkl" or path.name.startswith(("nccl_trace_rank_", "flight_recorder"))
