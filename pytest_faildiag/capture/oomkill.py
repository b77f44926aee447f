"""Evidence that the kernel OOM killer ended a run: cgroup ``oom_kill`` counters before and after, the kernel log.

A SIGKILL alone says nothing about who sent it; a counter that moved during the run (or a ``dmesg`` line
naming one of the run's pids) does.
"""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import Any


def _cgroup_oom_files() -> list[Path]:
    """cgroup v2 ``memory.events`` or v1 ``memory.oom_control`` files of our own cgroup (the child inherits it)."""
    out: list[Path] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, rel = parts
        rel = rel.lstrip("/")
        if ctrls == "":
            for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                out.append(Path(base, rel, "memory.events"))
        elif "memory" in ctrls.split(","):
            out.append(Path("/sys/fs/cgroup/memory", rel, "memory.oom_control"))
    out += [Path("/sys/fs/cgroup/memory.events"), Path("/sys/fs/cgroup/memory/memory.oom_control")]
    seen: list[Path] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen


def read_oom_kills() -> dict[str, int]:
    """oom_kill counters by file; empty when the machine exposes none."""
    counts: dict[str, int] = {}
    for p in _cgroup_oom_files():
        try:
            m = re.search(r"^oom_kill (\d+)", p.read_text(), re.M)
        except OSError:
            continue
        if m:
            counts[str(p)] = int(m.group(1))
    return counts


def oom_verdict(before: dict[str, int], after: dict[str, int], pids: set[int], status: int) -> dict[str, Any]:
    """Did the kernel OOM killer end the run? From the counters' change, then the kernel log."""
    verdict: dict[str, Any] = {"killed": None, "detail": "the machine exposes no cgroup oom_kill counter"}
    for path, n in after.items():
        if path in before:
            delta = n - before[path]
            verdict = {"killed": delta > 0, "detail": f"{path}: oom_kill {before[path]} → {n} during the run"}
            if delta > 0:
                return verdict
    if status == 128 + signal.SIGKILL:
        line = dmesg_oom_line(pids)
        if line:
            return {"killed": True, "detail": f"kernel log: {line}"}
    return verdict


def dmesg_oom_line(pids: set[int]) -> str | None:
    """The kernel log's line that names one of ``pids`` as the OOM killer's victim (None when there is none or
    the log cannot be read: ``dmesg`` is often restricted to root)."""
    lines = dmesg_oom_lines(pids)
    return next(iter(lines.values()), None)


def dmesg_oom_lines(pids: set[int]) -> dict[int, str]:
    """Each of ``pids`` the kernel log names as the OOM killer's victim, with its line (the latest), from one
    read of the log; empty when it cannot be read."""
    try:
        cp = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=3, errors="replace")
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[int, str] = {}
    for line in reversed(cp.stdout.splitlines()[-5000:]):
        m = re.search(r"(?:Out of memory|Memory cgroup out of memory): Killed process (\d+)", line)
        if m and int(m.group(1)) in pids:
            found.setdefault(int(m.group(1)), line.strip()[:300])
    return found
