"""`faildiag recover [--out DIR] [--format text|json]`: name and diagnose the test a killed pytest session
was running, from the journal ``pytest --faildiag`` keeps in ``DIR/journal.jsonl``.

A session killed outright (SIGKILL, the OOM killer, ``os._exit``, a CI cancel) never reaches its session
end; the journal's last ``start`` without a ``finish`` names the test, and the output files its commands
journaled (and a stack dump, when a hang watchdog was armed) are the evidence. Snapshots go to
``DIR/<test-slug>-killed/``. The next ``pytest --faildiag`` run does the same on its own at start-up.

The journal names the files to read; they are read only inside DIR, the project, pytest's temporary
folders and the folders given with ``--root`` (a crafted journal naming ``~/.aws/credentials`` gets a note).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="faildiag-out", help="the pytest --faildiag output folder (default ./faildiag-out)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="also read journaled output files under DIR (e.g. pytest's --basetemp); repeatable",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..capture.oomkill import dmesg_oom_lines
    from ..cli import UsageError
    from ..engine import diagnose, render_text, write_snapshot
    from ..fsio import ReadRefused, check_regular
    from ..integrations.pytest_journal import JOURNAL, PREVIOUS, slugify
    from ..integrations.pytest_journal_replay import dead_test_texts, dead_tests, read_events
    from ..parse.logread import InputError

    out = Path(args.out)
    journal = out / JOURNAL if (out / JOURNAL).exists() else out / PREVIOUS
    if not journal.exists():
        raise UsageError(f"{out}: no journal.jsonl (was pytest run with --faildiag --faildiag-out {out}?)")
    try:
        check_regular(journal)
    except OSError as exc:
        raise UsageError(str(exc) if isinstance(exc, ReadRefused) else f"{journal}: {exc.strerror}") from None
    dead = dead_tests(read_events(journal))
    results = []
    kernel_oom = dmesg_oom_lines({d.pid for d in dead}) if dead else {}
    for d in dead:
        texts = dead_test_texts(out, d, extra_roots=args.root, kernel_oom=kernel_oom)
        try:
            diag = diagnose(texts=texts, stack="pytest", command=f"pytest {shlex.quote(d.nodeid)}")
        except InputError as exc:  # pragma: no cover - the journal text is always there
            raise UsageError(str(exc)) from None
        slug = slugify(d.nodeid, "killed")
        try:
            write_snapshot(diag, out / slug, extra_files={f"evidence/{k}": v for k, v in texts.items()})
        except OSError as exc:
            print(f"faildiag: warning: snapshot not written to {out / slug}: {exc}", file=sys.stderr)
        top = diag.top
        results.append(
            {
                "nodeid": d.nodeid,
                "pid": d.pid,
                "worker": d.worker,
                "session_ended": d.session_ended,
                "slug": slug,
                "summary": diag.summary,
                "category": top.category if top else "unknown",
                "type": diag.profile.type,
                "cause_id": top.id if top else None,
                "_text": render_text(diag),
            }
        )
    if args.format == "json":
        public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in results]
        sys.stdout.write(json.dumps({"journal": str(journal), "killed": public}, indent=2) + "\n")
        return 0
    if not results:
        print(f"faildiag: {journal}: every test that started also finished; nothing to recover")
        return 0
    from ..sanitize import display

    for r in results:  # the node id comes from the journal, a file in the output folder
        who = f"process {r['pid']}" + (f" ({r['worker']})" if r["worker"] else "")
        print(display(f"faildiag: {who} died while running {r['nodeid']}", one_line=True))
        print(r["_text"])
        print(f"  snapshot: {out / r['slug']}")
    return 0
