"""Does the diagnosis survive the ways a real log reaches faildiag? A metamorphic check (run on demand, not in CI).

A failure log is rarely read as the program printed it. A CI service, a container runtime, a launcher or a
web page has usually rewritten every line on the way: GitHub Actions and ``kubectl logs --timestamps`` put
an RFC 3339 time before each line, containerd's CRI log files add the stream and a partial-line flag,
Jenkins' Timestamper brackets the time, journald names the host and the unit,
``srun --label`` and ``torchrun`` name the rank, a terminal keeps its colour codes, an issue thread quotes
the paste or escapes it as HTML, Windows ends lines with CRLF. None of this changes what failed, so none
of it should change the diagnosis.

For each train log of the thread corpus (``split.json``; dev and calib logs are never read) and each such
rewrite, the engine diagnoses the rewritten log and the result is compared with its diagnosis of the
original: the profile's type and stage, the top cause's category and the rule behind it. No label is
needed for that comparison; the labels only add how often the top cause stays right. Printed per rewrite:
how many diagnoses stayed the same, and the train top-1 before and after (``--names`` lists the logs whose
diagnosis moved, to find what the parser does not yet tolerate).

    PYTHONPATH=. .venv/bin/python bench/robustness.py [--only NAME] [--names] [--limit N]
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.accuracy import THREADS, Case, thread_cases  # noqa: E402
from bench.audit_extract import SHAPES  # noqa: E402


def per_line(shape: Callable[[str], str]) -> Callable[[str], str]:
    """A launcher's or carrier's shape (``bench/audit_extract.py`` SHAPES) put on every line of a log."""

    def rewrite(text: str) -> str:
        return "".join(shape(line) + "\n" for line in text.splitlines())

    return rewrite


def _ansi(text: str) -> str:
    """A colour terminal's copy: pytest/rich colour the error words, tracebacks' file names and headers."""
    text = re.sub(r"(\w*(?:Error|Exception|FAILED|ERROR)\b)", "\x1b[1;31m\\1\x1b[0m", text)
    return re.sub(r'(File ")', "\x1b[35m\\1\x1b[0m", text)


def _dedent(text: str) -> str:
    """A paste whose leading whitespace was lost (chat tools, some issue forms)."""
    return "".join(line.lstrip(" \t") for line in text.splitlines(keepends=True))


def _wrap(width: int) -> Callable[[str], str]:
    """A terminal copy with hard wraps: each long line broken every ``width`` characters."""

    def rewrite(text: str) -> str:
        out = []
        for line in text.splitlines():
            out += [line[i : i + width] for i in range(0, len(line), width)] or [""]
        return "\n".join(out) + "\n"

    return rewrite


def _json_lines(records: Iterable[dict[str, object]]) -> str:
    """Records as JSON lines, compact, as a log store writes them (one per line, non-ASCII text kept)."""
    return "\n".join(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) for rec in records) + "\n"


def _at(i: int, fraction: str) -> str:
    """The ``i``-th record's RFC 3339 time (a second apart), with the fraction its store writes."""
    return f"2024-05-14T09:31:{i % 60:02d}.{fraction}Z"


def _docker_json(text: str) -> str:
    """Docker's json-file log of a container's stderr: each line a JSON record, escaped as Go's encoder does
    (``<``, ``>`` and ``&`` as ``\\u003c``, ``\\u003e``, ``\\u0026``)."""
    out = _json_lines(
        {"log": line + "\n", "stream": "stderr", "time": _at(i, "123456789")}
        for i, line in enumerate(text.splitlines())
    )
    return out.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _journald_json(text: str) -> str:
    """``journalctl -u train.service -o json``: a systemd service's output, each line one journal entry as a JSON
    object (the cursor and the microsecond time first, the line in MESSAGE, the host and unit after it)."""
    out = []
    for i, line in enumerate(text.splitlines()):
        rec = {
            "__CURSOR": f"s=6f1c;i={i + 0x4F2A:x};b=91e3;m={i:x};t=61f2;x=2b7e",
            "__REALTIME_TIMESTAMP": str(1715679067123456 + i * 1000),
            "__MONOTONIC_TIMESTAMP": str(98765432 + i * 1000),
            "_HOSTNAME": "gpu-node-07",
            "SYSLOG_IDENTIFIER": "python3",
            "_PID": "48121",
            "PRIORITY": "6",
            "MESSAGE": line,
            "_SYSTEMD_UNIT": "train.service",
        }
        out.append(json.dumps(rec, ensure_ascii=False, separators=(", ", " : ")).replace("{", "{ ", 1)[:-1] + " }")
    return "\n".join(out) + "\n"


def _cloud_logging(text: str) -> str:
    """A cloud log sink's export (Google Cloud Logging to Cloud Storage, as a Vertex AI or GKE job's output is
    kept): each line of the container's output one JSON entry, its text in ``textPayload``."""
    return _json_lines(
        {
            "insertId": f"{0x1A2B3C + i:x}",
            "labels": {"ml.googleapis.com/trial_id": "", "compute.googleapis.com/resource_name": "gke-pool-1"},
            "logName": "projects/p/logs/workerpool0-0",
            "receiveTimestamp": _at(i, "456789"),
            "resource": {"type": "ml_job", "labels": {"job_id": "7184", "task_name": "workerpool0-0"}},
            "severity": "ERROR" if "Error" in line else "INFO",
            "textPayload": line,
            "timestamp": _at(i, "123456"),
        }
        for i, line in enumerate(text.splitlines())
    )


def _cloud_logging_structured(text: str) -> str:
    """The same sink's export when the job logs JSON (Google Cloud Logging parses a container's JSON line, or
    google-cloud-logging's StructuredLogHandler writes one, into ``jsonPayload``): the text in its ``message``."""
    return _json_lines(
        {
            "insertId": f"{0x1A2B3C + i:x}",
            "jsonPayload": {"message": line, "python_logger": "train", "python_thread": "MainThread"},
            "logName": "projects/p/logs/stdout",
            "resource": {"type": "k8s_container", "labels": {"pod_name": "trainer-0", "container_name": "train"}},
            "severity": "ERROR" if "Error" in line else "INFO",
            "timestamp": _at(i, "123456"),
        }
        for i, line in enumerate(text.splitlines())
    )


def _cloud_logging_exceptions(text: str) -> str:
    """The sink's export of a GKE job: the logging agent's exception detection joins a Python traceback's lines
    (``Traceback (most recent call last):`` down to its exception line, the first one not indented) into one
    entry, its text holding them with their newlines; every other line is an entry of its own."""
    entries: list[str] = []
    block: list[str] = []
    for line in text.splitlines():
        if block:
            block.append(line)
            if line.strip() and line[:1] not in (" ", "\t"):
                entries.append("\n".join(block))
                block = []
        elif line.startswith("Traceback (most recent call last):"):
            block = [line]
        else:
            entries.append(line)
    if block:
        entries.append("\n".join(block))
    return _json_lines({"textPayload": entry, "timestamp": _at(i, "123456")} for i, entry in enumerate(entries))


def _filebeat(text: str) -> str:
    """A log shipped by Elastic's Filebeat and exported from Elasticsearch (Kibana's CSV/NDJSON export,
    ``elasticdump``): each line an ECS document, its text in ``message``, its time in ``@timestamp``, the file it
    was read from under ``log`` (an object, with the line's byte offset in it)."""
    lines = text.splitlines()
    offsets = list(accumulate((len(line.encode()) + 1 for line in lines), initial=0))
    return _json_lines(
        {
            "@timestamp": _at(i, "123"),
            "log": {"file": {"path": "/var/log/train/rank0.log"}, "offset": offsets[i]},
            "message": line,
            "host": {"name": "gpu-node-07"},
            "agent": {"type": "filebeat", "version": "8.13.4"},
            "ecs": {"version": "8.0.0"},
        }
        for i, line in enumerate(lines)
    )


def _loki(text: str) -> str:
    """Grafana Loki's ``logcli query --output=jsonl``: each line with its stream's labels, its time and the text in
    ``line``."""
    return _json_lines(
        {
            "labels": {"job": "train", "pod": "trainer-0", "namespace": "ml"},
            "line": line,
            "timestamp": _at(i, "123456789"),
        }
        for i, line in enumerate(text.splitlines())
    )


def _windows(text: str) -> str:
    """The same run on Windows: each absolute POSIX path a traceback or pytest names as a drive path with
    backslashes (``/usr/lib/python3.10/site-packages/torch/x.py`` -> ``C:\\usr\\lib\\...\\x.py``)."""
    return re.sub(r"(?<![\w.:/])/(?:[\w.+-]+/)+[\w.+-]+\.py\b", lambda m: "C:" + m[0].replace("/", "\\"), text)


# each carrier's and launcher's envelope, as the parse tests put it on real output (``bench/audit_extract.py``)
CARRIED = {
    "gha-timestamps": "gha",  # GitHub Actions' raw log: a 7-digit fraction and Z before every line
    "gitlab-timestamps": "gitlab",  # GitLab Runner 17+'s raw job log: time, stream number, O/E and a space
    "kubectl-timestamps": "kubectl",  # kubectl logs --timestamps / docker logs -t: RFC 3339 with nanoseconds
    "cri-log": "cri",  # containerd's CRI log file (/var/log/pods/...): time, stream, full/partial flag
    "srun-label": "srun",  # srun --label: the task number and a colon
    "torchrun-rank": "rank",  # torchrun's --tee/--local-ranks-filter prefix
    "jenkins-timestamper": "jenkins",  # Jenkins' Timestamper plugin (its ISO form) and Buildkite: time in brackets
    "obs-build": "obs",  # the Open Build Service's build log: the seconds since the build started, in brackets
    "airflow-task-log": "airflow",  # Airflow's task log: a KubernetesPodOperator's job output, line by line
    "journald": "journald",  # journalctl's short form: month, day, time, host, unit and pid
    "markdown-quote": "quote",
    "kubectl-prefix": "kubectl-prefix",  # kubectl logs --prefix: [pod/name/container]
    "mpirun-tag": "mpirun",  # Open MPI's --tag-output: [job,rank]<stream>:
    "ray-worker": "ray",  # Ray's driver: each worker's lines behind its name and pid
    "compose": "compose",  # docker compose: the container's name and a bar
    "pdsh-host": "pdsh",  # pdsh / DeepSpeed's pdsh runner: the host and a colon
}
REWRITES: dict[str, Callable[[str], str]] = {
    **{name: per_line(SHAPES[shape]) for name, shape in CARRIED.items()},
    "docker-json-file": _docker_json,
    "journald-json": _journald_json,
    "cloud-logging-json": _cloud_logging,
    "cloud-logging-structured": _cloud_logging_structured,
    "filebeat-ecs": _filebeat,
    "loki-jsonl": _loki,
    "cloud-logging-exceptions": _cloud_logging_exceptions,
    "crlf": lambda t: t.replace("\r\n", "\n").replace("\n", "\r\n"),
    "ansi-colour": _ansi,
    "html-escaped": lambda t: html.escape(t, quote=True),
    "no-indent": _dedent,
    "tab-indent": lambda t: re.sub(r"(?m)^((?:    )+)", lambda m: "\t" * (len(m[1]) // 4), t),
    "wrapped-120": _wrap(120),
    "wrapped-80": _wrap(80),  # the default width of a terminal window
    # a copy from a rendered page (a forum, a notebook's HTML, a chat client): runs of spaces arrive as no-break
    # spaces (U+00A0), as browsers serialise the &nbsp; a page needs to keep them
    "nbsp-spaces": lambda t: re.sub(r"(?<= ) |  ", lambda m: "\u00a0" * len(m[0]), t),
    "windows-paths": _windows,
    # another process writing to the same terminal or file: one of its lines after every fifth line
    "interleaved": lambda t: "".join(
        line + ("2024-05-14 09:31:07,123 - INFO - data worker 3: prefetched 512 samples\n" if i % 5 == 4 else "")
        for i, line in enumerate(t.splitlines(keepends=True))
    ),
    # a typographer's quotes (SmartyPants, markdown-it's typographer on Discourse forums, a document editor):
    # every straight quote set curly, paired ones as opening and closing, a lone one as closing
    "smart-quotes": lambda t: (
        re.sub(r'"([^"\n]*)"', "\u201c\\1\u201d", t).replace('"', "\u201d").replace("'", "\u2019")
    ),
}


@dataclass
class Outcome:
    type: str
    stage: str
    category: str
    rule: str
    right: bool


def diagnose(case: Case, text: str | None, tmp: Path) -> Outcome:
    from pytest_faildiag.engine.api import diagnose as engine

    path = case.files[0]
    if text is not None:
        path = tmp / path.name
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = engine([str(path)], exit_code=case.exit_code, command=case.command)
    top = d.root_causes[0] if d.root_causes else None
    cat = top.category if top else "-"
    return Outcome(d.profile.type, d.profile.stage, cat, top.rule if top else "-", cat == case.category)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", default=[], help="only this rewrite (repeatable)")
    ap.add_argument("--names", action="store_true", help="list the train logs whose diagnosis moved")
    ap.add_argument("--limit", type=int, default=0, help="only the first N train logs")
    a = ap.parse_args(argv)
    cases = [c for c in thread_cases(THREADS) if c.label.get("set") == "train" and len(c.files) == 1]
    if a.limit:
        cases = cases[: a.limit]
    names = a.only or list(REWRITES)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = {c.name: diagnose(c, None, tmp) for c in cases}
        right0 = sum(o.right for o in base.values())
        print(f"train logs: {len(cases)}, top-1 right as printed: {right0}")
        print(f"{'rewrite':20} {'same type':>10} {'same stage':>10} {'same top':>9} {'same rule':>10} {'top-1':>9}")
        for name in names:
            fn = REWRITES[name]
            same = [0, 0, 0, 0]
            right = 0
            moved: list[str] = []
            for c in cases:
                text = c.files[0].read_bytes().decode("utf-8", "surrogateescape")
                o, b = diagnose(c, fn(text), tmp), base[c.name]
                flags = [o.type == b.type, o.stage == b.stage, o.category == b.category, o.rule == b.rule]
                same = [s + f for s, f in zip(same, flags, strict=True)]
                right += o.right
                if not all(flags):
                    moved.append(
                        f"    {c.name}: {b.type}/{b.stage} {b.category} {b.rule} -> "
                        f"{o.type}/{o.stage} {o.category} {o.rule}"
                    )
            n = len(cases)
            print(f"{name:20} " + " ".join(f"{100 * s / n:9.1f}%" for s in same) + f" {right:4d} ({right - right0:+d})")
            if a.names:
                print("\n".join(moved))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
