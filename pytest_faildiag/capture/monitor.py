"""The monitor thread: a resource timeline of the process tree and the hang detector.

Every ``interval`` seconds it sums RSS and CPU time over the tree (psutil; Process objects are cached so
CPU times are read, not recomputed), every ``gpu_interval`` seconds asks ``nvidia-smi`` (bounded by a
timeout: a wedged driver makes it hang). Progress is new output, CPU time growing by more than
``CPU_PROGRESS_SHARE`` of a core, or a file growing in a watched folder; none for ``hang_timeout``
seconds calls ``on_hang``. The timeline file and the in-memory series are both decimated as they grow.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from .stacks import rank_of, tree_pids

if TYPE_CHECKING:
    from .options import RunOptions

MAX_TIMELINE = 2000


CPU_PROGRESS_SHARE = 0.05  # CPU growth above 5% of one core between samples counts as progress


MAX_WATCH_FILES = 5000


def gpu_memory_gib(pids: set[int] | None = None, timeout: float = 3.0) -> float | None:
    """GPU memory used by ``pids`` (all processes when None or when per-process figures are hidden)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        if pids:
            cp = subprocess.run(
                [exe, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            used = 0.0
            found = False
            for line in cp.stdout.splitlines():
                parts = [x.strip() for x in line.split(",")]
                if len(parts) == 2 and parts[0].isdigit() and int(parts[0]) in pids:
                    try:
                        used += float(parts[1])
                        found = True
                    except ValueError:
                        pass
            if found:
                return used / 1024
        cp = subprocess.run(
            [exe, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        vals = [float(x) for x in cp.stdout.split() if re.fullmatch(r"[\d.]+", x)]
        return sum(vals) / 1024 if vals else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


class Monitor(threading.Thread):
    """Samples the process tree and decides when the run has stopped making progress."""

    def __init__(
        self, pid: int, opts: RunOptions, output_counter: Callable[[], int], on_hang: Callable[[str], None]
    ) -> None:
        super().__init__(name="faildiag-monitor", daemon=True)
        self.pid = pid
        self.opts = opts
        self.output_counter = output_counter
        self.on_hang = on_hang
        self.stop_event = threading.Event()
        self.samples: list[dict[str, float]] = []
        self.seen_pids: set[int] = {pid}
        self.ranks: dict[int, str] = {}
        self._procs: dict[int, psutil.Process] = {}
        self._file = None
        self._written = 0
        self._count = 0
        self.t0 = time.monotonic()
        self.last_gpu: float | None = None
        self._gpu_at = -1e9
        self.notes: list[str] = []

    def run(self) -> None:
        try:
            from ..fsio import open_output_file  # never through a planted timeline.jsonl symlink

            self._file = open_output_file(self.opts.out / "timeline.jsonl", "w", encoding="utf-8")
        except OSError as exc:
            self.notes.append(f"timeline not written: {exc}")
        try:
            self._loop()
        except Exception as exc:  # the monitor must never take the run down
            self.notes.append(f"monitor stopped: {type(exc).__name__}: {exc}")
        finally:
            if self._file:
                self._file.close()

    def _loop(self) -> None:
        interval = self.opts.interval
        if self.opts.hang_timeout:
            interval = max(0.1, min(interval, self.opts.hang_timeout / 4))
        last_out = self.output_counter()
        last_cpu = None
        last_files = _watch_signature(self.opts.watch, self.opts.out)
        last_progress = time.monotonic()
        last_t = last_progress
        while not self.stop_event.wait(interval):
            now = time.monotonic()
            rss, cpu = self._measure()
            if cpu is None:  # the root is gone; the main thread is about to see it
                continue
            progress: list[str] = []
            out_bytes = self.output_counter()
            if out_bytes != last_out:
                progress.append("output")
                last_out = out_bytes
            cpu_rate = 0.0
            if last_cpu is not None:
                cpu_rate = max(0.0, cpu - last_cpu) / max(1e-6, now - last_t)
                if cpu_rate > CPU_PROGRESS_SHARE:
                    progress.append("cpu")
            last_cpu = cpu
            last_t = now
            if self.opts.watch:
                sig = _watch_signature(self.opts.watch, self.opts.out)
                if sig != last_files:
                    progress.append("files")
                    last_files = sig
            self._record(now, rss, cpu_rate)
            if progress:
                last_progress = now
            elif self.opts.hang_timeout and now - last_progress >= self.opts.hang_timeout:
                what = "output, CPU time" + (" or watched files" if self.opts.watch else "")
                self.on_hang(
                    f"faildiag: hang detected: no {what} progress for {now - last_progress:.0f} s "
                    f"(--hang-timeout {self.opts.hang_timeout:g})"
                )
                return

    def _measure(self) -> tuple[float, float | None]:
        pids = tree_pids(self.pid)
        if not pids:
            return 0.0, None
        rss = 0.0
        cpu = 0.0
        alive: dict[int, psutil.Process] = {}
        for pid in pids:
            try:
                cached = self._procs.get(pid) or psutil.Process(pid)
            except psutil.Error:
                continue
            p = cached
            try:
                with cached.oneshot():
                    mem = cached.memory_info().rss
                    if not mem:  # exiting or a zombie: its memory is already gone, it would read as 0 bytes
                        continue
                    rss += mem
                    t = cached.cpu_times()
                    cpu += t.user + t.system
            except psutil.Error:
                continue
            alive[p.pid] = cached
            if p.pid not in self.seen_pids and len(self.seen_pids) < 10000:
                self.seen_pids.add(p.pid)
                r = rank_of(cached)
                if r is not None:
                    self.ranks[p.pid] = r
        self._procs = alive
        if not alive:  # only zombies left: the run is ending, there is nothing to measure
            return 0.0, None
        return rss / 2**30, cpu

    def _record(self, now: float, rss_gib: float, cpu: float) -> None:
        if self.opts.gpu_interval and now - self._gpu_at >= self.opts.gpu_interval:
            self._gpu_at = now
            self.last_gpu = gpu_memory_gib(set(self._procs))
        s = {
            "t": round(now - self.t0, 2),
            "rss_gib": round(rss_gib, 4),
            "gpu_gib": round(self.last_gpu or 0.0, 4),
            "cpu": round(cpu, 3),
        }
        self._count += 1
        self.samples.append(s)
        if len(self.samples) > MAX_TIMELINE:
            del self.samples[1::2]  # halve the resolution, keep the span
        stride = 1 << (self._written // 5000)  # the file is decimated the same way, later
        if self._file and self._count % stride == 0:
            self._file.write(json.dumps(s) + "\n")
            self._file.flush()
            self._written += 1


def _watch_signature(folders: Sequence[Path], exclude: Path) -> tuple[int, int, float]:
    """(files, total bytes, newest mtime) of the watched folders: any change is progress.

    Our own output folder is left out: the logs we write would otherwise always look like progress."""
    n = size = 0
    newest = 0.0
    skip = os.path.realpath(exclude)
    for folder in folders:
        for dirpath, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(dirpath, d)) != skip]
            for fn in files:
                n += 1
                if n > MAX_WATCH_FILES:
                    return n, size, newest
                try:
                    st = os.stat(os.path.join(dirpath, fn))
                except OSError:
                    continue
                size += st.st_size
                newest = max(newest, st.st_mtime)
    return n, size, newest
