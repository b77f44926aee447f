"""A node's hardware evidence after its ranks ended: kernel log lines, GPU/NPU error counters, link state.

Why here and not in the logs: the event that starts a multi-node failure is often outside every rank's
output — an Xid 79 (GPU fell off the bus), a double-bit ECC error (Xid 48), an NVLink error (Xid 74), the
host OOM killer, a NIC that went down — and sits in one node's kernel ring buffer. Each probe is bounded
(a wedged driver makes ``nvidia-smi`` hang: 3 s at most) and says why it read nothing; none raises.

Kernel log sources, first that answers: ``dmesg --time-format iso`` (often restricted to root:
``kernel.dmesg_restrict``), ``journalctl -k``, then the files named in ``FAILDIAG_KERNEL_LOG``
(``os.pathsep``-separated; where a cluster's syslog puts ``kern.*``) or ``/var/log/kern.log`` when readable.
Only lines of the run's time window (from 2 minutes before its start) that match a hardware pattern are kept.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from .timeparse import parse_line_time

KERNEL_WINDOW_BEFORE_S = 120.0
MAX_KERNEL_LINES = 200
_PROBE_TIMEOUT_S = 3.0
_INTERESTING = re.compile(
    r"NVRM: Xid|fallen off the bus|\bSXid\b|uncorrectable|double.bit|ECC error|EDAC|Machine Check|mce: \[Hardware"
    r"|Out of memory: Killed process|oom-kill|Memory cgroup out of memory|Killed process \d+"
    r"|[Ll]ink is [Dd]own|NIC Link is Down|link down|port .{0,20}(?:down|DOWN)|PCIe Bus Error|AER: .{0,40}error"
    r"|devdrv|davinci.{0,40}(?:error|fault|lost)|hccs.{0,40}(?:error|down)|heartbeat lost"
    r"|soft lockup|hung_task|blocked for more than"
)
_KINDS = (
    ("xid", re.compile(r"NVRM: Xid|fallen off the bus|\bSXid\b")),
    ("oom_kill", re.compile(r"Out of memory|oom-kill|Killed process")),
    ("ecc", re.compile(r"(?i)ecc|double.bit|uncorrectable|EDAC|Machine Check")),
    ("link", re.compile(r"(?i)link (?:is )?down|port .{0,20}down|hccs")),
    ("pcie", re.compile(r"PCIe Bus Error|AER:")),
    ("npu", re.compile(r"devdrv|davinci|heartbeat lost")),
)
_XID = re.compile(r"Xid \((?:PCI:)?[^)]*\): (?P<xid>\d+)")


def _run(argv: list[str], timeout: float = _PROBE_TIMEOUT_S) -> tuple[str | None, str]:
    """(stdout, "") or (None, why it gave nothing)."""
    try:
        cp = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, errors="replace", stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        return None, f"{argv[0]} not installed"
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]} did not answer within {timeout:g} s"
    except OSError as exc:
        return None, f"{argv[0]}: {exc.strerror or exc}"
    if cp.returncode != 0:
        return None, f"{argv[0]}: {(cp.stderr or cp.stdout).strip()[:160] or f'exit {cp.returncode}'}"
    return cp.stdout, ""


def kernel_events(start: float, end: float) -> tuple[list[dict[str, Any]], str]:
    """Hardware lines of the kernel log within the run's window, and where they came from (or why none).
    Files named in ``FAILDIAG_KERNEL_LOG`` are read in addition to the first of dmesg / journalctl that answers."""
    since = start - KERNEL_WINDOW_BEFORE_S
    tried: list[str] = []
    events: list[dict[str, Any]] = []
    used: list[str] = []
    out, why = _run(["dmesg", "--time-format", "iso"])
    if out:
        events, used = _pick(out.splitlines(), since, end, "dmesg"), ["dmesg"]
    else:
        tried.append(why)
        out, why = _run(["journalctl", "-k", "-o", "short-iso-precise", "--no-pager", "--since", f"@{int(since)}"])
        if out and "No entries" not in out[:200] and "No journal files" not in out[:200]:
            events, used = _pick(out.splitlines(), since, end, "journalctl -k"), ["journalctl -k"]
        else:
            tried.append(why or "journalctl -k: no entries")
    named = [p for p in os.environ.get("FAILDIAG_KERNEL_LOG", "").split(os.pathsep) if p]
    for name in named or ([] if used else ["/var/log/kern.log"]):
        lines = _tail_lines(Path(name))
        if lines is None:
            tried.append(f"{name}: not readable")
            continue
        used.append(name)
        events += _pick(lines, since, end, name)
    if used:
        return events[:MAX_KERNEL_LINES], ", ".join(used)
    return [], "kernel log not readable (" + "; ".join(tried) + ")"


def _tail_lines(path: Path, limit: int = 4 << 20) -> list[str] | None:
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError:
        return None
    return data.decode("utf-8", "replace").splitlines()


def _pick(lines: list[str], since: float, end: float, source: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in lines:
        if not _INTERESTING.search(line):
            continue
        t = parse_line_time(line, end)
        if t is not None and not (since <= t <= end + 30):
            continue
        out.append(classify(line.strip()[:400], t, source))
        if len(out) >= MAX_KERNEL_LINES:
            break
    return out


def classify(line: str, t: float | None, source: str) -> dict[str, Any]:
    kind = next((k for k, pat in _KINDS if pat.search(line)), "other")
    m = _XID.search(line)
    return {"time": t, "kind": kind, "xid": int(m["xid"]) if m else None, "line": line, "source": source}


def gpu_counters() -> dict[str, Any]:
    """Per-GPU error counters from ``nvidia-smi`` (uncorrected ECC, pending/failed row remaps, PCIe link)."""
    fields = [
        "index",
        "pci.bus_id",
        "ecc.errors.uncorrected.volatile.total",
        "ecc.errors.corrected.volatile.total",
        "remapped_rows.failure",
        "remapped_rows.pending",
        "pcie.link.gen.current",
        "pcie.link.width.current",
    ]
    out, why = _run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if out is None:
        return {"status": "unavailable", "detail": why}
    devices = []
    for row in out.strip().splitlines():
        vals = [v.strip() for v in row.split(",")]
        if len(vals) == len(fields):
            devices.append(dict(zip(fields, vals, strict=True)))
    faults = [
        f"GPU {d['index']} ({d['pci.bus_id']}): {k} = {d[k]}"
        for d in devices
        for k in ("ecc.errors.uncorrected.volatile.total", "remapped_rows.failure")
        if d.get(k) not in (None, "", "0", "No", "[N/A]", "N/A", "[Not Supported]")
    ]
    return {"status": "ok", "devices": devices, "faults": faults}


def npu_health() -> dict[str, Any]:
    """``npu-smi info``: each NPU's health column (OK / Warning / Alarm / Critical)."""
    out, why = _run(["npu-smi", "info"])
    if out is None:
        return {"status": "unavailable", "detail": why}
    faults = [
        line.strip()[:200]
        for line in out.splitlines()
        if re.search(r"\|\s*\d+\s+\S+.*\|\s*(Warning|Alarm|Critical|Abnormal)\b", line)
    ]
    return {"status": "ok", "faults": faults, "text": out[:4000]}


def link_state() -> dict[str, dict[str, Any]]:
    """Physical NICs' operstate and carrier changes, InfiniBand/RoCE ports' state (cheap sysfs reads)."""
    links: dict[str, dict[str, Any]] = {}
    net = Path("/sys/class/net")
    try:
        names = sorted(p.name for p in net.iterdir())
    except OSError:
        names = []
    for name in names:
        if not (net / name / "device").exists():  # virtual (lo, bridges, veth): not a link that can fail
            continue
        links[name] = {
            "state": _read(net / name / "operstate"),
            "carrier_changes": _int(_read(net / name / "carrier_changes")),
        }
    ib = Path("/sys/class/infiniband")
    try:
        devs = sorted(ib.iterdir())
    except OSError:
        devs = []
    for dev in devs:
        try:
            ports = sorted((dev / "ports").iterdir())
        except OSError:
            continue
        for port in ports:
            state = _read(port / "state")  # "4: ACTIVE"
            links[f"{dev.name}/{port.name}"] = {
                "state": state.split(":", 1)[-1].strip().lower() if state else None,
                "phys_state": _read(port / "phys_state"),
            }
    return links


def link_changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[str]:
    """Links that are down now, or whose carrier flapped during the run."""
    notes: list[str] = []
    for name, now in after.items():
        state = (now.get("state") or "").lower()
        if state in ("down", "lowerlayerdown", "init", "armed", "dormant"):
            notes.append(f"link {name} is {state}")
        prev = before.get(name, {}).get("carrier_changes")
        cur = now.get("carrier_changes")
        if isinstance(prev, int) and isinstance(cur, int) and cur > prev:
            notes.append(f"link {name} changed carrier {cur - prev} time(s) during the run")
    return notes


def _read(p: Path) -> str | None:
    try:
        return p.read_text().strip()
    except OSError:
        return None


def _int(s: str | None) -> int | None:
    try:
        return int(s) if s is not None else None
    except ValueError:
        return None
