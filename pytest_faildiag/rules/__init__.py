"""Rule packs: the knowledge base as data.

A rule pack is a TOML file of ``[[rule]]`` tables (see ``docs/rules.md``). Loading compiles every rule's
literal ``keywords`` into one alternation so that a log is scanned once, whatever the number of rules;
only lines that hit a keyword are handed to the rules that own it. Third-party packs arrive through the
``pytest_faildiag_rule_packs`` hook (a conftest.py may implement it); a malformed pack is skipped with a
warning, never fatal.
"""

from __future__ import annotations

import re
import tomllib
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..model import CATEGORIES, STAGES, TYPES


@dataclass
class CauseSpec:
    id: str
    category: str
    confidence: float
    summary: str
    fix_hints: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    kind: str = "direct"  # "hypothesis" when the rule's line suggests but does not show this cause
    reason: str = ""  # why the line implies the cause (shown as hypothesis evidence)
    fix: dict[str, Any] | None = None


@dataclass
class Rule:
    id: str
    title: str
    keywords: list[str]
    patterns: list[re.Pattern[str]]
    causes: list[CauseSpec]
    type: str | None = None
    stage: str | None = None
    stack: str | None = None
    backend: str | None = None
    domains: list[str] = field(default_factory=list)
    priority: int = 50
    ignore_case: bool = False
    exit_codes: list[int] = field(default_factory=list)
    downstream: bool = False
    noise: bool = False  # matches lines that are never a failure by themselves (INFO chatter)
    suppressed_by: list[str] = field(default_factory=list)
    requires_failure: bool = False  # only counts when the run failed (non-zero exit or another error)
    pack: str = ""


@dataclass
class SymptomCause:
    """One competing cause of a symptom family: a category with its prior (see 05-reasoning.toml)."""

    category: str
    prior: float
    summary: str
    fix_hints: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # validation checks that tell this cause from the others


@dataclass
class Context:
    """A fact the evidence can show (who raised, the stage, a word family of the message) and how it moves
    each category's weight."""

    fact: str
    why: str
    factors: dict[str, float]
    pattern: re.Pattern[str] | None = None


@dataclass
class Reasoning:
    """The knowledge that needs no signature: exception classes, symptom families and their competing
    causes, stages from frames, and the context factors. Built from the packs' non-rule tables."""

    exceptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    symptoms: dict[str, tuple[str, list[SymptomCause]]] = field(default_factory=dict)
    frame_stages: list[tuple[re.Pattern[str] | None, re.Pattern[str] | None, str]] = field(default_factory=list)
    contexts: list[Context] = field(default_factory=list)
    libraries: frozenset[str] = frozenset()
    calibration: list[tuple[float, float]] = field(default_factory=list)  # (raw, calibrated), raw ascending


@dataclass
class RuleSet:
    rules: list[Rule]
    keyword_index: dict[str, list[Rule]]
    keyword_regex: re.Pattern[bytes] | None
    exit_rules: list[Rule]
    stuck_frames: list[dict[str, Any]]
    fallback: dict[str, Any]
    next_actions: dict[str, list[str]]
    reasoning: Reasoning = field(default_factory=Reasoning)
    scanner: object | None = field(default=None, init=False, compare=False, repr=False)
    """What ``parse.scan`` compiles from these rules on first use (its regexes and keyword tables). Kept
    on the rule set so it lives and dies with it and can never be handed to another rule set (not an
    init field, so ``dataclasses.replace`` starts the new rule set without it)."""

    def by_id(self, rule_id: str) -> Rule | None:
        for r in self.rules:
            if r.id == rule_id:
                return r
        return None


class RuleError(ValueError):
    pass


def _cause(raw: dict[str, Any], rule_id: str) -> CauseSpec:
    category = raw.get("category", "")
    if category not in CATEGORIES:
        raise RuleError(f"rule {rule_id}: unknown category {category!r}")
    return CauseSpec(
        id=str(raw.get("id") or rule_id),
        category=category,
        confidence=float(raw.get("confidence", 0.5)),
        summary=str(raw.get("summary", "")),
        fix_hints=[str(h) for h in raw.get("fix_hints", [])],
        checks=[str(c) for c in raw.get("checks", [])],
        kind=str(raw.get("kind", "direct")),
        reason=str(raw.get("reason", "")),
        fix=raw.get("fix"),
    )


def _rule(raw: dict[str, Any], pack: str) -> Rule:
    rid = raw.get("id")
    if not rid:
        raise RuleError("a rule without id")
    flags = re.IGNORECASE if raw.get("ignore_case") else 0
    keywords = [str(k) for k in raw.get("keywords", [])]
    exit_codes = [int(c) for c in raw.get("exit_codes", [])]
    if not keywords and not exit_codes:
        raise RuleError(f"rule {rid}: needs keywords or exit_codes")
    try:
        patterns = [re.compile(p, flags) for p in raw.get("patterns", [])]
    except re.error as exc:
        raise RuleError(f"rule {rid}: bad pattern: {exc}") from None
    for key, vocab in (("type", TYPES), ("stage", STAGES)):
        if raw.get(key) is not None and raw[key] not in vocab:
            raise RuleError(f"rule {rid}: unknown {key} {raw[key]!r}")
    return Rule(
        id=rid,
        title=str(raw.get("title", rid)),
        keywords=keywords,
        patterns=patterns,
        causes=[_cause(c, rid) for c in raw.get("causes", [])],
        type=raw.get("type"),
        stage=raw.get("stage"),
        stack=raw.get("stack"),
        backend=raw.get("backend"),
        domains=list(raw.get("domains", [])),
        priority=int(raw.get("priority", 50)),
        ignore_case=bool(raw.get("ignore_case")),
        exit_codes=exit_codes,
        downstream=bool(raw.get("downstream")),
        noise=bool(raw.get("noise")),
        suppressed_by=list(raw.get("suppressed_by", [])),
        requires_failure=bool(raw.get("requires_failure")),
        pack=pack,
    )


def parse_pack(text: str, name: str) -> tuple[list[Rule], dict[str, Any]]:
    """Parse one TOML pack; returns its rules and its other tables (stuck frames, fallback, …)."""
    data = tomllib.loads(text)
    rules = [_rule(r, name) for r in data.get("rule", [])]
    return rules, {k: v for k, v in data.items() if k != "rule"}


def _builtin_packs() -> list[tuple[str, str]]:
    out = []
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml") and entry.name != "retort.toml":
            out.append((entry.name, entry.read_text(encoding="utf-8")))
    return out


def build_ruleset(packs: list[tuple[str, str]]) -> RuleSet:
    rules: list[Rule] = []
    stuck: list[dict[str, Any]] = []
    fallback: dict[str, Any] = {}
    actions: dict[str, list[str]] = {}
    seen: dict[str, int] = {}
    reasoning = Reasoning()
    for name, text in packs:
        try:
            pack_rules, extra = parse_pack(text, name)
        except (tomllib.TOMLDecodeError, RuleError, TypeError, ValueError) as exc:
            warnings.warn(f"faildiag: rule pack {name} skipped: {exc}", stacklevel=2)
            continue
        try:
            _add_reasoning(reasoning, extra)
        except (RuleError, TypeError, ValueError, KeyError, re.error) as exc:
            warnings.warn(f"faildiag: reasoning tables of {name} skipped: {exc}", stacklevel=2)
        for r in pack_rules:  # a later pack may replace a rule by id
            if r.id in seen:
                rules[seen[r.id]] = r
            else:
                seen[r.id] = len(rules)
                rules.append(r)
        stuck.extend(extra.get("stuck_frame", []))
        fallback.update(extra.get("fallback", {}))
        for k, v in extra.get("next_actions", {}).items():
            actions.setdefault(k, []).extend(v)
        for fact, table in extra.get("next_actions_when", {}).items():  # "fact|category": replaces, see report
            for k, v in table.items():
                actions.setdefault(f"{fact}|{k}", []).extend(v)
    index: dict[str, list[Rule]] = {}
    for r in rules:
        for k in r.keywords:
            index.setdefault(k.lower() if r.ignore_case else k, []).append(r)
    regex = _keyword_regex(rules)
    return RuleSet(rules, index, regex, [r for r in rules if r.exit_codes], stuck, fallback, actions, reasoning)


def _add_reasoning(out: Reasoning, data: dict[str, Any]) -> None:
    """Fold one pack's ``[[exception]]``, ``[[symptom]]``, ``[[frame_stage]]``, ``[[context]]`` and
    ``[library]`` tables into ``out`` (a later pack's entry with the same name replaces an earlier one)."""
    for ex in data.get("exception", []):
        entry = {k: v for k, v in ex.items() if k != "names"}
        for key in ("type", "stage"):
            vocab = TYPES if key == "type" else STAGES
            if entry.get(key) is not None and entry[key] not in vocab:
                raise RuleError(f"exception {ex.get('names')}: unknown {key} {entry[key]!r}")
        for name in ex.get("names", []):
            out.exceptions[str(name)] = entry
    for sym in data.get("symptom", []):
        causes = []
        for c in sym.get("causes", []):
            if c.get("category") not in CATEGORIES:
                raise RuleError(f"symptom {sym.get('id')}: unknown category {c.get('category')!r}")
            causes.append(
                SymptomCause(
                    c["category"],
                    float(c.get("prior", 0.1)),
                    str(c.get("summary", "")),
                    [str(h) for h in c.get("fix_hints", [])],
                    [str(x) for x in c.get("checks", [])],
                )
            )
        out.symptoms[str(sym["id"])] = (str(sym.get("title", sym["id"])), causes)
    for fs in data.get("frame_stage", []):
        if fs.get("stage") not in STAGES:
            raise RuleError(f"frame_stage: unknown stage {fs.get('stage')!r}")
        if not fs.get("func") and not fs.get("file"):
            raise RuleError("frame_stage: needs func or file")
        func = re.compile(fs["func"]) if fs.get("func") else None
        file = re.compile(fs["file"]) if fs.get("file") else None
        out.frame_stages.append((func, file, fs["stage"]))
    for ctx in data.get("context", []):
        factors = {str(k): float(v) for k, v in ctx.get("factors", {}).items()}
        unknown = [k for k in factors if k not in CATEGORIES]
        if unknown:
            raise RuleError(f"context {ctx.get('fact')}: unknown categories {unknown}")
        pattern = re.compile(ctx["pattern"]) if ctx.get("pattern") else None
        out.contexts.append(Context(str(ctx["fact"]), str(ctx.get("why", "")), factors, pattern))
    points = data.get("calibration", {}).get("points")
    if points:
        pts = sorted((float(a), float(b)) for a, b in points)
        if any(not (0 <= a <= 1 and 0 <= b <= 1) for a, b in pts):
            raise RuleError("calibration points must lie in [0, 1]")
        out.calibration = pts
    lib = data.get("library", {})
    if lib.get("frameworks"):
        out.libraries = out.libraries | frozenset(str(x) for x in lib["frameworks"])


def _keyword_regex(rules: list[Rule]) -> re.Pattern[bytes] | None:
    exact: set[str] = set()
    folded: set[str] = set()
    for r in rules:
        (folded if r.ignore_case else exact).update(r.keywords)
    alts = [_trie(sorted(k.encode() for k in exact))] if exact else []
    if folded:
        alts.append(b"(?i:" + _trie(sorted(k.lower().encode() for k in folded)) + b")")
    return re.compile(b"|".join(alts)) if alts else None


_Trie = dict[int, "_Trie"]  # byte → subtree; key -1 marks the end of a keyword


def _trie(words: list[bytes]) -> bytes:
    """The keywords as one prefix tree (``ab(?:c|d)`` rather than ``abc|abd``): the regex engine then tries
    one branch per position instead of every keyword, which is what keeps hundreds of keywords cheap. At a
    position the longest keyword wins (greedy optional tails)."""
    tree: _Trie = {}
    for w in words:
        node = tree
        for ch in w:
            node = node.setdefault(ch, {})
        node[-1] = {}

    def emit(node: _Trie) -> bytes:
        branches = [re.escape(bytes([ch])) + emit(node[ch]) for ch in sorted(k for k in node if k >= 0)]
        if not branches:
            return b""
        body = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
        return b"(?:" + body + b")?" if -1 in node else body

    return emit(tree)


@lru_cache(maxsize=1)
def _default_ruleset_cached(extra_key: tuple[tuple[str, str], ...]) -> RuleSet:
    return build_ruleset(_builtin_packs() + list(extra_key))


def load_ruleset(extra_packs: list[tuple[str, str]] | None = None) -> RuleSet:
    """The built-in packs plus ``extra_packs`` ((name, toml text) pairs), compiled once per process."""
    return _default_ruleset_cached(tuple(extra_packs or ()))


def read_pack_file(path: str | Path) -> tuple[str, str]:
    p = Path(path)
    return (p.name, p.read_text(encoding="utf-8"))
