"""A failed or hung run turned into a Diagnosis (the engine is imported here, only when a run failed)."""

from __future__ import annotations

import os
from typing import Any

from ..store import WATCHDOG_FILE, read_last_green
from .options import RunOptions, RunResult, command_text


def diagnose_result(result: RunResult, opts: RunOptions, lock: dict[str, Any] | None = None):
    """Turn a failed or hung run into a Diagnosis (engine imported here, only when needed)."""
    from ..engine import diagnose
    from ..model import Evidence
    from ..parse.logread import InputError

    texts: dict[str, str] = {}
    if result.hung:
        texts[WATCHDOG_FILE] = result.watchdog_text()
    texts.update(result.stacks)
    logs = [str(opts.out / "logs" / n) for n in ("stdout.log", "stderr.log")]
    extra: list[Evidence] = []
    context: dict[str, Any] = {"timeline": result.timeline}
    if result.oom is not None:
        context["oom_killer"] = result.oom
        if result.oom.get("killed"):
            extra.append(Evidence("direct", "oom killer", result.oom["detail"]))
    green = read_last_green(opts.out)
    if green:
        context["last_green_lock"] = green
    context["extra_evidence"] = extra
    kwargs = dict(
        texts=texts,
        exit_code=None if result.hung else result.exit_status,
        command=command_text(result.command),
        lock=lock,
        context=context,
        probe_machine=True,
        cwd=os.getcwd(),
        out_dir=opts.out,
        factory_root=opts.factory_root,
    )
    try:
        diag = diagnose([*logs, *result.collected], **kwargs)
    except InputError:  # a collected path was unusable (binary, unreadable): our own logs still are
        diag = diagnose(logs, **kwargs)
    if result.hung:
        _name_every_rank(diag)
        diag.profile.type = "hang"
        diag.profile.exit_code = result.exit_status
        stopped = next((n for n in result.notes if n.startswith("the run was stopped with")), "")
        diag.profile.signal = "SIGKILL" if "SIGKILL" in stopped else "SIGTERM"
    diag.notes.extend(result.notes)
    return diag


def _name_every_rank(diag) -> None:
    """A hang's top cause names where one rank waits; add where each other rank was (the odd one out is the
    usual culprit)."""
    from ..model import Evidence

    if not diag.root_causes:
        return
    top = diag.root_causes[0]
    have = {e.excerpt for e in top.evidence}
    for st in (diag.extra.get("stuck") or [])[:16]:
        if st.get("rank") is not None and st["detail"] not in have:
            top.evidence.append(Evidence("direct", st["source"], st["detail"], st.get("line")))
            have.add(st["detail"])
