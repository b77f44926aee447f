"""Reading what a run left behind: ``rules/retort.toml`` signatures, the run folder's JSON/markdown files, agent logs.

Every reader is best-effort: a missing or malformed file becomes a claim on the record, never an exception.
Run folders hold what an agent wrote, so every read is bounded (regular files only, size- and depth-capped,
logs read from their tail) and a run folder's files are read only when they resolve inside the experiment.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_faildiag.fsio import (
    ReadRefused,
    iter_lines,
    load_json,
    loads_json,
    read_allowed,
    read_head,
    read_roots,
    read_tail,
)
from pytest_faildiag.integrations.retort.model import Claim, RunRecord, Signature, SignatureHit

_WRONG_PLACE = re.compile(
    r"outside (of )?(the )?(sandbox|workspace|playpen)|not in (the )?(run )?workspace|to the user'?s home directory"
    r"|written to /(Users|home)/",
    re.I,
)
_MAX_LOG_BYTES = 4_000_000
_MAX_EVAL_BYTES = 1_000_000  # evaluation.md: the first 200,000 characters are kept
_MAX_FINDINGS_BYTES = 16 * 1024 * 1024
_MAX_JSON_LINE = 1024 * 1024


def load_signatures(path: Path | None = None) -> list[Signature]:
    """Load ``rules/retort.toml``; a broken rule file yields no signatures rather than a crash."""
    try:
        if path is None:
            try:
                raw = resources.files("pytest_faildiag.rules").joinpath("retort.toml").read_bytes()
            except Exception:  # the rules package's own __init__ is another module: do not depend on it importing
                raw = (Path(__file__).resolve().parents[2] / "rules" / "retort.toml").read_bytes()
        else:
            raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    out: list[Signature] = []
    for row in data.get("signature", []):
        try:
            out.append(
                Signature(
                    id=row["id"],
                    verdict=row["verdict"],
                    subtype=row["subtype"],
                    kind=row.get("kind", "direct"),
                    regex=re.compile(row["pattern"], re.I),
                    action=row.get("action", ""),
                    blocks_work=bool(row.get("blocks_work", False)),
                    tool_scope=bool(row.get("tool_scope", False)),
                )
            )
        except (KeyError, re.error):
            continue
    return out


def _read_json(path: Path, root: Path | None = None) -> tuple[Any, str | None]:
    """(data, None), (None, None) when the file is absent, or (None, problem). With ``root``, a file that
    resolves outside it (a symlink an agent planted) is a problem, not a read."""
    try:
        return load_json(read_allowed(path, read_roots([root])) if root is not None else path), None
    except FileNotFoundError:
        return None, None
    except ReadRefused as exc:
        return None, f"{path.name} unreadable: {exc.strerror}"
    except (OSError, ValueError) as exc:
        return None, f"{path.name} unreadable: {type(exc).__name__}"


def _inside(rec: RunRecord, path: Path) -> Path:
    """``path`` resolved, or ReadRefused when it lies outside the run's experiment folder."""
    return read_allowed(path, read_roots([rec.experiment]))


def _load_folder_signals(rec: RunRecord) -> None:
    """Read _meta.json, scores.json, stack.json, evaluation.md, findings.jsonl and our capture; never raises."""
    d = rec.rep_dir
    if d is None:
        return
    for name, attr in (
        ("_meta.json", "meta"),
        ("scores.json", "scores"),
        ("stack.json", "stack"),
        (".faildiag/.capture.json", "capture"),
        (".faildiag/capture.json", "capture"),
    ):
        if attr == "capture" and rec.capture:
            continue
        data, problem = _read_json(d / name, rec.experiment)
        if isinstance(data, dict):
            setattr(rec, attr, data)
        elif problem:
            rec.notes.append(Claim(f"{problem} (malformed JSON), ignored", "direct", f"{rec.rel}/{name}"))
    if not rec.run_config and isinstance(rec.meta.get("run_config"), dict):
        rec.run_config = {str(k): str(v) for k, v in rec.meta["run_config"].items()}
    try:
        text = read_head(_inside(rec, d / "evaluation.md"), _MAX_EVAL_BYTES).decode("utf-8", errors="replace")
        rec.eval_text = text[:200_000]
        m = re.search(r"\*\*Status:\*\*\s*(.+)", text)
        rec.eval_status = (m.group(1).strip() if m else "")[:400]
        if _WRONG_PLACE.search(text):
            rec.eval_status = rec.eval_status or _WRONG_PLACE.search(text).group(0)
            rec.notes.append(
                Claim(
                    "evaluation.md reports the deliverables were written outside the run workspace",
                    "direct",
                    f"{rec.rel}/evaluation.md",
                )
            )
    except OSError:
        pass
    try:
        for line in iter_lines(
            _inside(rec, d / "findings.jsonl"), max_line=_MAX_JSON_LINE, max_bytes=_MAX_FINDINGS_BYTES
        ):
            try:
                item = loads_json(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                rec.findings.append(item)
    except OSError:
        pass


@dataclass
class LogSignals:
    """What the agent's own logs say: agent-level errors, failed tool calls, permission denials, usage."""

    agent_errors: list[tuple[str, str]] = field(default_factory=list)  # (source, text)
    tool_errors: list[tuple[str, str]] = field(default_factory=list)
    denials: list[tuple[str, str]] = field(default_factory=list)
    tokens: int = 0
    cost_usd: float | None = None
    result_subtype: str | None = None
    present: list[str] = field(default_factory=list)


def _event_error_texts(ev: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """Split one JSON event into agent-level errors, failed-tool texts and permission denials.

    Covers claude stream-json (``result``/``is_error``, ``permission_denials``, ``tool_result``), codex
    (``error``, ``turn.failed``, ``item.completed`` with failed status), opencode (``type: error``,
    ``part.state.status == error``), omp (``stopReason: error``/``errorMessage``) and gemini (``error`` object).
    """
    agent, tool, denials = [], [], []
    etype = str(ev.get("type") or "")
    err = ev.get("error")
    if isinstance(err, dict):
        agent.append(str(err.get("message") or err.get("data") or err))
    elif isinstance(err, str) and err:
        agent.append(err)
    if etype in {"error", "turn.failed", "session.error"} or etype.endswith(".error"):
        msg = ev.get("message") or ev.get("error") or ev
        agent.append(str(msg)[:2000])
    if etype == "result" and ev.get("is_error"):
        agent.append(str(ev.get("result") or ev.get("subtype") or "")[:2000])
    for key in ("errorMessage", "error_message"):
        if ev.get(key):
            agent.append(str(ev[key])[:2000])
    for d in ev.get("permission_denials") or []:
        denials.append(json.dumps(d)[:400] if not isinstance(d, str) else d[:400])
    msg = ev.get("message")
    if isinstance(msg, dict):
        if msg.get("stopReason") == "error" and msg.get("errorMessage"):
            agent.append(str(msg["errorMessage"]))
        for part in msg.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "tool_result" and part.get("is_error"):
                tool.append(_flatten(part.get("content"))[:2000])
    part = ev.get("part")
    if isinstance(part, dict):
        state = part.get("state")
        if isinstance(state, dict) and state.get("status") == "error":
            tool.append(str(state.get("error") or state)[:2000])
    item = ev.get("item")
    if isinstance(item, dict) and str(item.get("status")) in {"failed", "declined", "rejected"}:
        tool.append(str(item.get("aggregated_output") or item.get("error") or item)[:2000])
    return agent, tool, denials


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("content") or "")
    return str(content or "")


def _usage_tokens(ev: dict[str, Any]) -> int:
    usage = ev.get("usage")
    msg = ev.get("message")
    if not isinstance(usage, dict) and isinstance(msg, dict):
        usage = msg.get("usage")
    if not isinstance(usage, dict):
        return 0
    total = 0
    for k in ("input_tokens", "output_tokens", "input", "output", "prompt_tokens", "completion_tokens"):
        v = usage.get(k)
        if isinstance(v, int | float):
            total += int(v)
    return total


def read_agent_logs(rec: RunRecord) -> LogSignals:
    """Parse ``_agent_stdout.log``/``_agent_stderr.log`` (any of the agents' JSON formats, or plain text)."""
    sig = LogSignals()
    if rec.rep_dir is None:
        return sig
    for name in ("_agent_stdout.log", "_agent_stderr.log", "_hermes_session.jsonl"):
        path = rec.rep_dir / name
        try:
            text = read_tail(_inside(rec, path), _MAX_LOG_BYTES).decode("utf-8", "replace")
        except FileNotFoundError:
            continue
        except OSError as exc:
            if isinstance(exc, ReadRefused):
                rec.notes.append(Claim(f"{name} not read: {exc.strerror}", "direct", f"{rec.rel}/{name}"))
            continue
        sig.present.append(name)
        src = f"{rec.rel}/{name}"
        for line in text.splitlines():
            s = line.strip()
            if not s:
                continue
            if s.startswith("{"):
                try:
                    ev = loads_json(s)
                except ValueError:
                    ev = None
                if isinstance(ev, dict):
                    agent, tool, denials = _event_error_texts(ev)
                    sig.agent_errors += [(src, t) for t in agent if t]
                    sig.tool_errors += [(src, t) for t in tool if t]
                    sig.denials += [(src, t) for t in denials if t]
                    if ev.get("type") == "result":
                        sig.result_subtype = str(ev.get("subtype") or "") or sig.result_subtype
                        if isinstance(ev.get("total_cost_usd"), int | float):
                            sig.cost_usd = float(ev["total_cost_usd"])
                    sig.tokens += _usage_tokens(ev) if ev.get("type") != "result" else 0
                    continue
            # A plain line: stderr of every agent, and opencode's --print-logs lines, are plain text.
            if name != "_agent_stdout.log" or re.search(r"\b(error|denied|refus|fatal|exception)\b", s, re.I):
                sig.agent_errors.append((src, s[:1000]))
    return sig


def match_signatures(rec: RunRecord, logs: LogSignals, signatures: list[Signature]) -> list[SignatureHit]:
    """Signatures seen in error-flagged content, in rule-file order (first is strongest)."""
    texts: list[tuple[str, str, bool]] = []  # (source, text, is_tool)
    if rec.db_error:
        texts.append(("retort.db experiment_runs.error_message", rec.db_error, False))
    for key in ("stderr_tail", "kill_reason", "tool_refusal"):
        v = rec.capture.get(key) or (rec.capture.get("metadata") or {}).get(key)
        if v and key != "kill_reason":
            texts.append((f"{rec.rel}/.faildiag/.capture.json", str(v), key == "tool_refusal"))
    if rec.capture.get("usage_limited") is True:
        texts.append((f"{rec.rel}/.faildiag/.capture.json", "usage limit flagged by retort's runner", False))
    texts += [(s, t, False) for s, t in logs.agent_errors]
    texts += [(s, t, True) for s, t in logs.tool_errors]
    # The evaluator's report quotes the agent log when the logs themselves were not archived; only tool-scoped
    # signatures (a refused tool) may match it — its prose discusses the task's own features too.
    if rec.eval_text:
        texts.append((f"{rec.rel}/evaluation.md", rec.eval_text, True))
    for f in rec.findings:
        texts.append((f"{rec.rel}/findings.jsonl", f"{f.get('title', '')} {f.get('evidence', '')}", True))
    texts += [(s, "permission denied: " + t, True) for s, t in logs.denials]
    hits: list[SignatureHit] = []
    for sig in signatures:
        for src, text, is_tool in texts:
            if is_tool and not sig.tool_scope:
                continue
            m = sig.regex.search(text)
            if m:
                start = max(0, m.start() - 60)
                hits.append(SignatureHit(sig, src, text[start : m.end() + 100].strip()))
                break
    return hits
