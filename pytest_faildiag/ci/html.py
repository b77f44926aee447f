"""One self-contained HTML report: failures grouped by cause, evidence, checks, fix hints, pictures.

Why one file with inline CSS and inline SVG and no JavaScript: CI artifact viewers, mail clients and
air-gapped clusters open it as it is; nothing is fetched, nothing runs. Collapsing uses ``<details>``.

Pictures are drawn only where they say more than text: the memory timeline of a run (``timeline.jsonl``
samples recorded by ``faildiag run``) and the per-rank timeline of a distributed failure or hang (from
``profile.ranks`` and the ``stuck`` entries of ``report.json``). Everything that came from a log is
HTML-escaped and redacted.
"""

from __future__ import annotations

import html
import math
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..fsio import project_root, read_allowed, read_capped, read_roots
from ..redact import redact_text
from ..sanitize import display
from ._load import CauseGroup, Failure, ReportInputError, Session, load, read_lock_diff, read_timeline

MAX_CAUSES_PER_TEST = 4
MAX_EVIDENCE = 12
MAX_FAILURES_RENDERED = 500
SOURCE_CONTEXT = 3
MAX_SOURCE_BYTES = 2_000_000
MAX_PICTURES = 6

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d1d9e0;--red:#cf222e;--orange:#bc4c00;
--green:#1a7f37;--blue:#0969da;--gray:#818b98}
*{box-sizing:border-box}
body{font:14px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg);
margin:0;padding:24px 32px;max-width:1200px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:0}h3{font-size:15px;margin:16px 0 6px}
.muted{color:var(--muted)}.mono,pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:4px 0;
white-space:pre-wrap;word-break:break-word}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600}
.group{border:1px solid var(--line);border-left:6px solid var(--red);border-radius:8px;margin:18px 0;padding:14px 18px}
.group.c-resource{border-left-color:#8250df}.group.c-communication{border-left-color:var(--orange)}
.group.c-test_code{border-left-color:var(--blue)}.group.c-environment,.group.c-library{border-left-color:#9a6700}
.badge{display:inline-block;border-radius:12px;padding:0 8px;font-size:12px;font-weight:600;background:var(--panel);
border:1px solid var(--line);margin-right:4px}
.count{background:var(--red);color:#fff;border-color:var(--red)}
.st-passed{color:var(--green);font-weight:600}.st-failed{color:var(--red);font-weight:600}.st-skipped{color:var(--gray)}
.k-direct{color:var(--green)}.k-hypothesis{color:var(--orange)}
.bar{display:inline-block;width:90px;height:8px;background:var(--panel);border:1px solid var(--line);border-radius:4px;
vertical-align:middle;margin-left:6px}.bar>span{display:block;height:100%;background:var(--blue);border-radius:4px}
details{border-top:1px solid var(--line);padding:6px 0}summary{cursor:pointer;font-weight:600}
.hints li{margin:2px 0}.src .hl{background:#fff8c5;display:block}
.chart{border:1px solid var(--line);border-radius:6px;background:#fff;margin:6px 0}
.notes{color:var(--muted);font-size:12px}
figure{margin:10px 0}figcaption{font-size:13px;margin-bottom:2px}.pictures{margin:18px 0}
"""


def esc(value: object) -> str:
    """HTML-escape (quotes too) after redaction: every string from a log goes through here. Control and
    bidi characters are shown as ``\\x1b``/``\\u202e`` first: a page must not read differently than it is."""
    return html.escape(display(value), quote=True)


# ------------------------------------------------------------------------------------------------ charts


def _nice_max(v: float) -> float:
    if v <= 0 or not math.isfinite(v):
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * exp:
            return m * exp
    return 10 * exp


def memory_chart_svg(samples: list[dict[str, float]], width: int = 1000, height: int = 280) -> str:
    """A line chart of host RSS and GPU memory (GiB) over time, CPU % as a faint area; the last sample
    (where the run died) is marked. Returns "" when there is nothing to draw."""
    pts = sorted((s for s in samples if math.isfinite(s.get("t", math.nan))), key=lambda s: s["t"])
    if len(pts) < 2:
        return ""
    left, right, top, bottom = 56, 110, 16, 34
    pw, ph = width - left - right, height - top - bottom
    t0, t1 = pts[0]["t"], pts[-1]["t"]
    span = (t1 - t0) or 1.0
    series = {"rss_gib": ("host RSS", "#8250df"), "gpu_gib": ("GPU memory", "#cf222e")}
    vmax = _nice_max(max((s[k] for s in pts for k in series if math.isfinite(s.get(k, math.nan))), default=1.0))

    def x(t: float) -> float:
        return left + (t - t0) / span * pw

    def y(v: float, top_v: float = vmax) -> float:
        return top + ph - (v / top_v) * ph

    parts = [
        f'<svg class="chart" role="img" aria-label="memory timeline" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-size="11" font-family="sans-serif">'
    ]
    for i in range(5):
        v = vmax * i / 4
        yy = y(v)
        parts.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" stroke="#eaeef2"/>')
        parts.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" fill="#59636e">{v:g}</text>')
    for i in range(6):
        t = t0 + span * i / 5
        xx = x(t)
        parts.append(f'<text x="{xx:.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#59636e">{t - t0:.3g}s</text>')
    parts.append(
        f'<text x="14" y="{top + ph / 2:.0f}" transform="rotate(-90 14 {top + ph / 2:.0f})" '
        f'text-anchor="middle" fill="#59636e">GiB</text>'
    )
    cpu = [(s["t"], s["cpu"]) for s in pts if math.isfinite(s.get("cpu", math.nan))]
    if len(cpu) >= 2:
        cmax = max(100.0, _nice_max(max(c for _, c in cpu)))
        poly = " ".join(f"{x(t):.1f},{y(c, cmax):.1f}" for t, c in cpu)
        parts.append(
            f'<polygon points="{x(cpu[0][0]):.1f},{top + ph} {poly} {x(cpu[-1][0]):.1f},{top + ph}" '
            f'fill="#0969da" fill-opacity="0.08" stroke="none"/>'
        )
    legend_y = top + 6
    for key, (label, color) in series.items():
        line = [(s["t"], s[key]) for s in pts if math.isfinite(s.get(key, math.nan))]
        if len(line) < 2:
            continue
        pl = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in line)
        parts.append(f'<polyline points="{pl}" fill="none" stroke="{color}" stroke-width="2"/>')
        peak_t, peak_v = max(line, key=lambda tv: tv[1])
        parts.append(f'<circle cx="{x(peak_t):.1f}" cy="{y(peak_v):.1f}" r="3.5" fill="{color}"/>')
        parts.append(
            f'<line x1="{left + pw + 10}" y1="{legend_y}" x2="{left + pw + 26}" y2="{legend_y}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{left + pw + 30}" y="{legend_y + 4}">{esc(label)}</text>')
        parts.append(f'<text x="{left + pw + 30}" y="{legend_y + 17}" fill="#59636e">peak {peak_v:.2f} GiB</text>')
        legend_y += 34
    if len(cpu) >= 2:
        parts.append(
            f'<rect x="{left + pw + 10}" y="{legend_y - 5}" width="16" height="8" fill="#0969da" fill-opacity="0.2"/>'
        )
        parts.append(f'<text x="{left + pw + 30}" y="{legend_y + 4}">CPU %</text>')
    end = x(t1)
    parts.append(
        f'<line x1="{end:.1f}" y1="{top}" x2="{end:.1f}" y2="{top + ph}" stroke="#cf222e" stroke-dasharray="4 3"/>'
    )
    parts.append(f'<text x="{end - 4:.1f}" y="{top + 10}" text-anchor="end" fill="#cf222e">failure</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#d1d9e0"/>')
    parts.append("</svg>")
    return "".join(parts)


_TS = re.compile(r"(?:(\d{2})(\d{2}) )?(\d{2}):(\d{2}):(\d{2}(?:\.\d+)?)")


def _ts_seconds(ts: object) -> float | None:
    m = _TS.search(str(ts or ""))
    if not m:
        return None
    day = int(m[2]) if m[2] else 0
    return day * 86400 + int(m[3]) * 3600 + int(m[4]) * 60 + float(m[5])


def rank_events(report: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """Per rank, what the report knows happened to it: its first error, where it was stuck."""
    if not isinstance(report, dict):
        return {}
    prof = report.get("profile") if isinstance(report.get("profile"), dict) else {}
    ranks = prof.get("ranks") if isinstance(prof.get("ranks"), dict) else {}
    out: dict[str, list[dict[str, Any]]] = {}
    first = ranks.get("first_failing")
    fe = ranks.get("first_error") if isinstance(ranks.get("first_error"), dict) else {}
    for r in ranks.get("ranks_with_errors") or []:
        ev: dict[str, Any] = {"kind": "error", "first": str(r) == str(first), "text": "error"}
        if str(r) == str(first) and fe:
            ev.update(text=str(fe.get("excerpt", "error")), time=_ts_seconds(fe.get("time")))
        out.setdefault(str(r), []).append(ev)
    for s in report.get("stuck") or []:
        if isinstance(s, dict) and s.get("rank") is not None:
            out.setdefault(str(s["rank"]), []).append(
                {"kind": "stuck", "text": _stuck_label(s), "collective": s.get("category") == "communication"}
            )
    # the telling case of a distributed hang: some ranks wait in a collective, others are somewhere else
    waiting = {r for r, evs in out.items() if any(e.get("collective") for e in evs)}
    if waiting and len(waiting) < len(out):
        for r, evs in out.items():
            if r not in waiting:
                for e in evs:
                    if e["kind"] == "stuck":
                        e["elsewhere"] = True
    return out


def _stuck_label(s: dict[str, Any]) -> str:
    """``in all_reduce (distributed_c10d.py:3252, called from train.py:15)``: the frame, paths shortened."""
    detail = str(s.get("detail") or "")
    _, sep, where = detail.partition(": stuck in ")
    text = where if sep else str(s.get("summary") or detail)
    return "in " + re.sub(r"(?:[\w.~-]*/)+([\w.-]+:\d+)", r"\1", text) if sep else text


def _rank_sort(r: str) -> tuple[int, str]:
    return (int(r), "") if r.isdigit() else (10**9, r)


def rank_timeline_svg(report: dict[str, Any] | None, width: int = 1000) -> str:
    """One lane per rank: how long it ran, where it failed (red) or waited (amber). "" when fewer than
    two ranks are known, since a single lane says nothing a sentence would not."""
    events = rank_events(report)
    if len(events) < 2:
        return ""
    ranks = sorted(events, key=_rank_sort)
    lane, top, left = 34, 28, 70
    height = top + lane * len(ranks) + 24
    end_x = width - 480
    parts = [
        f'<svg class="chart" role="img" aria-label="per-rank timeline" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-size="11" font-family="sans-serif">',
        f'<text x="{left}" y="16" fill="#59636e">run start</text>',
        f'<text x="{end_x}" y="16" text-anchor="middle" fill="#59636e">failure / time limit</text>',
    ]
    for i, r in enumerate(ranks):
        yy = top + i * lane + lane / 2
        evs = events[r]
        stuck = [e for e in evs if e["kind"] == "stuck"]
        errs = [e for e in evs if e["kind"] == "error"]
        first = any(e.get("first") for e in errs)
        elsewhere = any(e.get("elsewhere") for e in stuck)
        bar_end = end_x - 40 if first else end_x
        color = "#cf222e" if errs or elsewhere else "#bc4c00"
        parts.append(f'<text x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end" font-weight="600">rank {esc(r)}</text>')
        parts.append(f'<rect x="{left}" y="{yy - 6:.1f}" width="{bar_end - left}" height="12" rx="3" fill="#d1d9e0"/>')
        if stuck and not errs:
            parts.append(
                f'<rect x="{bar_end - 120}" y="{yy - 6:.1f}" width="120" height="12" rx="3" '
                f'fill="{color}" fill-opacity="0.55"/>'
            )
        marker = (
            f'<circle cx="{bar_end}" cy="{yy:.1f}" r="7" fill="{color}"/>'
            if errs
            else f'<rect x="{bar_end - 6}" y="{yy - 6:.1f}" width="12" height="12" transform="rotate(45 {bar_end} {yy:.1f})" '
            f'fill="{color}"/>'
        )
        parts.append(marker)
        kind = (
            "first failure: "
            if first
            else "error: "
            if errs
            else "never joined the collective, stuck "
            if elsewhere
            else "waiting "
            if stuck[0].get("collective")
            else "stuck "
        )
        label = kind + (errs or stuck)[0]["text"]
        if len(label) > 80:
            label = label[:79] + "…"
        parts.append(f'<text x="{end_x + 14}" y="{yy + 4:.1f}" fill="{color}">{esc(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------------------------------------ blocks


def _status(status: object) -> str:
    s = str(status)
    return f'<span class="st-{esc(s) if s in ("passed", "failed", "skipped") else "skipped"}">{esc(s)}</span>'


def _conf_bar(conf: float) -> str:
    pct = max(0, min(100, round(conf * 100)))
    return f'{pct}%<span class="bar"><span style="width:{pct}%"></span></span>'


def source_lines(file: str | None, line: int | None, base: Path | None = None) -> str:
    """The user's code around the failing line, when the file is still readable here (best effort).

    ``file`` comes from a session on disk, which may be crafted: only a regular file inside the project
    (the one ``base`` lies in; never the home folder or ``/`` as a whole) is read, at most
    ``MAX_SOURCE_BYTES`` of it, and the lines shown are redacted like every other excerpt."""
    if not file or not isinstance(line, int) or line < 1:
        return ""
    p = Path(file)
    if not p.is_absolute() and base is not None:
        p = base / p
    try:
        data = read_capped(read_allowed(p, read_roots([project_root(base)])), MAX_SOURCE_BYTES)
    except (OSError, ValueError):
        return ""
    if b"\x00" in data[:8192]:
        return ""
    text = data.decode("utf-8", errors="replace").splitlines()
    lo, hi = max(1, line - SOURCE_CONTEXT), min(len(text), line + SOURCE_CONTEXT)
    if lo > hi:
        return ""
    window = redact_text("\n".join(text[lo - 1 : hi])).split("\n")
    if len(window) != hi - lo + 1:  # a secret spanning lines was masked: the numbering would lie
        return ""
    rows = []
    for n, src in zip(range(lo, hi + 1), window, strict=True):
        row = f"{n:>5}  {esc(src)}"
        rows.append(f'<span class="hl">{row}</span>' if n == line else row + "\n")
    return f'<pre class="src">{"".join(rows)}</pre>'


def _cause_html(cause: dict[str, Any], index: int) -> str:
    parts = [
        f"<h3>{index}. {esc(cause.get('summary', ''))}</h3>",
        f'<div class="muted"><code>{esc(cause.get("id", ""))}</code> · <span class="badge">{esc(cause.get("category", ""))}'
        f"</span> confidence {_conf_bar(float(cause.get('confidence') or 0))}</div>",
    ]
    evidence = [e for e in cause.get("evidence") or [] if isinstance(e, dict)][:MAX_EVIDENCE]
    if evidence:
        rows = []
        for e in evidence:
            loc = f"{e.get('source', '')}:{e['line']}" if e.get("line") else str(e.get("source", ""))
            kind = str(e.get("kind", ""))
            rows.append(
                f'<tr><td class="k-{esc(kind)}">{esc(kind)}</td><td class="mono">{esc(loc)}</td>'
                f"<td><pre>{esc(e.get('excerpt', ''))}</pre></td></tr>"
            )
        parts.append(
            "<table><tr><th>evidence</th><th>source:line</th><th>excerpt</th></tr>" + "".join(rows) + "</table>"
        )
    checks = [c for c in cause.get("validation_checks") or [] if isinstance(c, dict)]
    if checks:
        rows = [
            f'<tr><td class="mono">{esc(c.get("name", ""))}</td><td>{_status(c.get("status"))}</td>'
            f"<td>{esc(c.get('detail', ''))}</td></tr>"
            for c in checks
        ]
        parts.append(
            "<table><tr><th>validation check</th><th>status</th><th>detail</th></tr>" + "".join(rows) + "</table>"
        )
    hints = cause.get("fix_hints") or []
    if hints:
        parts.append('<ul class="hints">' + "".join(f"<li>fix: {esc(h)}</li>" for h in hints) + "</ul>")
    return "".join(parts)


def _lock_diff_html(changes: list[dict[str, Any]]) -> str:
    if not changes:
        return ""
    rows = "".join(
        f'<tr><td>{esc(c.get("kind", ""))}</td><td class="mono">{esc(c.get("name", ""))}</td>'
        f'<td class="mono">{esc("—" if c.get("old") is None else c.get("old"))}</td>'
        f'<td class="mono">{esc("—" if c.get("new") is None else c.get("new"))}</td>'
        f"<td>{esc(c.get('change', ''))}</td></tr>"
        for c in changes[:200]
    )
    more = f'<p class="notes">… and {len(changes) - 200} more changes</p>' if len(changes) > 200 else ""
    return (
        "<h3>Environment lock diff (last green → this run)</h3><table><tr><th>kind</th><th>what</th>"
        f"<th>before</th><th>now</th><th>change</th></tr>{rows}</table>{more}"
    )


def _stuck_html(report: dict[str, Any]) -> str:
    stuck = [s for s in report.get("stuck") or [] if isinstance(s, dict)]
    if not stuck:
        return ""
    rows = "".join(
        f"<tr><td>{esc(s.get('rank') if s.get('rank') is not None else '-')}</td>"
        f'<td>{esc(s.get("summary", ""))}</td><td class="mono">{esc(s.get("detail", ""))}</td></tr>'
        for s in stuck[:50]
    )
    return f"<h3>Where it was stuck</h3><table><tr><th>rank</th><th>waiting</th><th>thread</th></tr>{rows}</table>"


def failure_html(f: Failure, base: Path | None, open_: bool, pictured: frozenset[int] = frozenset()) -> str:
    """One failed test: where, what, every cause with its evidence, checks and hints, and its pictures."""
    rep = f.report or {}
    where = f"{f.file}:{f.line}" if f.file and f.line else (f.file or "")
    parts = [
        f"<details{' open' if open_ else ''}><summary>{esc(f.nodeid)}</summary>",
        f"<p><strong>{esc(f.summary)}</strong></p>",
        f'<p class="muted">{esc(f.type)} · {esc(f.when)} · {esc(f.outcome)}'
        + (f' · <span class="mono">{esc(where)}</span>' if where else "")
        + "</p>",
    ]
    parts.append(source_lines(f.file, f.line, base))
    prof = rep.get("profile") if isinstance(rep.get("profile"), dict) else {}
    ff = prof.get("first_failure") if isinstance(prof.get("first_failure"), dict) else None
    if ff:
        parts.append(
            f'<h3>First failure</h3><div class="mono muted">{esc(ff.get("source", ""))}:{esc(ff.get("line") or "?")}'
            f"</div><pre>{esc(ff.get('excerpt', ''))}</pre>"
        )
    if id(f) in pictured:
        parts.append('<p class="notes">its picture is at the top of the report</p>')
    parts.append(_stuck_html(rep))
    causes = [c for c in rep.get("root_causes") or [] if isinstance(c, dict)]
    for i, c in enumerate(causes[:MAX_CAUSES_PER_TEST], 1):
        parts.append(_cause_html(c, i))
    if not causes and f.fix_hints:
        parts.append('<ul class="hints">' + "".join(f"<li>fix: {esc(h)}</li>" for h in f.fix_hints) + "</ul>")
    parts.append(_lock_diff_html(read_lock_diff(f.snapshot, rep)))
    actions = rep.get("next_actions") or []
    if actions:
        parts.append("<h3>Next actions</h3><ul>" + "".join(f"<li>{esc(a)}</li>" for a in actions) + "</ul>")
    if f.snapshot is not None:
        parts.append(f'<p class="notes">snapshot: <span class="mono">{esc(f.snapshot)}</span></p>')
    parts.append("</details>")
    return "".join(parts)


def group_html(
    g: CauseGroup,
    index: int,
    base: Path | None,
    budget: list[int],
    open_first: bool = False,
    pictured: frozenset[int] = frozenset(),
) -> str:
    head = g.head
    cls = re.sub(r"[^a-z_]", "", g.category.lower())
    parts = [
        f'<section class="group c-{cls}" id="cause-{index}">',
        f'<h2><span class="badge count">{g.count} test{"s" if g.count != 1 else ""}</span> {esc(g.title)}</h2>',
        f'<div class="muted"><span class="badge">{esc(g.category)}</span>{esc(head.type)} · confidence '
        f"{_conf_bar(g.confidence)}" + (f" · <code>{esc(head.cause_id)}</code>" if head.cause_id else "") + "</div>",
    ]
    if head.fix_hints:
        parts.append(
            '<ul class="hints">'
            + "".join(f"<li><strong>fix:</strong> {esc(h)}</li>" for h in head.fix_hints[:4])
            + "</ul>"
        )
    for i, f in enumerate(g.failures):
        if budget[0] <= 0:
            parts.append(f'<p class="notes">… {g.count - i} more tests with this cause are not rendered.</p>')
            break
        budget[0] -= 1
        parts.append(failure_html(f, base, open_=open_first and i == 0, pictured=pictured))
    parts.append("</section>")
    return "".join(parts)


def pictures_html(groups: list[CauseGroup], limit: int = MAX_PICTURES) -> tuple[str, frozenset[int]]:
    """The charts, at the top where they are seen first: a memory timeline per run that recorded one,
    a per-rank timeline per distributed failure, in cause order, each captioned with its test and cause."""
    parts: list[str] = []
    pictured: set[int] = set()
    for i, g in enumerate(groups, 1):
        for f in g.failures:
            if len(pictured) >= limit:
                break
            charts = [
                ("Memory timeline", memory_chart_svg(read_timeline(f.snapshot))),
                ("Per-rank timeline", rank_timeline_svg(f.report)),
            ]
            for name, svg in charts:
                if svg:
                    parts.append(
                        f'<figure><figcaption><strong>{name}</strong> · <span class="mono">{esc(f.nodeid)}</span>'
                        f' · <a href="#cause-{i}">cause {i}: {esc(g.title)}</a></figcaption>{svg}</figure>'
                    )
                    pictured.add(id(f))
    if not parts:
        return "", frozenset()
    return '<section class="pictures"><h2>Pictures</h2>' + "".join(parts) + "</section>", frozenset(pictured)


def render_session(session: Session, *, title: str = "faildiag report", base: Path | None = None) -> str:
    """The whole page for a session (or a lone snapshot) as one string."""
    groups = session.groups()
    n = len(session.failures)
    base = base or Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = "".join(
        f'<tr><td><a href="#cause-{i}">{i}</a></td><td>{esc(g.title)}</td><td>{g.count}</td>'
        f"<td>{esc(g.category)}</td><td>{_conf_bar(g.confidence)}</td>"
        f"<td>{esc(g.head.fix_hints[0]) if g.head.fix_hints else '—'}</td></tr>"
        for i, g in enumerate(groups, 1)
    )
    budget = [MAX_FAILURES_RENDERED]
    pictures, pictured = pictures_html(groups)
    lone = n == 1
    body = "".join(group_html(g, i, base, budget, open_first=lone, pictured=pictured) for i, g in enumerate(groups, 1))
    notes = "".join(f"<li>{esc(x)}</li>" for x in session.notes)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>{esc(title)}</title>'
        f"<style>{CSS}</style></head><body>"
        f'<h1>{esc(title)}</h1><p class="muted">{n} failure{"s" if n != 1 else ""} · {len(groups)} '
        f"cause{'s' if len(groups) != 1 else ''} · {esc(session.root)} · {now}</p>"
        + (
            "<table><tr><th>#</th><th>cause</th><th>tests</th><th>category</th><th>confidence</th>"
            f"<th>first fix hint</th></tr>{rows}</table>"
            if groups
            else "<p>No failed tests.</p>"
        )
        + f"{pictures}{body}"
        + (f'<ul class="notes">{notes}</ul>' if notes else "")
        + "</body></html>\n"
    )


def render_path(path: str | os.PathLike[str]) -> str:
    """Render a snapshot folder or a session folder. Raises ReportInputError for anything else."""
    return render_session(load(path))


def write_html(out_dir: Path, html_path: Path) -> Path:
    """Write the report for ``out_dir`` to ``html_path`` atomically and return the path.

    A folder without failures gives a report that says so; OSError when ``html_path`` is not writable
    (the plugin guards the call)."""
    from ..engine.snapshot import atomic_write

    html_path = Path(html_path)
    try:
        session = load(out_dir)
    except ReportInputError:
        if Path(out_dir).exists() and not Path(out_dir).is_dir():
            raise
        session = Session(Path(out_dir), [])  # a green session: the report says so instead of failing
    atomic_write(html_path, render_session(session))
    return html_path
