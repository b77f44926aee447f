"""Verify an applied fix against the original symptom, and record the outcome in report.json.

The original command is rerun in the original folder (with the fix's environment variables). Its outcome
is compared with the snapshot's failure point: the exception type and the innermost frame of the user's
code (file:line), and the first-failure line. "The original failure no longer reproduces" (passed) needs
all of: exit 0, the original failure line absent, and proof that the rerun reached the original failure
point (a line probe saw that line start, see ``probe``; for a pytest snapshot, pytest reporting the
failed test as PASSED). Exit 0 without that proof is "did not reach the original failure point" (failed):
a command that no longer runs the failing code proves nothing. Otherwise the new output is diagnosed by
the engine and compared: "still fails at the same place" (same exception at the same frame, same
failure line numbers aside, or same top cause) or "fails differently now" (both failed). A fix is never
called confirmed unless this passed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.snapshot import atomic_write, dump_json
from ..redact import redact_obj, redact_text
from ..sanitize import visible
from .context import FixContext, Frame, parse_frames, read_report
from .paths import PathRefused, not_a_link, private_dir, read_regular
from .probe import start_probe

RERUN_LOG = "fix/rerun.log"
MAX_OUTPUT = 8 * 1024 * 1024

OUTCOME_TEXT = {
    "no_longer_reproduces": "the original failure no longer reproduces",
    "same_place": "still fails at the same place",
    "fails_differently": "fails differently now",
    "timed_out": "the rerun did not finish in time",
    "not_run": "the rerun could not be started",
    "not_reached": "the rerun exited 0 but did not reach the original failure point: not verified",
    "not_confirmed": "the rerun was not run: its command was not recorded by faildiag on this machine and was not confirmed",
}
_EXC_LINE = re.compile(
    r"^(?:E\s+)?(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Fault|Failure))\b(?::|$)", re.M
)


@dataclass
class FailurePoint:
    """Where a run failed: the exception type and the innermost frame of the user's code."""

    exc_type: str | None
    file: str | None
    line: int | None

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "(no frame of the user's code)"

    def same_as(self, other: FailurePoint) -> bool:
        """Same frame, and the same exception type when both are known."""
        if self.file is None or self.file != other.file or self.line != other.line:
            return False
        return (
            self.exc_type is None
            or other.exc_type is None
            or self.exc_type.rsplit(".", 1)[-1] == other.exc_type.rsplit(".", 1)[-1]
        )

    def to_dict(self) -> dict[str, Any]:
        return {"exception": self.exc_type, "file": self.file, "line": self.line}


def _exc_type(text: str) -> str | None:
    found = _EXC_LINE.findall(text)
    return found[-1] if found else None


def original_point(ctx: FixContext) -> FailurePoint:
    """The snapshot's failure point: the first-failure excerpt's exception, the innermost user frame."""
    frame: Frame | None = ctx.failure_frame()
    exc = _exc_type(str(ctx.first_failure.get("excerpt") or "")) or _exc_type(ctx.evidence_text)
    if frame is None or frame.path is None:
        return FailurePoint(exc, None, None)
    return FailurePoint(exc, str(frame.path), frame.line)


def rerun_point(ctx: FixContext, output: str) -> FailurePoint:
    """The failure point the rerun's output shows (innermost user frame of its last traceback)."""
    frames = [f for f in reversed(parse_frames(output, ctx.cwd)) if f.is_user]
    frame = frames[0] if frames else None
    return FailurePoint(
        _exc_type(output), str(frame.path) if frame and frame.path else None, frame.line if frame else None
    )


def _nodeid(ctx: FixContext) -> str | None:
    """The failed test of a pytest snapshot (``test.json`` written next to the report by the plugin)."""
    data = read_regular(ctx.snapshot / "test.json", 64 * 1024)
    try:
        nodeid = json.loads(data or b"null").get("nodeid") if data else None
    except (ValueError, AttributeError):
        return None
    return nodeid if isinstance(nodeid, str) and nodeid and "\n" not in nodeid else None


def _pytest_passed(output: str, nodeid: str | None) -> bool:
    return bool(nodeid) and re.search(rf"^PASSED {re.escape(str(nodeid))}\s*$", output, re.M) is not None


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
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
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


# A foreign command keeps what a Python project needs to find its interpreter and packages, nothing more.
_FOREIGN_KEEP_ENV = ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH")


def _run_foreign(
    command: str, cwd: str, env: dict[str, str], timeout: float
) -> tuple[int | None, str, bool, dict[str, Any]]:
    """A command recorded on another machine (or changed since this machine recorded it) runs, after its own
    confirmation, as untrusted code: allow-listed environment, throw-away HOME, no network, limits, the
    whole process tree killed (``pytest_faildiag.sandbox``). It runs in the project itself, not a copy, since
    it must see the fix. Returns what ``_run`` does plus which protections held."""
    from ..sandbox import run_untrusted

    res = run_untrusted(["/bin/sh", "-c", command], cwd=cwd, timeout_s=timeout, env=env, keep_env=_FOREIGN_KEEP_ENV)
    held = {"held": res.protections_held, "not_held": {k: v for k, v in res.notes.items() if not res.held.get(k)}}
    if res.timed_out:
        return -signal.SIGKILL, res.output, True, held
    if res.error and res.returncode == 127 and not res.output:
        return None, f"cannot start: {res.error}", False, held
    return res.returncode, res.output, False, held


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the rerun's process group at once (``proc.stop_group`` without a grace period)."""
    from ..capture.proc import stop_group

    stop_group(proc, None, kill_wait=0)


def rerun_and_compare(ctx: FixContext, env_overrides: dict[str, str], *, timeout: float = 900.0) -> Verification:
    """Rerun ``ctx.command`` in ``ctx.cwd`` and compare with the snapshot's failure point. Writes the
    rerun's output (redacted) to ``SNAPSHOT/fix/rerun.log``."""
    if not ctx.command:
        return Verification("not_run", "not_run", None, 0.0, {"reason": "no command to rerun"})
    try:
        fix_dir = private_dir(ctx.snapshot / "fix")
        not_a_link(fix_dir / "rerun.log")
    except PathRefused as exc:
        return Verification("not_run", "not_run", None, 0.0, {"reason": visible(str(exc), one_line=True)})
    point = original_point(ctx)
    probe = start_probe(Path(point.file), point.line, fix_dir) if point.file and point.line else None
    nodeid = _nodeid(ctx)
    env = dict(os.environ)
    env.update(env_overrides)
    if probe is not None:
        env.update(probe.env(env))
    if nodeid:  # pytest lists each passed test by id: proof that the failed test ran
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -rA".strip()
    t0 = time.monotonic()
    sandbox: dict[str, Any] | None = None
    try:
        if ctx.command_recorded_here or ctx.command_origin == "option":  # typed by the user or sealed here
            rc, output, timed_out = _run(ctx.command, os.path.realpath(ctx.cwd), env, timeout)
        else:  # confirmed by the user, but written elsewhere: run as untrusted code
            changed = {k: v for k, v in env.items() if os.environ.get(k) != v}
            rc, output, timed_out, sandbox = _run_foreign(ctx.command, os.path.realpath(ctx.cwd), changed, timeout)
        reached = probe is not None and probe.reached()
    finally:
        if probe is not None:
            probe.remove()
    duration = round(time.monotonic() - t0, 2)
    atomic_write(ctx.snapshot / RERUN_LOG, redact_text(output))
    reached = reached or _pytest_passed(output, nodeid)
    after: dict[str, Any] = {
        "exit_code": rc,
        "log": RERUN_LOG,
        "duration_s": duration,
        "failure_point": point.to_dict(),
        "reached_failure_point": reached,
    }
    if sandbox is not None:
        after["sandbox"] = sandbox
    if rc is None:
        after["reason"] = output
        return Verification("not_run", "not_run", None, duration, after)
    orig_ff = str(ctx.first_failure.get("excerpt") or "")
    if timed_out:
        return Verification("failed", "timed_out", rc, duration, after)
    new_point = rerun_point(ctx, output)
    if (
        rc == 0
        and not (orig_ff and _norm(orig_ff) and _norm(orig_ff) in _norm(output))
        and not point.same_as(new_point)
    ):
        if reached:
            return Verification("passed", "no_longer_reproduces", rc, duration, after)
        after["reason"] = (
            f"no evidence that the rerun executed {point.where()}, where the original run failed "
            "(a command that does not run the failing code exits 0 too)"
        )
        return Verification("failed", "not_reached", rc, duration, after)
    new_top, new_ff = _rediagnose(ctx, output, rc)
    after.update({"top_cause": new_top, "first_failure": new_ff, "rerun_failure_point": new_point.to_dict()})
    orig_top = ctx.causes[0].get("id") if ctx.causes else None
    same = point.same_as(new_point)
    if not same and orig_ff:
        same = _norm(orig_ff) == _norm(str((new_ff or {}).get("excerpt") or ""))
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
    return {
        "exit_code": profile.get("exit_code"),
        "first_failure": ctx.first_failure or None,
        "top_cause": ctx.causes[0].get("id") if ctx.causes else None,
    }


MD_HEADING = "\n## Fix mode\n"


def _update_markdown(ctx: FixContext, fix: dict[str, Any]) -> None:
    """Keep report.md telling the same story as report.json: one "Fix mode" section, the latest attempt."""
    path = ctx.snapshot / "report.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return
    text = text.split(MD_HEADING, 1)[0].rstrip("\n") + "\n"
    lines = [
        MD_HEADING.strip("\n"),
        "",
        f"- fix `{visible(fix.get('id'), one_line=True)}`: {visible(fix.get('summary'), one_line=True)}",
        f"- applied: {fix.get('applied')}; verification: **{fix.get('verification')}** ({visible(fix.get('outcome'), one_line=True)}); "
        f"rolled back: {fix.get('rolled_back')}",
    ]
    if fix.get("command"):
        lines.append(
            f"- rerun: `{visible(fix.get('command'), one_line=True)}` in `{visible(fix.get('cwd'), one_line=True)}`"
        )
    for c in fix.get("changes") or []:
        if c.get("diff"):
            diff = visible(str(c["diff"]).rstrip("\n"))
            fence = "```"
            while fence in diff:  # a fence longer than any backtick run in the diff: it cannot end early
                fence += "`"
            lines += ["", f"{fence}diff", diff, fence]
        else:
            lines.append(f"- change: {visible(c.get('description'), one_line=True)}")
    after = fix.get("after") or {}
    if isinstance(after.get("first_failure"), dict):
        lines.append(
            f"- after the fix the run fails at: `{visible(after['first_failure'].get('excerpt', ''), one_line=True)}`"
        )
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

    lock = ctx.snapshot / ".faildiag.lock"
    if os.path.islink(lock):  # a planted link: taking the lock would truncate its target
        write()
        return
    try:  # the snapshot writer's lock: a concurrent re-diagnosis and this update do not lose each other's work
        with FileLock(str(lock), timeout=30):
            write()
    except Timeout:
        write()
