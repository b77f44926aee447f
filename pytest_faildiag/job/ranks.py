"""Each rank's first failure on one node, with the time it happened, and the collective-timeout anchors.

Read on the node, right after its ranks ended, from the node's own captured logs (``logs/``, ``ranks/``):

* **What failed**: the engine's scanner (``parse.scan``) finds the known failure lines (rule findings) and
  the Python exceptions, each attributed to its rank by torch's own ``[rankN]:`` prefix (the global rank).
* **Symptom or not**: a line matching ``cascade.toml``'s ``[[symptom]]`` patterns, or a rule marked
  ``downstream``, is a symptom of another rank's failure; anything else may have started it.
* **When**: the line's own timestamp; else the last timestamped line of the same rank before it (logging
  prints ``ERROR ...`` and then the traceback); else the launcher's record of that rank's exit (torchrun's
  ``failed (exitcode: N) local_rank: L`` line, its failure summary's ``time``); else None (the merge uses
  the node's end time and says so).
* **Anchors**: every collective timeout with a timestamp (``WorkNCCL(SeqNum=…) ran for X milliseconds``,
  gloo's ``Timed out waiting Xms``) gives the time its collective started on this host's clock; the merge
  compares them across hosts to correct clock skew.

Bounded: only the files that hold events are read a second time, line by line (no file is held in memory).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .timeparse import parse_line_time

_RANK_PREFIX = re.compile(rb"^\[(?:rank|default)?(?P<rank>\d+)\]:\s?")
_TS_QUICK = re.compile(rb"\d\d:\d\d:\d\d")
_AGENT_FAIL = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+)")
_SUMMARY_TIME = re.compile(r"^\s*time\s*:\s*(?P<v>\S+)")
_SUMMARY_RANK = re.compile(r"^\s*rank\s*:\s*(?P<rank>\d+) \(local_rank: (?P<local>\d+)\)")
_SUMMARY_EXIT = re.compile(r"^\s*exitcode\s*:\s*(?P<code>-?\d+)")
_FATAL_SIGNALS = {-9: "SIGKILL", -11: "SIGSEGV", -6: "SIGABRT", -7: "SIGBUS", -4: "SIGILL", -8: "SIGFPE"}
MAX_EVENTS_PER_RANK = 4
MAX_ANCHORS = 64
PRECEDING_LINES = 200  # how far back a line without a time may borrow another rank's timestamp
WINDOW_LINES = 5000  # how far back a line without a time looks for its own rank's last timestamp


@dataclass
class RankEvent:
    """One failure line of one rank (``rank`` None: the node itself, e.g. a kernel log line)."""

    rank: str | None
    time: float | None
    time_source: str
    source: str
    line: int | None
    excerpt: str
    symptom: bool
    rule: str | None = None
    category: str | None = None
    local_rank: str | None = None
    seq: int = 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("seq")
        return d


@dataclass
class Anchor:
    """A collective timeout seen on this host: ``started`` = when its collective began, on this host's clock."""

    key: str
    rank: str | None
    time: float
    started: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _FileTimes:
    points: dict[str | None, list[tuple[int, float]]] = field(default_factory=dict)  # rank -> (line, epoch)
    agent_exit: dict[str, tuple[float, int]] = field(default_factory=dict)  # local rank -> (epoch, exit code)
    summary: dict[str, dict[str, Any]] = field(default_factory=dict)  # global rank -> time, local, exit code
    anchors: list[Anchor] = field(default_factory=list)


@lru_cache(maxsize=1)
def cascade() -> tuple[re.Pattern[str], list[tuple[str, re.Pattern[str]]]]:
    """The symptom regex and the anchor patterns of ``cascade.toml``."""
    data = tomllib.loads(resources.files(__package__).joinpath("cascade.toml").read_text(encoding="utf-8"))
    pats = [p for s in data.get("symptom", []) for p in s.get("patterns", [])]
    symptom = re.compile("|".join(f"(?:{p})" for p in pats))
    anchors = [(a["id"], re.compile(a["pattern"])) for a in data.get("anchor", [])]
    return symptom, anchors


def is_symptom(text: str) -> bool:
    return bool(cascade()[0].search(text))


def read_rank_events(files: list[tuple[str, Path]], ref: float) -> tuple[list[RankEvent], list[Anchor]]:
    """Every rank's first failure events (at most a few each, initiating ones first) and the anchors."""
    from ..engine.analyze import primary_tracebacks
    from ..parse.scan import ScanResult, scan_file
    from ..rules import load_ruleset

    rs = load_ruleset()
    scan = ScanResult()
    paths = {}
    for name, path in files:
        try:
            scan_file(str(path), name, rs, scan)
            paths[name] = path
        except OSError:
            continue
    raw: list[RankEvent] = []
    for f in scan.findings:
        if f.rule.noise or not f.rule.causes or f.source not in paths:
            continue
        symptom = f.rule.downstream or is_symptom(f.text)
        raw.append(
            RankEvent(
                f.rank,
                None,
                "",
                f.source,
                f.line,
                f.text[:400],
                symptom,
                f.rule.id,
                f.rule.causes[0].category,
                seq=f.seq,
            )
        )
    for tb in primary_tracebacks(scan):
        if tb.source not in paths or tb.chained:
            continue
        text = tb.headline[:400]
        raw.append(RankEvent(tb.rank, None, "", tb.source, tb.exc_line or tb.line, text, is_symptom(text), seq=tb.seq))
    lines: dict[str, list[int]] = {}
    for ev in raw:
        if ev.line is not None:
            lines.setdefault(ev.source, []).append(ev.line)
    times = {name: _read_times(path, ref, lines.get(name)) for name, path in paths.items()}
    anchors = [a for t in times.values() for a in t.anchors][:MAX_ANCHORS]
    for ev in raw:
        _date(ev, times[ev.source], ref)
    raw += _launcher_exits(times, {ev.rank for ev in raw})
    return _firsts(raw), anchors


def _date(ev: RankEvent, ft: _FileTimes, ref: float) -> None:
    t = parse_line_time(ev.excerpt, ref)
    if t is not None:
        ev.time, ev.time_source = t, "line"
        return
    if ev.line is not None:
        # the rank's own last timestamped line before it; else any line of the file just before it
        for rank, reach in ((ev.rank, None), ("*", PRECEDING_LINES)):
            before = [
                p for p in ft.points.get(rank, []) if p[0] <= ev.line and (reach is None or ev.line - p[0] <= reach)
            ]
            if before:
                ev.time, ev.time_source = before[-1][1], "preceding line"
                return
    info = ft.summary.get(ev.rank or "")
    if info and info.get("local") in ft.agent_exit:
        ev.time, ev.time_source = ft.agent_exit[info["local"]][0], "launcher"
        ev.local_rank = info["local"]
    elif info and info.get("time") is not None:
        ev.time, ev.time_source = info["time"], "launcher summary"
        ev.local_rank = info.get("local")


def _launcher_exits(times: dict[str, _FileTimes], seen: set[str | None]) -> list[RankEvent]:
    """Ranks that left no failure line but whose launcher recorded their exit: a fatal signal (SIGKILL from the
    OOM killer, SIGSEGV) may have started the failure; SIGTERM means the launcher stopped them."""
    out: list[RankEvent] = []
    for name, ft in times.items():
        for rank, info in ft.summary.items():
            code = info.get("exit")
            if rank in seen or code in (None, 0):
                continue
            seen.add(rank)
            sig = _FATAL_SIGNALS.get(code)
            text = f"rank {rank} (local rank {info.get('local')}) exited with " + (sig or f"exit code {code}")
            symptom = code in (-15, -2, -1)  # SIGTERM/SIGINT/SIGHUP: stopped, not failed
            out.append(
                RankEvent(
                    rank,
                    info.get("time"),
                    "launcher summary",
                    name,
                    info.get("line"),
                    text,
                    symptom,
                    local_rank=info.get("local"),
                    seq=10**9,
                )
            )
    return out


def _firsts(events: list[RankEvent]) -> list[RankEvent]:
    """Per rank: its initiating events by time (then order of discovery), then its symptoms; a few each."""
    by_rank: dict[str | None, list[RankEvent]] = {}
    for ev in events:
        by_rank.setdefault(ev.rank, []).append(ev)
    out: list[RankEvent] = []
    for evs in by_rank.values():
        evs.sort(key=lambda e: (e.symptom, e.time if e.time is not None else float("inf"), e.seq))
        seen: set[str] = set()
        for ev in evs:
            if ev.excerpt not in seen and len(seen) < MAX_EVENTS_PER_RANK:
                seen.add(ev.excerpt)
                out.append(ev)
    return out


def _read_times(path: Path, ref: float, event_lines: list[int] | None = None) -> _FileTimes:
    """One pass over a log: timestamped lines per rank (only in the windows before ``event_lines``: parsing every
    timestamp of a 16 MB log costs a second), torchrun's exit records, collective-timeout anchors."""
    ft = _FileTimes()
    _, anchor_pats = cascade()
    pending: dict[str, Any] = {}
    windows = _windows(event_lines)
    w = 0
    try:
        f = open(path, "rb")
    except OSError:
        return ft
    with f:
        for number, raw in enumerate(f, 1):
            while w < len(windows) and number > windows[w][1]:
                w += 1
            in_window = w < len(windows) and number >= windows[w][0]
            special = (
                b"imeout" in raw
                or b"Timed out" in raw
                or b"local_rank" in raw
                or b"exitcode" in raw
                or raw.lstrip()[:4] == b"time"
            )
            if not in_window and not special:
                continue
            quick = _TS_QUICK.search(raw)
            if quick is None and not special:
                continue
            rank: str | None = None
            body = raw
            while (m := _RANK_PREFIX.match(body)) is not None:
                rank = m["rank"].decode()
                body = body[m.end() :]
            text = body.decode("utf-8", "replace").rstrip("\r\n")
            if quick is not None:
                t = parse_line_time(text, ref)
                if t is not None:
                    if in_window:
                        ft.points.setdefault(rank, []).append((number, t))
                        ft.points.setdefault("*", []).append((number, t))
                    if special:
                        _agent_line(ft, text, t)
                        _anchor_line(ft, text, rank, t, anchor_pats)
                if special:
                    _summary_time(pending, text, ref)
            if special:
                _summary_rank(ft, pending, text, number)
    return ft


def _windows(lines: list[int] | None) -> list[tuple[int, int]]:
    """Merged line ranges ``[line - WINDOW_LINES, line]`` before each event line."""
    out: list[tuple[int, int]] = []
    for ln in sorted(set(lines or [])):
        lo = max(1, ln - WINDOW_LINES)
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], ln)
        else:
            out.append((lo, ln))
    return out


def _agent_line(ft: _FileTimes, text: str, t: float) -> None:
    m = _AGENT_FAIL.search(text)
    if m:
        ft.agent_exit.setdefault(m["local"], (t, int(m["code"])))


def _anchor_line(
    ft: _FileTimes, text: str, rank: str | None, t: float, pats: list[tuple[str, re.Pattern[str]]]
) -> None:
    if "imeout" not in text and "Timed out" not in text:
        return
    for aid, pat in pats:
        m = pat.search(text)
        if not m:
            continue
        g = m.groupdict()
        ran = g.get("ran_ms") or g.get("timeout_ms") or "0"
        key = f"{g.get('op') or aid}#{g['seq']}" if g.get("seq") else (g.get("op") or aid)
        if len(ft.anchors) < MAX_ANCHORS:
            ft.anchors.append(Anchor(key, rank, round(t, 6), round(t - int(ran) / 1000.0, 6)))
        return


def _summary_time(pending: dict[str, Any], text: str, ref: float) -> None:
    m = _SUMMARY_TIME.match(text)
    if m:
        pending.clear()
        pending["time"] = parse_line_time(m["v"], ref)


def _summary_rank(ft: _FileTimes, pending: dict[str, Any], text: str, number: int) -> None:
    """torchrun's failure summary: ``time : …`` / ``host : …`` / ``rank : G (local_rank: L)`` / ``exitcode : N``."""
    if "time" not in pending:
        return
    m = _SUMMARY_RANK.match(text)
    if m:
        pending["rank"], pending["local"], pending["line"] = m["rank"], m["local"], number
        return
    m = _SUMMARY_EXIT.match(text)
    if m and "rank" in pending:
        ft.summary.setdefault(
            pending["rank"],
            {"time": pending.get("time"), "local": pending["local"], "exit": int(m["code"]), "line": pending["line"]},
        )
        pending.clear()
