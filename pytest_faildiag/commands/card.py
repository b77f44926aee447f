"""`faildiag card SNAPSHOT_DIR` drafts a known-issue card from a diagnosis; `faildiag card --check DIR
[--logs PATH ...]` lints a factory. See docs/factory.md.

A draft is printed, never written: the team reviews it and adds it to its factory itself. Its signature is
the diagnosis' first failure line with the parts that change from run to run (timestamps, addresses,
paths, numbers, ranks) turned into patterns, tested to still match that line and not to match the other
lines of the run's own logs; the least general form that is still useful wins when the most general one
matches too much.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

MAX_HEALTHY_LINES = 200_000
MAX_HEALTHY_SHARE = 0.01  # a signature may match this share of the run's other lines (the same error on other ranks)
NEARLY_ALL = 0.9  # --check: a signature matching this share of the given logs' lines matches "everything"
MAX_SIGNATURE_SOURCE = 200  # characters of the failure line a signature covers (search, not full match)
LOG_SUFFIXES = {".log", ".txt", ".out", ".err", ".stderr", ".stdout", ""}

# what changes between two runs of the same failure, most specific first; group name → pattern it becomes
_VARIABLE = re.compile(
    r"""
 (?P<iso>\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)
|(?P<glog>\b[IWEF]\d{4}\ \d\d:\d\d:\d\d(?:\.\d+)?)
|(?P<clock>\b\d\d:\d\d:\d\d(?:[.,]\d+)?)
|(?P<hex>\b0x[0-9a-fA-F]+\b)
|(?P<path>(?:[A-Za-z]:)?(?:[\w.~+-]*/)+[\w.+-]*)
|(?P<hash>\b[0-9a-f]{8,}\b)
|(?P<number>(?<![\w.])\d+(?:\.\d+)?)
""",
    re.X,
)
_AS = {
    "iso": r"\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?\S*",
    "glog": r"[IWEF]\d{4} \d\d:\d\d:\d\d(?:\.\d+)?",
    "clock": r"\d\d:\d\d:\d\d(?:[.,]\d+)?",
    "hex": r"0x[0-9a-fA-F]+",
    "path": r"\S+",
    "hash": r"[0-9a-f]+",
    "number": r"\d+(?:\.\d+)?",
}
# generalisation levels, most general first: which kinds of variable text become patterns
LEVELS = (
    ("iso", "glog", "clock", "hex", "path", "hash", "number"),
    ("iso", "glog", "clock", "hex", "path", "hash"),
    ("iso", "glog", "clock", "hex"),
    (),
)
_PREFIX = re.compile(r"^(?:\[(?:rank|default)?\d+\]:\s?)+|^E {3}")
_EXC = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault))\b")
_MASK = "***REDACTED***"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "target", metavar="DIR", help="a snapshot folder (report.json) to draft from, or with --check a factory"
    )
    p.add_argument("--check", action="store_true", help="lint the factory DIR instead of drafting a card")
    p.add_argument(
        "--logs",
        nargs="+",
        default=[],
        metavar="PATH",
        help="with --check: logs (files or folders) the signatures should match some of, not all",
    )


def run(args: argparse.Namespace) -> int:
    from ..cli import UsageError

    target = Path(args.target)
    if not target.is_dir():
        raise UsageError(f"{target}: not a folder")
    if args.check:
        return check(target, [Path(p) for p in args.logs])
    if args.logs:
        raise UsageError("--logs goes with --check")
    report = _read_report(target)
    sys.stdout.write(draft(report, target))
    return 0


# ----------------------------------------------------------------------------------------------------
# drafting
# ----------------------------------------------------------------------------------------------------


def _read_report(snapshot: Path) -> dict[str, Any]:
    from ..cli import UsageError

    try:
        with open(snapshot / "report.json", encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UsageError(f"{snapshot}: no report.json (not a faildiag snapshot)") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{snapshot}/report.json: unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{snapshot}/report.json: not a faildiag report")
    return data


def failure_line(report: dict[str, Any]) -> str | None:
    """The line the diagnosis named as the first failure (else the top cause's first direct evidence)."""
    profile = report.get("profile") if isinstance(report.get("profile"), dict) else {}
    first = profile.get("first_failure") if isinstance(profile.get("first_failure"), dict) else None
    if first and isinstance(first.get("excerpt"), str) and first["excerpt"].strip():
        return first["excerpt"]
    for cause in report.get("root_causes") or []:
        for ev in (cause.get("evidence") or []) if isinstance(cause, dict) else []:
            if isinstance(ev, dict) and ev.get("kind") == "direct" and str(ev.get("excerpt", "")).strip():
                return str(ev["excerpt"])
    return None


def generalise(line: str, kinds: tuple[str, ...]) -> str:
    """``line`` as a regex: the variable parts of ``kinds`` as patterns, everything else literal."""
    out, pos = [], 0
    for m in _VARIABLE.finditer(line):
        kind = m.lastgroup or ""
        if kind not in kinds:
            continue
        out.append(_literal(line[pos : m.start()]))
        out.append(_AS[kind])
        pos = m.end()
    out.append(_literal(line[pos:]))
    return "".join(out)


def _literal(text: str) -> str:
    parts = text.split(_MASK)  # a redacted secret: any text there
    return r"\S+".join(re.escape(p) for p in parts).replace("\\ ", " ")


def signature_for(line: str, healthy: list[str]) -> tuple[str, int]:
    """The most general signature of ``line`` that still matches it, has literal text to prefilter on and
    matches at most MAX_HEALTHY_SHARE of ``healthy`` (the run's other lines); with how many it matches."""
    from ..factory import CardError, signature_keywords
    from ..redact import redact_text

    body = _PREFIX.sub("", line.strip()).strip()
    shown = redact_text(body)
    cut = shown[:MAX_SIGNATURE_SOURCE]
    if len(shown) > MAX_SIGNATURE_SOURCE and " " in cut:
        cut = cut[: cut.rindex(" ")]
    allowed = int(len(healthy) * MAX_HEALTHY_SHARE)
    best: tuple[str, int] | None = None
    for kinds in LEVELS:
        sig = generalise(cut, kinds)
        try:
            signature_keywords(sig)
            rx = re.compile(sig)
        except (CardError, re.error):
            continue
        if not rx.search(body):
            continue
        hits = sum(1 for h in healthy if rx.search(h))
        if best is None or hits < best[1]:
            best = (sig, hits)
        if hits <= allowed:
            return sig, hits
    return best if best is not None else (re.escape(body[:MAX_SIGNATURE_SOURCE]), 0)


def healthy_lines(snapshot: Path, failure: str) -> list[str]:
    """The lines of the logs kept in the snapshot (``logs/``, ``evidence/`` …) other than the failure."""
    target = _PREFIX.sub("", failure.strip()).strip()
    out: list[str] = []
    for path in _log_files([snapshot], skip={"report.md"}):
        for raw in _lines(path):
            body = _PREFIX.sub("", raw.strip()).strip()
            if body and body != target:
                out.append(body)
            if len(out) >= MAX_HEALTHY_LINES:
                return out
    return out


def draft(report: dict[str, Any], snapshot: Path) -> str:
    """The draft card (front matter + write-up) for one diagnosis."""
    from ..cli import UsageError
    from ..model import CATEGORIES, STACKS, TYPES
    from ..redact import redact_text

    line = failure_line(report)
    if line is None:
        raise UsageError(f"{snapshot}: the diagnosis names no failure line to draft a card from")
    healthy = healthy_lines(snapshot, line)
    sig, hits = signature_for(line, healthy)
    causes = [c for c in report.get("root_causes") or [] if isinstance(c, dict)]
    top = causes[0] if causes else {}
    profile = report.get("profile") if isinstance(report.get("profile"), dict) else {}
    category = top.get("category") if top.get("category") in CATEGORIES else "environment"
    body = redact_text(_PREFIX.sub("", line.strip()).strip())
    m = _EXC.match(body)
    title = body if len(body) <= 80 else body[:77] + "..."
    hints = [str(h) for h in top.get("fix_hints") or [] if isinstance(h, str) and not h.startswith("read the team's")][
        :3
    ]
    fix = report.get("fix") if isinstance(report.get("fix"), dict) else None
    verified = fix is not None and fix.get("verification") == "passed"
    if verified:
        hints.insert(0, f"verified fix: {fix.get('summary', '')} (faildiag fix {fix.get('id', '')})")
    slug = re.sub(r"[^a-z0-9]+", "-", (m[1].rsplit(".", 1)[-1] if m else " ".join(body.split()[:4])).lower()).strip("-")
    card_id = f"{category}-{slug or 'failure'}"
    front = [
        "+++",
        f"id = {_toml(card_id)}",
        f"title = {_toml(redact_text(title))}",
        f"signatures = [{_toml(sig, literal=True)}]",
        f"category = {_toml(category)}",
    ]
    if profile.get("stack") in STACKS:
        front.append(f"stack = {_toml(profile['stack'])}")
    if profile.get("type") in TYPES and profile.get("type") != "unknown":
        front.append(f"type = {_toml(profile['type'])}")
    front += ["fix_hints = [" + ", ".join(_toml(redact_text(h)) for h in hints) + "]", "links = []", "+++", ""]
    first = profile.get("first_failure") if isinstance(profile.get("first_failure"), dict) else {}
    where = f"{first.get('source', '?')}:{first.get('line') or '?'}" if first else "?"
    text = [
        "## What happened",
        "",
        redact_text(str(report.get("summary", ""))),
        "",
        f"First failure (`{where}`):",
        "",
        "    " + body[:500],
        "",
        "## Cause",
        "",
        redact_text(str(top.get("summary", "no cause was named")))
        + (f" (`{top.get('id')}`, {top.get('category')})" if top else ""),
        "",
        "## Fix",
        "",
    ]
    if verified:
        text.append(f"- verified by `faildiag fix`: {redact_text(str(fix.get('summary', '')))}")
    text += [f"- {redact_text(h)}" for h in hints if not h.startswith("verified fix:")] or ["- (what the team did)"]
    text += [
        "",
        "## Signature",
        "",
        f"Drafted by `faildiag card` from the failure line with timestamps, addresses, paths and numbers "
        f"generalised; it matches that line and {hits} of the {len(healthy)} other lines of this run's logs. "
        "Review it, then add this file to the factory.",
        "",
    ]
    return "\n".join(front + text)


def _toml(value: str, literal: bool = False) -> str:
    """A TOML string: a literal string for regexes when it can be one (backslashes stay readable)."""
    if literal and "'" not in value and not any(ord(c) < 32 or ord(c) == 127 for c in value):
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


# ----------------------------------------------------------------------------------------------------
# linting
# ----------------------------------------------------------------------------------------------------


def check(root: Path, logs: list[Path]) -> int:
    """One line per problem of the factory at ``root``; exit status 1 when there is any, else 0."""
    from ..cli import UsageError
    from ..factory import CardError, card_files, card_rule, parse_card, signature_keywords

    for p in logs:
        if not p.exists():
            raise UsageError(f"--logs {p}: no such file or folder")
    problems: list[str] = []
    seen: dict[str, str] = {}
    rules = []
    files = card_files(root)
    for path in files:
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        try:
            card = parse_card(path, root)
        except (CardError, OSError) as exc:
            problems.append(f"{rel}: {exc}")
            continue
        if card.id in seen:
            problems.append(f"{rel}: duplicate id {card.id!r} (also in {seen[card.id]})")
        else:
            seen[card.id] = rel
        usable = []
        for sig in card.signatures:
            try:
                signature_keywords(sig)
                rx = re.compile(sig)
            except CardError as exc:
                problems.append(f"{rel}: {exc}")
                continue
            except re.error as exc:
                problems.append(f"{rel}: signature {sig!r}: invalid regex: {exc}")
                continue
            if rx.search("") is not None:
                problems.append(f"{rel}: signature {sig!r} matches every line (it matches empty text)")
                continue
            usable.append(sig)
        if usable:
            rules.append(card_rule(_with_signatures(card, usable)))
    if logs and rules:
        problems += _check_against(rules, logs, root)
    for line in problems:
        print(line)
    print(f"{len(files)} card(s) checked, {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


def _with_signatures(card, signatures: list[str]):
    from dataclasses import replace

    return replace(card, signatures=tuple(signatures))


def _check_against(rules: list, logs: list[Path], root: Path) -> list[str]:
    """Scan the logs once with the cards alone (the diagnosis' own scanner) and report the cards that match
    nothing and those that match nearly every line."""
    from ..factory import with_cards
    from ..parse.scan import ScanResult, scan_file
    from ..rules import RuleSet

    empty = RuleSet(
        rules=[], keyword_index={}, keyword_regex=None, exit_rules=[], stuck_frames=[], fallback={}, next_actions={}
    )
    rs = with_cards(empty, rules)
    scan = ScanResult()
    for i, path in enumerate(_log_files(logs)):
        try:
            scan_file(str(path), f"{i}:{path.name}", rs, scan)
        except OSError:
            continue
    lines = sum(info.lines for info in scan.sources.values())
    out = []
    for r in rules:
        hits = scan.hits_per_rule.get(r.id, 0)
        where = r.pack[len("factory:") :]
        if hits == 0:
            out.append(f"{where}: no signature matches anything in the given logs ({lines} lines)")
        elif lines and hits >= NEARLY_ALL * lines:
            out.append(f"{where}: matches {hits} of {lines} lines of the given logs (nearly everything)")
    return out


def _log_files(paths: list[Path], skip: set[str] | None = None) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_file():
            out.append(p)
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fn in sorted(filenames):
                f = Path(dirpath) / fn
                if f.suffix.lower() in LOG_SUFFIXES and fn not in (skip or set()) and not fn.startswith("."):
                    out.append(f)
    return out


def _lines(path: Path) -> list[str]:
    try:
        with open(path, "rb") as f:
            data = f.read(64 << 20)
    except OSError:
        return []
    if b"\0" in data[:4096]:
        return []
    return data.decode("utf-8", "replace").splitlines()
