"""The job-level half: merge the node records of ``DIR/nodes/*/node.json`` into one diagnosis.

It reads only what the nodes wrote — each ``node.json`` (a few KB) and the ``report.json`` of the one node
where the failure started — never the ranks' logs, so 512 nodes merge in well under a second.

1. **Records**: a ``node.json`` that is half-written or corrupt, of another schema, or of another job (the
   majority's job id decides) is reported and skipped; a claimed folder without a record is a node that
   started and never finished (its run died with the node). Two records claiming one name are both kept
   and flagged.
2. **Expected nodes**: the largest node count any node's launcher reported and the union of the host
   names (Slurm's node list); a node expected and absent is ``missing`` — itself evidence: a node that
   lost power, panicked or dropped off the network writes nothing.
3. **Clock skew**: every collective timeout fires a fixed time after its collective started, and the
   healthy ranks of every node entered that collective within moments of each other; so per collective
   (``OpType#SeqNum``) the hosts' start times should agree, and a host whose times read later by N s has
   a clock N s ahead (the median over its collectives). A host without timeouts is placed by its launcher
   start time against the anchored hosts — only when those show the launchers did start together.
4. **First failure**: the earliest initiating event on the corrected clock, anywhere in the job; every
   collective timeout, closed connection or launcher stop (``cascade.toml``) is a symptom and is named
   as such. With only symptoms in sight and a node missing, the missing node is the likely start.
5. **Environment**: per fact of the environment-lock digest, the nodes that differ from the majority.
"""

from __future__ import annotations

import json
import statistics
import time
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..model import Diagnosis, Evidence, FailurePoint, FailureProfile, RootCause, ValidationCheck
from .node import CLAIM_FILE, NODE_FILE, NODE_SCHEMA
from .ranks import is_symptom

SYNC_START_SPREAD_S = 5.0  # launchers whose corrected start times agree this well "started together"
LATE_INITIATOR_S = 1.0  # an "initiating" event this much later than the first symptom did not start it


@dataclass
class NodeFailurePoint(FailurePoint):
    """``profile.first_failure`` of a merged job: where, plus on which host and rank (both always said)."""

    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["host"], d["rank"] = self.host, self.rank
        return d


@dataclass
class Record:
    folder: str
    data: dict[str, Any]
    offset: float = 0.0
    offset_source: str = "none"
    flags: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.data.get("name") or self.folder)

    @property
    def host(self) -> str:
        return str(self.data.get("host") or self.name)


@dataclass
class Event:
    record: Record
    ev: dict[str, Any]
    time: float
    time_source: str
    slack: float = 0.0  # how much later than ``time`` it may have happened (the stamp's precision)

    @property
    def symptom(self) -> bool:
        return bool(self.ev.get("symptom"))

    @property
    def latest(self) -> float:
        """The latest moment the event can have happened (see ``stamp_slack``)."""
        return self.time + self.slack


@dataclass
class JobView:
    """Everything the merge found: the records, what was skipped and why, missing nodes, the first failure."""

    job_dir: Path
    job_id: str | None = None
    records: list[Record] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    unfinished: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    expected: int | None = None
    expected_source: str | None = None
    first: Event | None = None
    first_symptom: Event | None = None
    lost_node_first: bool = False
    env_diffs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    firsts: dict[str, Event] = field(default_factory=dict)  # folder -> that node's first event


@lru_cache(maxsize=1)
def _actions() -> dict[str, str]:
    data = tomllib.loads(resources.files(__package__).joinpath("cascade.toml").read_text(encoding="utf-8"))
    return dict(data.get("actions", {}))


def is_job_dir(path: str | Path) -> bool:
    return (Path(path) / "nodes").is_dir()


# --------------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------------


def read_job(job_dir: str | Path) -> JobView:
    """Read and check every node record; correct clocks; find the first failure. Never raises for bad records."""
    view = JobView(Path(job_dir))
    nodes = view.job_dir / "nodes"
    try:
        folders = sorted(p for p in nodes.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        view.notes.append(f"{nodes}: {exc.strerror or exc}")
        folders = []
    raw: list[Record] = []
    for folder in folders:
        rec = _read_record(folder, view)
        if rec is not None:
            raw.append(rec)
    _keep_one_job(raw, view)
    _flag_duplicates(view)
    _expected(view)
    _correct_clocks(view)
    _first_failure(view)
    _env_majority(view)
    return view


def _read_record(folder: Path, view: JobView) -> Record | None:
    path = folder / NODE_FILE
    rel = f"nodes/{folder.name}/{NODE_FILE}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        claim = _json(folder / CLAIM_FILE)
        if claim is not None:
            view.unfinished.append(
                {
                    "folder": folder.name,
                    "name": str(claim.get("name") or folder.name),
                    "host": claim.get("host"),
                    "start_time": claim.get("start_time"),
                    "job_id": claim.get("job_id"),
                    "expected": claim.get("expected"),
                }
            )
        else:
            view.skipped.append({"folder": folder.name, "reason": f"{rel} absent: not a node folder"})
        return None
    except (OSError, UnicodeDecodeError) as exc:
        view.skipped.append({"folder": folder.name, "reason": f"{rel} unreadable: {exc}"})
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        what = "half-written" if text and not text.rstrip().endswith("}") else "corrupt"
        view.skipped.append({"folder": folder.name, "reason": f"{rel} is {what} ({exc.msg} at char {exc.pos})"})
        return None
    if not isinstance(data, dict):
        view.skipped.append({"folder": folder.name, "reason": f"{rel} is not a node record"})
        return None
    schema = data.get("schema")
    if schema != NODE_SCHEMA:
        view.skipped.append(
            {"folder": folder.name, "reason": f"{rel} has schema {schema!r}, this faildiag reads {NODE_SCHEMA}"}
        )
        return None
    if not isinstance(data.get("start_time"), int | float) or not isinstance(data.get("events", []), list):
        view.skipped.append({"folder": folder.name, "reason": f"{rel} is incomplete (no start time or events)"})
        return None
    return Record(folder.name, data)


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _job_id(rec: Record) -> str | None:
    job = rec.data.get("job")
    return str(job["id"]) if isinstance(job, dict) and job.get("id") is not None else None


def _keep_one_job(raw: list[Record], view: JobView) -> None:
    ids = Counter(j for r in raw if (j := _job_id(r)) is not None)
    if not ids:  # only claims so far: their job ids still tell this job from a previous one
        ids = Counter(str(u["job_id"]) for u in view.unfinished if u.get("job_id") is not None)
    view.job_id = ids.most_common(1)[0][0] if ids else None
    for r in raw:
        j = _job_id(r)
        if view.job_id is not None and j is not None and j != view.job_id:
            view.skipped.append(
                {
                    "folder": r.folder,
                    "reason": f"nodes/{r.folder}/{NODE_FILE} is from another job (id {j}; this job is {view.job_id})",
                }
            )
        else:
            view.records.append(r)
    view.unfinished = [u for u in view.unfinished if u.get("job_id") is None or str(u["job_id"]) == view.job_id]


def _flag_duplicates(view: JobView) -> None:
    by_name: dict[str, list[Record]] = {}
    for r in view.records:
        by_name.setdefault(r.name, []).append(r)
    for name, recs in by_name.items():
        if len(recs) > 1:
            hosts = ", ".join(f"{r.folder} (host {r.host})" for r in recs)
            for r in recs:
                r.flags.append(f"duplicate name: {len(recs)} writers claim {name!r}: {hosts}")
            view.notes.append(
                f"{len(recs)} node records claim the name {name!r} ({hosts}); all kept — give each "
                "node its own --node NAME"
            )


def _expected(view: JobView) -> None:
    count, source, names = None, None, []
    ranks: set[int] = set()
    views = [r.data.get("expected") for r in view.records] + [u.get("expected") for u in view.unfinished]
    for r in view.records:
        if isinstance(r.data.get("node_rank"), int):
            ranks.add(r.data["node_rank"])
    for exp in views:
        exp = exp if isinstance(exp, dict) else {}
        per = exp.get("writers_per_node") or 1
        n = exp.get("nodes")
        if isinstance(n, int) and (count is None or n * per > count):
            count, source = n * per, exp.get("source")
        for h in exp.get("names") or []:
            if isinstance(h, str) and h not in names:
                names.append(h)
    view.expected, view.expected_source = count, source
    present = {r.name for r in view.records} | {r.host for r in view.records} | {u["name"] for u in view.unfinished}
    short = {p.split(".")[0] for p in present}
    for h in names:
        if h not in present and h.split(".")[0] not in short:
            view.missing.append(
                {"name": h, "why": f"expected from {source or 'the launcher'} and never wrote a record"}
            )
    have = len({r.name for r in view.records}) + len(view.unfinished) + len(view.missing)
    if count is not None and have < count:
        free_ranks = [i for i in range(count) if i not in ranks] if ranks else []
        for i in range(count - have):
            label = f"node_rank {free_ranks[i]}" if i < len(free_ranks) else f"unnamed-{i + 1}"
            view.missing.append(
                {"name": label, "why": f"{count} nodes expected ({source}); this one never wrote a record"}
            )


# --------------------------------------------------------------------------------------------------
# clocks
# --------------------------------------------------------------------------------------------------


def _correct_clocks(view: JobView) -> None:
    per_key: dict[str, dict[str, float]] = {}
    for r in view.records:
        for a in r.data.get("anchors") or []:
            if isinstance(a, dict) and isinstance(a.get("started"), int | float) and a.get("key"):
                cur = per_key.setdefault(str(a["key"]), {})
                cur[r.folder] = min(cur.get(r.folder, float("inf")), float(a["started"]))
    deltas: dict[str, list[float]] = {}
    for hosts in per_key.values():
        if len(hosts) < 2:
            continue
        ref = statistics.median(hosts.values())
        for folder, v in hosts.items():
            deltas.setdefault(folder, []).append(v - ref)
    anchored = {f: statistics.median(d) for f, d in deltas.items()}
    for r in view.records:
        if r.folder in anchored:
            r.offset, r.offset_source = anchored[r.folder], "collective timeouts"
    starts = [r.data["start_time"] - r.offset for r in view.records if r.folder in anchored]
    together = len(starts) >= 2 and max(starts) - min(starts) <= SYNC_START_SPREAD_S
    if not anchored:
        all_starts = [r.data["start_time"] for r in view.records]
        together = len(all_starts) >= 2 and max(all_starts) - min(all_starts) <= SYNC_START_SPREAD_S
        starts = all_starts
    if together:
        base = statistics.median(starts)
        for r in view.records:
            if r.folder not in anchored:
                r.offset, r.offset_source = r.data["start_time"] - base, "launcher start"
    for r in view.records:
        if abs(r.offset) >= 1.0:
            view.notes.append(f"clock of {r.name} corrected by {-r.offset:+.1f} s (from its {r.offset_source})")


# --------------------------------------------------------------------------------------------------
# the first failure
# --------------------------------------------------------------------------------------------------


def stamp_slack(t: float, source: str) -> float:
    """A time stamped only to the second (torchelastic's failure summary, many loggers) lies somewhere in
    that second: ordered by its latest moment, it never precedes a finer-stamped event of the same second
    (the launcher's summary is written after the worker it reports had died)."""
    return 0.999 if source != "run end" and t.is_integer() else 0.0


def _events(view: JobView) -> list[Event]:
    out: list[Event] = []
    for r in view.records:
        end = r.data.get("end_time") or r.data["start_time"]
        for ev in r.data.get("events") or []:
            if not isinstance(ev, dict):
                continue
            t = ev.get("time")
            src = ev.get("time_source") or "line"
            if not isinstance(t, int | float):
                t, src = end, "run end"
            symptom = bool(ev.get("symptom")) or is_symptom(str(ev.get("excerpt", "")))
            out.append(Event(r, {**ev, "symptom": symptom}, float(t) - r.offset, src, stamp_slack(float(t), src)))
    return out


def _first_failure(view: JobView) -> None:
    events = _events(view)
    timed = sorted(events, key=lambda e: (e.latest, e.time_source == "run end"))
    initiating = [e for e in timed if not e.symptom]
    symptoms = [e for e in timed if e.symptom]
    view.first_symptom = symptoms[0] if symptoms else None
    for e in initiating + symptoms:
        view.firsts.setdefault(e.record.folder, e)
    first = initiating[0] if initiating else None
    lost = bool(view.missing or view.unfinished)
    if lost and (
        first is None or (view.first_symptom is not None and first.time > view.first_symptom.time + LATE_INITIATOR_S)
    ):
        view.lost_node_first = True
    view.first = first or view.first_symptom


# --------------------------------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------------------------------


def _env_majority(view: JobView) -> None:
    facts = {r.folder: ((r.data.get("env") or {}).get("facts") or {}) for r in view.records}
    facts = {k: v for k, v in facts.items() if v}
    if len(facts) < 3:
        return
    keys = sorted({k for f in facts.values() for k in f})
    for key in keys:
        values = Counter(f.get(key) for f in facts.values())
        ((major, n),) = values.most_common(1)
        if len(values) < 2 or n * 2 <= len(facts):
            continue
        for folder, f in facts.items():
            if f.get(key) != major:
                view.env_diffs.append({"node": folder, "key": key, "value": f.get(key), "majority": major})


# --------------------------------------------------------------------------------------------------
# the merged diagnosis
# --------------------------------------------------------------------------------------------------


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def nodes_table(view: JobView) -> list[dict[str, Any]]:
    """The contract's ``nodes`` list (name, status, first_failure_time, summary) with a few extra keys."""
    rows: list[dict[str, Any]] = []
    diffs: dict[str, list[str]] = {}
    for d in view.env_diffs:
        diffs.setdefault(d["node"], []).append(f"{d['key']}={d['value']} (majority {d['majority']})")
    for r in view.records:
        first = view.firsts.get(r.folder)
        status = "failed" if r.data.get("status") == "failed" else "ok"
        summary = str(r.data.get("summary") or "")
        if first is not None:
            role = "symptom" if first.symptom else "failure"
            summary = (
                f"{role} on rank {first.ev.get('rank')}: {first.ev.get('excerpt', '')[:200]}"
                if first.ev.get("rank") is not None
                else f"{role}: {first.ev.get('excerpt', '')[:200]}"
            )
        elif status == "ok":
            summary = summary or "exited cleanly"
        row = {
            "name": r.name,
            "status": status,
            "first_failure_time": iso(first.time) if first is not None and status == "failed" else None,
            "summary": summary,
            "host": r.host,
            "folder": r.folder,
            "rank": first.ev.get("rank") if first is not None else None,
            "clock_offset_s": round(r.offset, 3),
            "clock_source": r.offset_source,
        }
        flags = list(r.flags)
        if diffs.get(r.folder):
            flags.append(f"environment differs: {', '.join(diffs[r.folder][:4])}")
        if view.first is not None and view.first.record is r and not view.lost_node_first:
            flags.insert(0, "first failure of the job")
        if flags:
            row["flags"] = flags
        rows.append(row)
    for u in view.unfinished:
        rows.append(
            {
                "name": u["name"],
                "status": "missing",
                "first_failure_time": None,
                "folder": u["folder"],
                "summary": f"started{' on ' + str(u['host']) if u.get('host') else ''} at {iso(u.get('start_time'))} "
                "and never wrote its record: its run died with the node, was killed, or is still running",
                "host": u.get("host"),
                "rank": None,
            }
        )
    for m in view.missing:
        rows.append(
            {
                "name": m["name"],
                "status": "missing",
                "first_failure_time": None,
                "summary": m["why"],
                "host": None,
                "rank": None,
            }
        )
    for s in view.skipped:
        rows.append(
            {
                "name": s["folder"],
                "status": "missing",
                "first_failure_time": None,
                "summary": f"record skipped: {s['reason']}",
                "host": None,
                "rank": None,
                "folder": s["folder"],
            }
        )
    return rows


def merge(job_dir: str | Path) -> Diagnosis:
    """The merged diagnosis of a job folder (``DIR/nodes/*/node.json``). Raises ValueError when the folder
    holds no node record and no claim at all (nothing to merge)."""
    view = read_job(job_dir)
    if not view.records and not view.unfinished:
        why = "; ".join(s["reason"] for s in view.skipped[:3]) or "no node folders"
        raise ValueError(f"{Path(job_dir) / 'nodes'}: no readable node record ({why})")
    if view.lost_node_first:
        diag = _lost_node_diagnosis(view)
    elif view.first is not None:
        diag = _from_first_node(view)
    else:
        diag = Diagnosis(
            summary=f"no failure recorded on any of the {len(view.records)} nodes", profile=FailureProfile()
        )
    _add_job_context(diag, view)
    return diag


def _from_first_node(view: JobView) -> Diagnosis:
    first = view.first
    assert first is not None
    rec = first.record
    report = _json(view.job_dir / "nodes" / rec.folder / "report.json") or {}
    diag = _diagnosis_from_report(report)
    ev = first.ev
    src = f"nodes/{rec.folder}/{ev.get('source')}"
    diag.profile.first_failure = NodeFailurePoint(
        src, ev.get("line"), str(ev.get("excerpt", ""))[:1000], host=rec.name, rank=ev.get("rank")
    )
    _demote_symptom_causes(diag)
    if ev.get("category") == "hardware" and (not diag.root_causes or diag.root_causes[0].category != "hardware"):
        diag.root_causes.insert(
            0,
            RootCause(
                "hardware.node_fault",
                "hardware",
                0.7,
                f"a hardware fault on {rec.name}: {str(ev.get('excerpt', ''))[:200]}",
                [Evidence("direct", src, str(ev.get("excerpt", ""))[:400])],
            ),
        )
    where = f"host {rec.name}" + (f" rank {ev.get('rank')}" if ev.get("rank") is not None else "")
    when = f" at {iso(first.time)}" if first.time_source != "run end" else ""
    n_sym = len({e.record.folder for e in view.firsts.values() if e.symptom and e.record is not rec})
    kind = "symptom" if first.symptom else "failure"
    head = diag.summary if report else f"{ev.get('excerpt', '')[:160]}"
    tail = f"; {n_sym} other node(s) show only the cascade" if n_sym else ""
    diag.summary = f"{head} — first {kind} on {where}{when}{tail}"
    if diag.root_causes:
        diag.root_causes[0].evidence.insert(
            0,
            Evidence(
                "direct",
                f"nodes/{rec.folder}/{NODE_FILE}",
                f"{where} failed first{when} (time from the {first.time_source}; clock corrected by {-rec.offset:+.2f} s "
                f"from its {rec.offset_source})",
            ),
        )
    if first.symptom:
        diag.notes.append(
            "no initiating event was recorded on any node: the first failure shown is itself a symptom; "
            "collect the kernel logs of the nodes and the stderr of the ranks that exited first"
        )
    return diag


def _lost_node_diagnosis(view: JobView) -> Diagnosis:
    lost = [u["name"] for u in view.unfinished] + [m["name"] for m in view.missing]
    host = lost[0]
    first_sym = view.first_symptom
    ev = [
        Evidence(
            "direct",
            "nodes/",
            f"{name}: no node record (expected {view.expected or '?'} nodes, {len(view.records)} wrote one)",
        )
        for name in lost[:8]
    ]
    if first_sym is not None:
        ev.append(
            Evidence(
                "direct",
                f"nodes/{first_sym.record.folder}/{first_sym.ev.get('source')}",
                f"first symptom elsewhere: {str(first_sym.ev.get('excerpt', ''))[:300]}",
                first_sym.ev.get("line"),
            )
        )
    causes = [
        RootCause(
            "hardware.node_lost",
            "hardware",
            0.55,
            f"node {host} went down during the job (power, kernel panic, hardware fault): it never wrote its record "
            "while every other node shows only the cascade",
            ev,
            [
                ValidationCheck(
                    "node-records",
                    "passed",
                    f"{len(view.records)} of {view.expected or len(view.records) + len(lost)} "
                    "nodes wrote a record; the others are named as missing",
                )
            ],
            [_actions().get("lost", "").format(host=host)],
        ),
        RootCause(
            "communication.node_unreachable",
            "communication",
            0.25,
            f"node {host} lost its network: its ranks could not reach the others nor the shared folder",
            list(ev[:2]),
            fix_hints=["check the node's links and switch port counters (ip -s link, ibstat)"],
        ),
        RootCause(
            "resource.host_oom",
            "resource",
            0.15,
            f"the host OOM killer or a hung file system took down node {host}'s whole run",
            list(ev[:1]),
            fix_hints=["look for 'Out of memory: Killed process' in that node's kernel log"],
        ),
    ]
    excerpt = f"node {host} never wrote its record"
    prof = FailureProfile(
        stage="runtime",
        type="crash",
        stack="other",
        domains=["hardware", "communication"],
        confidence=0.55,
        first_failure=NodeFailurePoint("nodes/", None, excerpt, host=host, rank=None),
    )
    summary = (
        f"crash at runtime: node {host} went away without writing its record; the other "
        f"{len(view.records)} node(s) show only the cascade [hardware, 55%]"
    )
    return Diagnosis(summary=summary, profile=prof, root_causes=causes)


def _diagnosis_from_report(rep: dict[str, Any]) -> Diagnosis:
    """The initiating node's own diagnosis (its ``report.json``), back into the model through the one way
    back (``Diagnosis.from_dict``); the node's private keys (its cwd, its reruns) stay with the node."""
    diag = Diagnosis.from_dict(rep)
    diag.extra = {}
    if not (isinstance(rep.get("summary"), str) and rep["summary"]):
        diag.summary = "no diagnosis on the first failing node"
    return diag


def _demote_symptom_causes(diag: Diagnosis) -> None:
    """A cause whose every piece of direct evidence is a symptom line (a collective timeout) goes last."""

    def symptom_only(c: RootCause) -> bool:
        direct = [e for e in c.evidence if e.kind == "direct"]
        return bool(direct) and all(is_symptom(e.excerpt) for e in direct)

    keep = [c for c in diag.root_causes if not symptom_only(c)]
    demoted = [c for c in diag.root_causes if symptom_only(c)]
    for c in demoted:
        c.confidence = round(c.confidence * 0.5, 3)
    diag.root_causes = keep + demoted


def _add_job_context(diag: Diagnosis, view: JobView) -> None:
    acts = _actions()
    first = view.first
    host = first.record.name if first is not None and not view.lost_node_first else None
    top = diag.root_causes[0] if diag.root_causes else None
    extra_actions: list[str] = []
    if view.lost_node_first:
        lost = [u["name"] for u in view.unfinished] + [m["name"] for m in view.missing]
        extra_actions.append(acts.get("lost", "").format(host=lost[0]))
    if host and top is not None and top.category == "hardware":
        extra_actions.append(acts.get("hardware", "").format(host=host, reason=top.id))
    if view.first_symptom is not None and not (first is not None and first.symptom):
        extra_actions.append(acts.get("cascade", ""))
    if view.env_diffs:
        hosts = sorted({d["node"] for d in view.env_diffs})
        keys = sorted({d["key"] for d in view.env_diffs})
        extra_actions.append(acts.get("environment", "").format(keys=", ".join(keys[:4]), hosts=", ".join(hosts[:6])))
        ev = [
            Evidence(
                "direct",
                f"nodes/{d['node']}/{NODE_FILE}",
                f"{d['node']}: {d['key']} = {d['value']} (majority: {d['majority']})",
            )
            for d in view.env_diffs[:8]
        ]
        on_first = (
            host is not None and any(d["node"] == first.record.folder for d in view.env_diffs) if first else False
        )
        cause = RootCause(
            "environment.differs_across_nodes",
            "environment",
            0.45 if on_first else 0.2,
            f"{len(hosts)} node(s) run a different environment from the majority: {', '.join(hosts[:6])}",
            ev,
            fix_hints=[acts.get("environment", "").format(keys=", ".join(keys[:4]), hosts=", ".join(hosts[:6]))],
        )
        diag.root_causes.append(cause)
        diag.notes.append(
            f"environment differs from the majority on {', '.join(hosts[:10])}: "
            + "; ".join(f"{d['node']} {d['key']}={d['value']}" for d in view.env_diffs[:6])
        )
    diag.next_actions = [a for a in extra_actions if a] + [a for a in diag.next_actions if a not in extra_actions]
    diag.next_actions = diag.next_actions[:6]
    for s in view.skipped:
        diag.notes.append(f"skipped: {s['reason']}")
    diag.notes.extend(view.notes)
    diag.notes = list(dict.fromkeys(diag.notes))
    nodes = nodes_table(view)
    diag.extra["nodes"] = nodes
    diag.extra["job"] = {
        "dir": str(view.job_dir),
        "id": view.job_id,
        "expected_nodes": view.expected,
        "expected_source": view.expected_source,
        "records": len(view.records),
        "missing": sum(1 for n in nodes if n["status"] == "missing"),
        "first_failing_host": (None if view.lost_node_first else host)
        or (diag.profile.first_failure.host if isinstance(diag.profile.first_failure, NodeFailurePoint) else None),
        "skipped": view.skipped,
    }
