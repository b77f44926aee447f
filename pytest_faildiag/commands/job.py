"""`faildiag job JOBDIR [--format text|json]`: the per-node table of a multi-node job folder.

Reads only ``JOBDIR/nodes/*/node.json`` (see ``pytest_faildiag.job.merge``) and writes nothing: one row per
node with its status (failed / ok / missing), the time of its first failure on the corrected clock, the
rank, the clock correction, and what it saw first; then the job's first failing host and rank.
"""

from __future__ import annotations

import argparse
import json
import sys


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("job_dir", metavar="JOBDIR", help="the folder given to `faildiag run --job-dir`")
    p.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError
    from ..job.merge import is_job_dir, nodes_table, read_job

    if not is_job_dir(args.job_dir):
        raise UsageError(f"{args.job_dir}: not a job folder (no nodes/ inside; see `faildiag run --job-dir`)")
    view = read_job(args.job_dir)
    rows = nodes_table(view)
    first = view.first
    head = {
        "job": view.job_id,
        "expected_nodes": view.expected,
        "expected_source": view.expected_source,
        "records": len(view.records),
        "missing": sum(1 for r in rows if r["status"] == "missing"),
        "first_failure": None
        if first is None or view.lost_node_first
        else {
            "host": first.record.name,
            "rank": first.ev.get("rank"),
            "excerpt": first.ev.get("excerpt"),
            "symptom": first.symptom,
        },
        "lost_node_first": view.lost_node_first,
        "notes": view.notes,
    }
    if args.format == "json":
        sys.stdout.write(json.dumps({**head, "nodes": rows}, indent=2, ensure_ascii=False, default=str) + "\n")
        return 0
    sys.stdout.write(render_table(head, rows))
    return 0


def render_table(head: dict, rows: list[dict]) -> str:
    from ..redact import redact_text

    cols = [("name", 18), ("status", 7), ("first failure (UTC)", 24), ("rank", 5), ("clock", 8), ("summary", 0)]
    lines = [
        f"job {head['job'] or '-'}: {head['records']} node record(s), {head['missing']} missing"
        + (f", {head['expected_nodes']} expected ({head['expected_source']})" if head["expected_nodes"] else "")
    ]
    ff = head["first_failure"]
    if head["lost_node_first"]:
        lost = next((r["name"] for r in rows if r["status"] == "missing"), "?")
        lines.append(f"first failure: node {lost} went away without a record; the others show only the cascade")
    elif ff:
        kind = "symptom only" if ff["symptom"] else "failure"
        lines.append(
            f"first {kind}: host {ff['host']} rank {ff['rank'] if ff['rank'] is not None else '-'}: "
            f"{str(ff['excerpt'])[:160]}"
        )
    lines.append("  ".join(n.ljust(w) if w else n for n, w in cols))
    for r in rows:
        clock = f"{-r['clock_offset_s']:+.1f}s" if r.get("clock_offset_s") else "-"
        vals = [
            r["name"][:18],
            r["status"],
            r["first_failure_time"] or "-",
            str(r["rank"]) if r.get("rank") is not None else "-",
            clock,
            (r["summary"] or "")[:140],
        ]
        lines.append("  ".join(v.ljust(w) if w else v for v, (_, w) in zip(vals, cols, strict=True)))
        for flag in r.get("flags", []):
            lines.append(f"{'':20}! {flag[:160]}")
    for n in head["notes"][:10]:
        lines.append(f"note: {n}")
    return redact_text("\n".join(lines) + "\n")
