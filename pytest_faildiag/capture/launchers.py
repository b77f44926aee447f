"""Evidence launchers leave outside the output folder: torchrun's per-rank logs and error files, ``--collect``
folders, Ascend plog files, NCCL flight-recorder dumps.

Found after the run from the command line and the tail of its output; torchelastic's per-rank files are
copied into ``<out>/ranks`` with each line attributed to its rank, so the snapshot keeps them after the
launcher's folder is cleaned.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from ..fsio import open_output_file, safe_mkdir
from .options import RunOptions

MAX_FILES_WALKED = 5000

_LOG_DIR_ARG = re.compile(r"^--log[-_]dir(?:=(?P<v>.+))?$")
_LOG_DIR_PRINTED = re.compile(rb"log directory set to: (?P<v>\S+)")
_ERROR_FILE_PRINTED = re.compile(rb"error_file\s*:\s*(?P<v>/\S+)")


def gather_paths(opts: RunOptions, since: float, logs: Path) -> list[str]:
    """Evidence the launchers left outside our folder: torchrun's log dir, error files, --collect folders,
    Ascend plog files written during the run, NCCL flight-recorder dumps."""
    found: list[str] = []

    def add(p: str | Path) -> None:
        s = str(p)
        if s not in found and os.path.exists(s):
            found.append(s)

    launcher_dirs: list[str] = []
    args = opts.command
    script = next((i for i, a in enumerate(args) if a.endswith(".py") and i > 0), len(args))
    for i, a in enumerate(args[:script]):  # the launcher's own options, not the training script's
        m = _LOG_DIR_ARG.match(a)
        if m:
            v = m["v"] or (args[i + 1] if i + 1 < len(args) else None)
            if v:
                launcher_dirs.append(v)
    tail = _read_tail(logs / "stderr.log") + _read_tail(logs / "stdout.log")
    for m in _LOG_DIR_PRINTED.finditer(tail):
        launcher_dirs.append(m["v"].decode(errors="replace"))
    ranks_dest = opts.out / "ranks"
    for d in launcher_dirs:
        if not copy_rank_logs(Path(d), ranks_dest):
            add(d)  # not torchelastic's layout: let the engine search it as it is
    if ranks_dest.is_dir():
        add(ranks_dest)
    for m in _ERROR_FILE_PRINTED.finditer(tail):
        add(m["v"].decode(errors="replace"))
    for c in opts.collect:
        add(c)
    elastic = opts.out / "elastic"
    if elastic.is_dir() and any(elastic.iterdir()):
        add(elastic)
    nccl = opts.out / "nccl"
    if nccl.is_dir() and any(nccl.iterdir()):
        add(nccl)
    plog_root = os.environ.get("ASCEND_PROCESS_LOG_PATH") or os.path.expanduser("~/ascend/log")
    for p in _recent_files(Path(plog_root), since, limit=200):
        add(p)
    return found


_ELASTIC_RANK_FILE = re.compile(
    r"attempt_(?P<attempt>\d+)/(?P<rank>\d+)/(?P<name>stdout\.log|stderr\.log|error\.json)$"
)
RANK_LOG_BYTES = 4 << 20


def copy_rank_logs(log_dir: Path, dest: Path) -> bool:
    """Copy torchelastic's per-rank files (``<log-dir>/<run>/attempt_N/<local rank>/stderr.log``) into
    ``dest`` with each line prefixed ``[rankN]:``, so the engine can tell ranks apart and order them,
    and the snapshot keeps them after the launcher's folder is cleaned. Each copy keeps the first and
    last ``RANK_LOG_BYTES``. The rank is the local rank: one node's view. Returns whether any was found."""
    found = False
    walked = 0
    for dirpath, _dirs, files in os.walk(log_dir):
        for fn in files:
            walked += 1
            if walked > MAX_FILES_WALKED:
                return found
            src = Path(dirpath, fn)
            m = _ELASTIC_RANK_FILE.search(src.as_posix())
            if not m:
                continue
            found = True
            stem = f"attempt{m['attempt']}-rank{m['rank']}"
            try:
                safe_mkdir(dest.parent, dest.name)
                if m["name"] == "error.json":
                    with open(src, "rb") as f, open_output_file(dest / f"{stem}.error.json", "wb") as out:
                        shutil.copyfileobj(f, out)
                else:
                    _copy_prefixed(src, dest / f"{stem}.{m['name']}", f"[rank{m['rank']}]:".encode())
            except OSError:
                continue
    return found


def _copy_prefixed(src: Path, dst: Path, prefix: bytes) -> None:
    size = src.stat().st_size
    with open(src, "rb") as f, open_output_file(dst, "wb") as out:
        head = f.read(RANK_LOG_BYTES)
        parts = [head]
        if size > 2 * RANK_LOG_BYTES:
            f.seek(size - RANK_LOG_BYTES)
            parts.append(f"\n[faildiag: {size - 2 * RANK_LOG_BYTES} bytes omitted here]\n".encode())
            parts.append(f.read())
        elif size > RANK_LOG_BYTES:
            parts.append(f.read())
        for line in b"".join(parts).splitlines(keepends=True):
            out.write(line if line.startswith(b"[rank") else prefix + line)  # already attributed


def _read_tail(path: Path, n: int = 256 << 10) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - n))
            head = b""
            if f.tell() > 0:
                with open(path, "rb") as g:
                    head = g.read(n)
            return head + f.read()
    except OSError:
        return b""


def _recent_files(root: Path, since: float, limit: int) -> list[Path]:
    """Log files under ``root`` written during the run (plog folders accumulate old runs' logs)."""
    out: list[Path] = []
    if not root.is_dir():
        return out
    seen = 0
    for dirpath, _dirs, files in os.walk(root):
        for fn in files:
            seen += 1
            if seen > MAX_FILES_WALKED * 4:  # years of old runs' logs: stop looking
                return out
            p = Path(dirpath, fn)
            try:
                if p.suffix == ".log" and p.stat().st_mtime >= since - 1:
                    out.append(p)
            except OSError:
                continue
            if len(out) >= limit:
                return out
    return out
