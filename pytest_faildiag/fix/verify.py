"""Verify an applied fix against the original symptom, and record the outcome in report.json.

The original command is rerun in the original folder (with the fix's environment variables). Its outcome
is compared with the snapshot's failure point: exit 0 without the original failure line means "the
original failure no longer reproduces" (passed); otherwise the new output is diagnosed by the engine and
compared by top cause and failure line: "still fails at the same place" or "fails differently now"
(both failed). A fix is never called confirmed unless this passed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from ..engine.snapshot import atomic_write, dump_json
from ..redact import redact_obj, redact_text
from .context import FixContext, read_report

RERUN_LOG = "fix/rerun.log"
MAX_OUTPUT = 8 * 1024 * 1024

OUTCOME_TEXT = {
    "no_longer_reproduces": "the original failure no longer reproduces",
    "same_place": "still fails at the same place",
    "fails_differently": "fails differently now",
    "timed_out": "the rerun did not finish in time",
    "not_run": "the rerun could not be started",
}


@dataclass
class Verification:
    status: str  # "passed" | "failed" | "not_run"
    outcome: str  # a key of OUTCOME_TEXT
    exit_code: int | None
    duration_s: float
    after: dict[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return OUTCOME_TEXT.get(self.outcome, self.outcome)


def _norm(text: str) -> str:
    """A failure line without its numbers, quotes and spacing: 'Target 9 …' and 'Target 7 …' are one place."""
    return re.sub(r"\s+", " ", re.sub(r"0x[0-9a-f]+|\d+|['\"`]", "", text.lower())).strip()


def _run(command: str, cwd: str, env: dict[str, str], timeout: float) -> tuple[int | None, str, bool]:
    try:
        proc = subprocess.Popen(command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return None, f"cannot start: {exc}", False
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        timed_out = True
    except BaseException:  # Ctrl-C: the rerun runs in its own session and would outlive us
        _kill_group(proc)
        proc.wait()
        raise
    text = out[-MAX_OUTPUT:].decode("utf-8", "replace")
    return proc.returncode, text, timed_out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def rerun_and_compare(ctx: FixContext, env_overrides: dict[str, str], *, timeout: float = 900.0) -> Verification:
    """Rerun ``ctx.command`` in ``ctx.cwd`` and compare with the snapshot's failure. Writes the rerun's
    output (redacted) to ``SNAPSHOT/fix/rerun.log``."""
    if not ctx.command:
        return Verification("not_run", "not_run", None, 0.0, {"reason": "no command to rerun"})
    env = dict(os.environ)
    env.update(env_overrides)
    t0 = time.monotonic()
    rc, output, timed_out = _run(ctx.command, str(ctx.cwd), env, timeout)
    duration = round(time.monotonic() - t0, 2)
    atomic_write(ctx.snapshot / RERUN_LOG, redact_text(output))
    after: dict[str, Any] = {"exit_code": rc, "log": RERUN_LOG, "duration_s": duration}
    if rc is None:
        after["reason"] = output
        return Verification("not_run", "not_run", None, duration, after)
    orig_ff = str(ctx.first_failure.get("excerpt") or "")
    if timed_out:
        return Verification("failed", "timed_out", rc, duration, after)
    if rc == 0 and not (orig_ff and _norm(orig_ff) and _norm(orig_ff) in _norm(output)):
        return Verification("passed", "no_longer_reproduces", rc, duration, after)
    new_top, new_ff = _rediagnose(ctx, output, rc)
    after.update({"top_cause": new_top, "first_failure": new_ff})
    orig_top = ctx.causes[0].get("id") if ctx.causes else None
    same = (_norm(orig_ff) == _norm(str((new_ff or {}).get("excerpt") or ""))) if orig_ff else False
    if not same and orig_top and new_top == orig_top and not str(orig_top).startswith("unknown."):
        same = True
    return Verification("failed", "same_place" if same else "fails_differently", rc, duration, after)


def _rediagnose(ctx: FixContext, output: str, rc: int) -> tuple[str | None, dict[str, Any] | None]:
    from ..engine import diagnose
    from ..parse.logread import InputError

    try:
        diag = diagnose(texts={"fix/rerun.log": output or "(no output)"}, exit_code=rc, command=ctx.command)
    except (InputError, OSError, ValueError):
        return None, None
    ff = diag.profile.first_failure.to_dict() if diag.profile.first_failure else None
    return (diag.top.id if diag.top else None), ff


def before_evidence(ctx: FixContext) -> dict[str, Any]:
    """The original failure as the snapshot recorded it (what the verification is compared with)."""
    profile = ctx.report.get("profile") or {}
    return {"exit_code": profile.get("exit_code"), "first_failure": ctx.first_failure or None,
            "top_cause": ctx.causes[0].get("id") if ctx.causes else None}


MD_HEADING = "\n## Fix mode\n"


def _update_markdown(ctx: FixContext, fix: dict[str, Any]) -> None:
    """Keep report.md telling the same story as report.json: one "Fix mode" section, the latest attempt."""
    path = ctx.snapshot / "report.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return
    text = text.split(MD_HEADING, 1)[0].rstrip("\n") + "\n"
    lines = [MD_HEADING.strip("\n"), "",
             f"- fix `{fix.get('id')}`: {fix.get('summary')}",
             f"- applied: {fix.get('applied')}; verification: **{fix.get('verification')}** ({fix.get('outcome')}); "
             f"rolled back: {fix.get('rolled_back')}"]
    for c in fix.get("changes") or []:
        if c.get("diff"):
            lines += ["", "```diff", str(c["diff"]).rstrip("\n"), "```"]
        else:
            lines.append(f"- change: {c.get('description')}")
    after = fix.get("after") or {}
    if isinstance(after.get("first_failure"), dict):
        lines.append(f"- after the fix the run fails at: `{after['first_failure'].get('excerpt', '')}`")
    atomic_write(path, text + "\n" + "\n".join(lines) + "\n")


def record_fix(ctx: FixContext, record: dict[str, Any]) -> None:
    """Add ``"fix": record`` to ``SNAPSHOT/report.json`` (re-read first, redacted, written atomically) and
    a "Fix mode" section to ``report.md``."""
    from filelock import FileLock, Timeout

    def write() -> None:
        try:
            report = read_report(ctx.snapshot)
        except ValueError:
            report = dict(ctx.report)
        report["fix"] = redact_obj(record)
        atomic_write(ctx.snapshot / "report.json", dump_json(report))
        _update_markdown(ctx, report["fix"])

    try:  # the snapshot writer's lock: a concurrent re-diagnosis and this update do not lose each other's work
        with FileLock(str(ctx.snapshot / ".faildiag.lock"), timeout=30):
            write()
    except Timeout:
        write()
