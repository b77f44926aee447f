"""Rule packs: the knowledge base as data.

A rule pack is a TOML file of ``[[rule]]`` tables (see ``docs/rules.md``). Loading compiles every rule's
literal ``keywords`` into one alternation so that a log is scanned once, whatever the number of rules;
only lines that hit a keyword are handed to the rules that own it. Third-party packs arrive through the
``pytest_faildiag_rule_packs`` hook (a conftest.py may implement it); a malformed pack is skipped with a
warning, never fatal.

Why a cache: a fresh process (every CLI call) would parse ~20 TOML files, compile ~1,100 rule regexes and
build the keyword alternation before reading a byte of log: ~0.5 s, more than scanning 10 MB. What parsing
and checking found depends only on the packs' bytes, so ``load_ruleset`` keeps it (the packs' parsed data,
which packs were refused and why, the alternation's text) as JSON in the user's cache folder, keyed by a
hash of every pack's name and bytes (for the built-in packs, their files' stamps: ``_builtin_stamps``),
this module and the vocabularies it checks against. A later process
builds the same rule set from it with each regex compiled the first time a rule's keyword hits (``LazyRegex``).
The cache is only read from a private folder of ours (``fsio.check_output_root``); anything unexpected in it
(a wrong shape, a wrong key, unreadable) is a miss, never an error: the packs are then read in full.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from typing import Any

from .. import fsio
from ..model import CATEGORIES, STACKS, STAGES, TYPES

CACHE_FORMAT = 1
KEEP_CACHES = 8  # rule-set caches kept (the built-in packs alone, with a conftest's or --rules packs, ...)
MAX_CACHE_BYTES = 64 << 20


class LazyRegex:
    """A compiled regex made on first use: ``search``/``match``/... and every other attribute of
    ``re.Pattern`` compile it then. A rule set read from the cache holds these, so a diagnosis compiles only
    the regexes of the rules whose keywords occur in its logs. A pattern that does not compile (only a
    damaged cache could hold one: every pattern was compiled before it was cached) never matches."""

    __slots__ = ("pattern", "_flags", "_re")

    def __init__(self, pattern: Any, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        self._re: re.Pattern[Any] | None = None

    def compiled(self) -> re.Pattern[Any]:
        if self._re is None:
            try:
                self._re = re.compile(self.pattern, self._flags)
            except (re.error, TypeError, ValueError, OverflowError, RecursionError):
                self._re = re.compile(b"(?!)" if isinstance(self.pattern, bytes) else "(?!)")
        return self._re

    def search(self, string: Any, *args: Any) -> re.Match[Any] | None:
        return (self._re or self.compiled()).search(string, *args)

    def match(self, string: Any, *args: Any) -> re.Match[Any] | None:
        return (self._re or self.compiled()).match(string, *args)

    def finditer(self, string: Any, *args: Any) -> Any:
        return (self._re or self.compiled()).finditer(string, *args)

    def findall(self, string: Any, *args: Any) -> list[Any]:
        return (self._re or self.compiled()).findall(string, *args)

    def sub(self, repl: Any, string: Any, count: int = 0) -> Any:
        return (self._re or self.compiled()).sub(repl, string, count)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyRegex):
            return self.pattern == other.pattern and self._flags == other._flags
        if isinstance(other, re.Pattern):
            return self.compiled() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.pattern, self._flags))

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r}, {self._flags})"


# What a keyword is to the scanner's search (``hit_keywords``): at each position of a line the keyword
# alternation reports the longest exact keyword, else the longest case-folded one; a keyword marked ANY
# (a team card's) competes with that choice by length alone.
KW_EXACT = 1
KW_FOLDED = 2
KW_ANY = 4


class KeywordRegex(LazyRegex):
    """``RuleSet.keyword_regex``: the keyword alternation (compiled only when Python's re searches with it)
    and the keywords it was made of, so a multi-pattern engine can report the very hits it would find."""

    __slots__ = ("exact", "folded")

    def __init__(self, pattern: bytes, exact: frozenset[bytes], folded: frozenset[bytes]) -> None:
        super().__init__(pattern)
        self.exact = exact
        self.folded = folded

    def hit_keywords(self) -> list[tuple[bytes, bool, int]] | None:
        """(keyword, case-folded, KW_* role) of every keyword; None when an empty keyword makes the
        alternation match everywhere (then only Python's re gives its hits)."""
        if b"" in self.exact or b"" in self.folded:
            return None
        return [(k, False, KW_EXACT) for k in sorted(self.exact)] + [(k, True, KW_FOLDED) for k in sorted(self.folded)]


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
    requires_failure: bool = False  # only counts when the run failed (non-zero or unknown exit, or another error)
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
    # the rules whose finding must lead the failure (name its stage) for the engine to state the fact: knowledge of
    # which signatures a fact is about stays in the pack beside the fact, not in the code that sets it
    lead_rules: frozenset[str] = frozenset()


@dataclass
class Reasoning:
    """The knowledge that needs no signature: exception classes, symptom families and their competing
    causes, stages from frames, and the context factors. Built from the packs' non-rule tables."""

    exceptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    symptoms: dict[str, tuple[str, list[SymptomCause]]] = field(default_factory=dict)
    frame_stages: list[tuple[re.Pattern[str] | None, re.Pattern[str] | None, str]] = field(default_factory=list)
    contexts: list[Context] = field(default_factory=list)
    libraries: frozenset[str] = frozenset()
    package_stacks: dict[str, str] = field(default_factory=dict)  # a frame's package -> the stack it runs on
    op_frameworks: frozenset[str] = frozenset()  # packages whose compiled operations check their operands
    main_runners: re.Pattern[str] | None = None  # function names that run a module's top level as a program
    step_functions: re.Pattern[str] | None = None  # function names of a step the program runs over and over
    patterns: dict[str, Any] = field(default_factory=dict)  # [patterns]: the named texts reasoning reads
    calibration: list[tuple[float, float]] = field(default_factory=list)  # (raw, calibrated), raw ascending
    ranking: dict[str, float] = field(default_factory=dict)  # [ranking.weights]: feature -> weight (engine.rerank)


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
    cache_write: Callable[[], None] | None = field(default=None, init=False, compare=False, repr=False)
    """The on-disk cache of these packs, not written yet (see ``keep_cache``): written once the team
    cards' folder is known, since a cache folder inside it is never written to."""

    def by_id(self, rule_id: str) -> Rule | None:
        for r in self.rules:
            if r.id == rule_id:
                return r
        return None


# who owns a frame's file (``engine.reason.frame_owner``): what a ``[[stuck_frame]]``'s ``owner`` may name
FRAME_OWNERS = frozenset({"user", "test", "library", "stdlib"})


class RuleError(ValueError):
    pass


def _keys_of(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


# the keys a [[rule]], its [[rule.causes]] and the reasoning tables may hold (the model's own fields where a table
# is one): TOML takes a mistyped or misplaced key (a cause's fields left under the rule when its [[rule.causes]]
# header is lost, a context's "factor" for "factors") as data, so the knowledge it meant would be dropped without a
# word; naming the key skips the pack (or its reasoning tables) with a warning instead
RULE_KEYS = _keys_of(Rule) - {"pack"}  # ``pack`` is set from the file's name
CAUSE_KEYS = _keys_of(CauseSpec)
SYMPTOM_CAUSE_KEYS = _keys_of(SymptomCause)
CONTEXT_KEYS = _keys_of(Context)
EXCEPTION_KEYS = frozenset({"names", "family", "type", "stage"})
SYMPTOM_KEYS = frozenset({"id", "title", "causes"})
FRAME_STAGE_KEYS = frozenset({"file", "func", "stage"})


def _known_keys(raw: dict[str, Any], allowed: frozenset[str], where: str, lazy: bool = False) -> None:
    """Raise on a key ``allowed`` does not hold. Only where a pack is parsed and checked (not ``lazy``): a
    cached pack was checked when it was cached, and a fresh CLI should not pay ~7 ms to check it again."""
    if lazy or raw.keys() <= allowed:
        return
    unknown = sorted(set(raw) - allowed)
    raise RuleError(f"{where}: unknown key {', '.join(map(repr, unknown))}")


def _cause(raw: dict[str, Any], rule_id: str, lazy: bool = False) -> CauseSpec:
    _known_keys(raw, CAUSE_KEYS, f"rule {rule_id}: a cause", lazy)
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


def _rule(raw: dict[str, Any], pack: str, lazy: bool = False) -> Rule:
    rid = raw.get("id")
    if not rid:
        raise RuleError("a rule without id")
    _known_keys(raw, RULE_KEYS, f"rule {rid}", lazy)
    flags = re.IGNORECASE if raw.get("ignore_case") else 0
    keywords = [str(k) for k in raw.get("keywords", [])]
    exit_codes = [int(c) for c in raw.get("exit_codes", [])]
    if not keywords and not exit_codes:
        raise RuleError(f"rule {rid}: needs keywords or exit_codes")
    try:
        if lazy:  # checked when the pack was cached: compiled on first use
            patterns: list[Any] = [LazyRegex(_str(p), flags) for p in raw.get("patterns", [])]
        else:
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
        causes=[_cause(c, rid, lazy) for c in raw.get("causes", [])],
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


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise RuleError(f"a pattern must be a string, not {type(value).__name__}")
    return value


def parse_pack(text: str, name: str) -> tuple[list[Rule], dict[str, Any]]:
    """Parse one TOML pack; returns its rules and its other tables (stuck frames, fallback, …)."""
    import tomllib  # here, not at the top: a process that finds the packs in the cache never needs it

    return pack_rules(tomllib.loads(text), name)


def pack_rules(data: dict[str, Any], name: str, lazy: bool = False) -> tuple[list[Rule], dict[str, Any]]:
    """The rules and other tables of one parsed pack (``lazy``: its regexes compiled on first use)."""
    rules = [_rule(r, name, lazy) for r in data.get("rule", [])]
    return rules, {k: v for k, v in data.items() if k != "rule"}


def _is_builtin_pack(name: str) -> bool:
    return name.endswith(".toml") and name != "retort.toml"


def _builtin_packs() -> list[tuple[str, str]]:
    out = []
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda p: p.name):
        if _is_builtin_pack(entry.name):
            out.append((entry.name, entry.read_text(encoding="utf-8")))
    return out


def _builtin_stamps() -> list[tuple[str, str]] | None:
    """Each built-in pack's name with its file's size, times and inode, without reading it; None when the
    packs are not plain files (a zipped install): then only their bytes identify them.

    Why: reading and hashing the ~0.6 MB of built-in packs to find their cache cost a fresh CLI about as much
    as reading the cache itself. The change time is in the stamp because nobody can set it: a pack rewritten
    with the same size and its old modification time (``cp -p``, a build that fixes every file's time) still
    gets a new stamp."""
    folder = os.path.dirname(os.path.abspath(__file__))
    try:
        with os.scandir(folder) as it:
            entries = sorted((e for e in it if _is_builtin_pack(e.name)), key=lambda e: e.name)
            stamps = []
            for e in entries:
                st = e.stat(follow_symlinks=True)
                stamps.append((e.name, f"{folder}\0{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"))
    except OSError:
        return None
    return stamps or None


def build_ruleset(packs: list[tuple[str, str]], *, cache: bool = False, key: str | None = None) -> RuleSet:
    """The rule set of ``packs`` ((name, TOML text) pairs, later packs replacing rules by id). A pack that
    does not parse or check is skipped with a warning. ``cache``: read and keep what parsing found in the
    user's cache folder (see the module's docstring), under ``key`` when the caller has one for these packs
    (the built-in packs' file stamps), else a hash of their bytes; the rule set and the warnings are the
    same."""
    key = (key or _cache_key(packs)) if cache else ""
    stored = _read_cache(key) if cache else None
    if stored is not None:
        parsed, keyword_pattern = stored
        return _assemble(parsed, lazy=True, keyword_pattern=keyword_pattern)
    parsed = [_parse(name, text) for name, text in packs]
    rs = _assemble(parsed, lazy=False)
    if cache:
        regex = rs.keyword_regex
        rs.cache_write = partial(_write_cache, key, parsed, None if regex is None else regex.pattern)
    return rs


def keep_cache(rs: RuleSet, allowed: bool = True) -> None:
    """Write the rule set's pending cache (once; ``allowed`` False drops it: the cache folder lies inside
    the team's cards, which are never written to). Called by ``factory.attach`` and the scanner."""
    write, rs.cache_write = rs.cache_write, None
    if write is not None and allowed:
        write()
    pending = list(_ENTRY_POINT_ANSWERS.items())
    _ENTRY_POINT_ANSWERS.clear()
    for path, text in pending if allowed else ():
        _write_entry_points(path, text)


_Parsed = tuple[str, "dict[str, Any] | None", str]  # (pack name, its TOML data or None, why it was refused)


def _parse(name: str, text: str) -> _Parsed:
    """One pack parsed and checked (every regex compiled): its data, or why it is refused."""
    import tomllib  # see parse_pack

    try:
        data = tomllib.loads(text)
        pack_rules(data, name)
    except (tomllib.TOMLDecodeError, RuleError, TypeError, ValueError) as exc:
        return (name, None, str(exc))
    return (name, data, "")


def _assemble(parsed: list[_Parsed], *, lazy: bool, keyword_pattern: bytes | None = None) -> RuleSet:
    rules: list[Rule] = []
    stuck: list[dict[str, Any]] = []
    fallback: dict[str, Any] = {}
    actions: dict[str, list[str]] = {}
    seen: dict[str, int] = {}
    reasoning = Reasoning()
    for name, data, refused in parsed:
        try:
            if data is None:
                raise RuleError(refused)
            pack_rules_, extra = pack_rules(data, name, lazy)
        except (RuleError, TypeError, ValueError) as exc:
            warnings.warn(f"faildiag: rule pack {name} skipped: {exc}", stacklevel=3)
            continue
        try:
            _add_reasoning(reasoning, extra, lazy)
        except (RuleError, TypeError, ValueError, KeyError, AttributeError, re.error) as exc:
            # AttributeError: a table given as a plain value (``calibration = 3``) where the loader reads its keys
            warnings.warn(f"faildiag: reasoning tables of {name} skipped: {exc}", stacklevel=3)
        for r in pack_rules_:  # a later pack may replace a rule by id
            if r.id in seen:
                rules[seen[r.id]] = r
            else:
                seen[r.id] = len(rules)
                rules.append(r)
        for entry in extra.get("stuck_frame", []):
            if entry.get("owner", "user") not in FRAME_OWNERS:
                warnings.warn(
                    f"faildiag: a stuck_frame of {name} skipped: unknown owner {entry['owner']!r}", stacklevel=3
                )
                continue
            stuck.append(entry)
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
    exact, folded = _keyword_sets(rules)
    if keyword_pattern is None:
        keyword_pattern = keyword_alternation(rules)
    regex = KeywordRegex(keyword_pattern, exact, folded) if keyword_pattern else None
    return RuleSet(rules, index, regex, [r for r in rules if r.exit_codes], stuck, fallback, actions, reasoning)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- the cache
def _cache_key(packs: list[tuple[str, str]]) -> str:
    """What the cached data depends on: every pack's name and bytes, this module (its checks), the
    vocabularies and the Python that parsed the TOML and compiled the regexes."""
    h = hashlib.sha256(f"faildiag-rules-{CACHE_FORMAT}\0{sys.version}\0".encode())
    try:
        st = os.stat(__file__)
        h.update(f"{st.st_size}\0{st.st_mtime_ns}\0".encode())
    except OSError:
        h.update(b"?\0")
    h.update(repr((CATEGORIES, STAGES, TYPES)).encode())
    for name, text in packs:
        body = text.encode("utf-8", "surrogatepass")
        h.update(f"\0{len(name)}:{name}\0{len(body)}:".encode("utf-8", "surrogatepass") + body)
    return h.hexdigest()[:40]


def _cache_file(key: str) -> Path:
    from ..parse.mpscan import cache_dir

    return cache_dir() / f"rules-{key}.json"


def _read_cache(key: str) -> tuple[list[_Parsed], bytes | None] | None:
    """The cached parse of the packs under ``key``, or None (missing, not ours, damaged, another key)."""
    try:
        path = _cache_file(key)
        fsio.check_output_root(path.parent)  # a folder of ours that nobody else may write
        data = json.loads(fsio.read_capped(path, MAX_CACHE_BYTES))
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("key") != key:
            return None
        parsed: list[_Parsed] = []
        for entry in data["packs"]:
            name, pack, refused = entry
            if not isinstance(name, str) or not isinstance(refused, str) or not isinstance(pack, dict | None):
                return None
            parsed.append((name, pack, refused))
        pattern = data["keywords"]
        if pattern is not None and not isinstance(pattern, str):
            return None
        return parsed, None if pattern is None else pattern.encode("latin-1")
    except (OSError, ValueError, KeyError, TypeError, RecursionError, UnicodeError):
        return None


def _write_cache(key: str, parsed: list[_Parsed], keywords: bytes | None) -> None:
    """Keep the parse for the next process (best effort: a read-only home or a full disk only costs it
    the full parse). Only the newest few caches are kept: each change of a pack makes a new key."""
    payload = {
        "format": CACHE_FORMAT,
        "key": key,
        "packs": [list(p) for p in parsed],
        "keywords": None if keywords is None else keywords.decode("latin-1"),
    }
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=True, separators=(",", ":"))
        path = _cache_file(key)
        written = fsio.safe_atomic_write(path.parent, path.name, text, mode=fsio.PRIVATE_FILE_MODE)
        old = sorted(written.parent.glob("rules-*.json"), key=lambda p: p.lstat().st_mtime, reverse=True)
        for stale in old[KEEP_CACHES:]:
            stale.unlink(missing_ok=True)
    except (OSError, ValueError, TypeError, RecursionError):  # TOML dates have no JSON form: not cached
        pass


# ------------------------------------------------------------------------------- installed entry points
def has_entry_points(group: str) -> bool:
    """Whether any installed distribution declares an entry point in ``group`` (the command line's plugins,
    which may add rule packs), from a cache when the places Python finds distributions in are unchanged.

    Why: answering it means importing ``importlib.metadata`` (email, zipfile, csv...) and reading every
    installed distribution's metadata: about a tenth of a fresh ``faildiag diagnose`` of a small log, on
    every call, to learn that no third-party pack is installed. The answer is kept beside the rule packs'
    cache, keyed by the Python, ``sys.path`` and the ``*.dist-info`` / ``*.egg-info`` folders in each of its
    entries with the time of their ``entry_points.txt``: installing, upgrading or removing a distribution
    changes those, so the next process looks again. A miss, an unreadable or foreign cache: a full look,
    whose answer is written with the rule set's cache (``keep_cache``: never inside the team cards' folder)."""
    key = _entry_points_key(group)
    path = _entry_points_file(key)
    try:
        fsio.check_output_root(path.parent)
        data = json.loads(fsio.read_capped(path, 1 << 16))
        found = data.get("found") if isinstance(data, dict) and data.get("key") == key else None
        if isinstance(found, bool):
            return found
    except (OSError, ValueError, TypeError, RecursionError, UnicodeError):
        pass
    found = _scan_entry_points(group)
    _ENTRY_POINT_ANSWERS[path] = json.dumps({"format": CACHE_FORMAT, "key": key, "group": group, "found": found})
    return found


_ENTRY_POINT_ANSWERS: dict[Path, str] = {}
"""Answers of ``has_entry_points`` not written yet: like a rule set's cache (``RuleSet.cache_write``) they
wait for ``keep_cache``, which knows whether the cache folder lies inside the team cards' folder (never
written to). One process makes at most one entry (the command line's plugin manager is made once)."""


def _write_entry_points(path: Path, text: str) -> None:
    try:
        written = fsio.safe_atomic_write(path.parent, path.name, text, mode=fsio.PRIVATE_FILE_MODE)
        old = sorted(written.parent.glob("entry-points-*.json"), key=lambda p: p.lstat().st_mtime, reverse=True)
        for stale in old[KEEP_CACHES:]:  # each install or removal makes a new key
            stale.unlink(missing_ok=True)
    except (OSError, ValueError):  # a read-only home or a foreign cache folder: looked at again next time
        pass


def _scan_entry_points(group: str) -> bool:
    from importlib.metadata import entry_points  # the cost that the cache saves

    try:
        return bool(entry_points(group=group))
    except Exception:  # a broken distribution's metadata: let the plugin manager's own scan report it
        return True


def _entry_points_key(group: str) -> str:
    """The distributions Python can find now, as names and times (see ``has_entry_points``)."""
    h = hashlib.sha256(f"faildiag-entry-points-{CACHE_FORMAT}\0{group}\0{sys.version}\0".encode())
    h.update(repr([type(f).__qualname__ for f in sys.meta_path]).encode())
    for entry in sys.path:
        h.update(f"\0{len(entry)}:{entry}\0".encode("utf-8", "surrogatepass"))
        for stamp in _distributions_in(entry or "."):
            h.update(stamp.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:40]


def _distributions_in(where: str) -> list[str]:
    """Each ``*.dist-info`` / ``*.egg-info`` of one ``sys.path`` entry with its ``entry_points.txt``'s time,
    or the entry's own time when it is a file (a zip). Names and files, not the folder's time: the current
    folder is often on ``sys.path`` and changes with every output folder written into it."""
    try:
        with os.scandir(where) as it:
            names = sorted(e.name for e in it if e.name.lower().endswith((".dist-info", ".egg-info")))
    except NotADirectoryError:
        try:
            st = os.stat(where)
        except OSError:
            return ["-"]
        return [f"file:{st.st_size}:{st.st_mtime_ns}"]
    except (OSError, ValueError):
        return ["-"]
    out = []
    for name in names:
        try:
            st = os.stat(os.path.join(where, name, "entry_points.txt"))
            stamp = f"{st.st_size}:{st.st_mtime_ns}"
        except (OSError, ValueError):
            stamp = "-"
        out.append(f"{name}\0{stamp}\0")
    return out


def _entry_points_file(key: str) -> Path:
    from ..parse.mpscan import cache_dir

    return cache_dir() / f"entry-points-{key}.json"


def _add_reasoning(out: Reasoning, data: dict[str, Any], lazy: bool = False) -> None:
    """Fold one pack's ``[[exception]]``, ``[[symptom]]``, ``[[frame_stage]]``, ``[[context]]`` and
    ``[library]`` tables into ``out`` (a later pack's entry with the same name replaces an earlier one)."""
    for ex in data.get("exception", []):
        _known_keys(ex, EXCEPTION_KEYS, f"exception {ex.get('names')}", lazy)
        entry = {k: v for k, v in ex.items() if k != "names"}
        for key in ("type", "stage"):
            vocab = TYPES if key == "type" else STAGES
            if entry.get(key) is not None and entry[key] not in vocab:
                raise RuleError(f"exception {ex.get('names')}: unknown {key} {entry[key]!r}")
        for name in ex.get("names", []):
            out.exceptions[str(name)] = entry
    for sym in data.get("symptom", []):
        _known_keys(sym, SYMPTOM_KEYS, f"symptom {sym.get('id')}", lazy)
        causes = []
        for c in sym.get("causes", []):
            _known_keys(c, SYMPTOM_CAUSE_KEYS, f"symptom {sym.get('id')}: a cause", lazy)
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
        _known_keys(fs, FRAME_STAGE_KEYS, "frame_stage", lazy)
        if fs.get("stage") not in STAGES:
            raise RuleError(f"frame_stage: unknown stage {fs.get('stage')!r}")
        if not fs.get("func") and not fs.get("file"):
            raise RuleError("frame_stage: needs func or file")
        func = _regex(fs["func"], lazy) if fs.get("func") else None
        file = _regex(fs["file"], lazy) if fs.get("file") else None
        out.frame_stages.append((func, file, fs["stage"]))
    for ctx in data.get("context", []):
        _known_keys(ctx, CONTEXT_KEYS, f"context {ctx.get('fact')}", lazy)
        factors = {str(k): float(v) for k, v in ctx.get("factors", {}).items()}
        unknown = [k for k in factors if k not in CATEGORIES]
        if unknown:
            raise RuleError(f"context {ctx.get('fact')}: unknown categories {unknown}")
        pattern = _regex(ctx["pattern"], lazy) if ctx.get("pattern") else None
        lead = frozenset(str(r) for r in ctx.get("lead_rules", []))
        out.contexts.append(Context(str(ctx["fact"]), str(ctx.get("why", "")), factors, pattern, lead))
    points = data.get("calibration", {}).get("points")
    if points:
        pts = sorted((float(a), float(b)) for a, b in points)
        if any(not (0 <= a <= 1 and 0 <= b <= 1) for a, b in pts):
            raise RuleError("calibration points must lie in [0, 1]")
        out.calibration = pts
    ranking = data.get("ranking", {})
    weights = ranking.get("weights", {}) if isinstance(ranking, dict) else None
    if not isinstance(weights, dict) or any(
        isinstance(v, bool) or not isinstance(v, (int, float)) for v in weights.values()
    ):
        raise RuleError("ranking.weights must map feature names to numbers")
    out.ranking = {**out.ranking, **{str(k): float(v) for k, v in weights.items()}}
    lib = data.get("library", {})
    for key in ("frameworks", "checkouts"):  # package names, and "repository/package" folder pairs
        out.libraries = out.libraries | frozenset(str(x) for x in lib.get(key, []))
    for entry in lib.get("copied_scripts", []):  # "package/script.py": the script's name, and whose it is
        pkg, _, script = str(entry).partition("/")
        if not pkg or not script.endswith(".py") or "/" in script:
            raise RuleError(f"library.copied_scripts: {entry!r} is not 'package/script.py'")
        out.libraries = out.libraries | {script, f"{pkg}/{script}"}
    out.op_frameworks = out.op_frameworks | frozenset(str(x) for x in lib.get("op_frameworks", []))
    frames = data.get("frames", {})
    if frames.get("main_runners"):
        out.main_runners = _names_regex(frames["main_runners"], out.main_runners, lazy)
    if frames.get("step_functions"):
        out.step_functions = _names_regex(frames["step_functions"], out.step_functions, lazy)
    _add_patterns(out, data.get("patterns", {}), lazy)
    for pkg, stack in data.get("stack_packages", {}).items():
        if stack not in STACKS:
            raise RuleError(f"stack_packages: unknown stack {stack!r} for {pkg!r}")
        out.package_stacks[str(pkg)] = str(stack)


_PART = re.compile(r"<<(\w+)>>")


def _add_patterns(out: Reasoning, table: dict[str, Any], lazy: bool) -> None:
    """The ``[patterns]`` table: the texts a reasoning step looks for by name (a refused setting, a runtime's
    error words). ``<<name>>`` inside one stands for the text of another entry of this pack or an earlier one (one
    spelling of a part that several alternatives share); inside the entry ``name`` itself it stands for the
    earlier pack's entry, so a team's pack extends the built-in words (``'<<name>>|…'``) or replaces them."""
    earlier = {name: str(getattr(p, "pattern", p)) for name, p in out.patterns.items()}
    texts = {str(k): _str(v) for k, v in table.items()}

    def expand(text: str, within: str, depth: int = 0) -> str:
        if depth > 8:
            raise RuleError(f"patterns: parts of {within!r} nest too deeply")
        return _PART.sub(
            lambda m: "(?:" + expand(_part(m.group(1), within, texts, earlier), m.group(1), depth + 1) + ")", text
        )

    out.patterns.update({name: _regex(expand(text, name), lazy) for name, text in texts.items()})


def _part(name: str, within: str, texts: dict[str, str], earlier: dict[str, str]) -> str:
    """The text ``<<name>>`` stands for inside the entry ``within``: this pack's entry, else an earlier pack's
    (the earlier one's own, already expanded, when an entry names itself)."""
    text = earlier.get(name) if name == within else texts.get(name, earlier.get(name))
    if text is None:
        raise RuleError(f"patterns: {within!r} names an unknown part <<{name}>>")
    return text


def _names_regex(names: list[Any], earlier: Any, lazy: bool) -> Any:
    """One anchored alternation of function names (``name*`` also matches longer names), compiled as every
    other pack regex is (lazily from the cache); a later pack's list is another anchored alternation beside the
    earlier one: it adds names, it does not drop the built-in ones."""
    alts = [re.escape(str(n)[:-1]) + r"\w*" if str(n).endswith("*") else re.escape(str(n)) for n in names]
    pattern = "^(?:" + "|".join(alts) + ")$"
    return _regex(pattern if earlier is None else f"{earlier.pattern}|{pattern}", lazy)


def _regex(pattern: Any, lazy: bool) -> Any:
    return LazyRegex(_str(pattern)) if lazy else re.compile(pattern)


def _keyword_sets(rules: list[Rule]) -> tuple[frozenset[bytes], frozenset[bytes]]:
    """The exact keywords and the case-folded ones (lower case), as the alternation spells them."""
    exact: set[bytes] = set()
    folded: set[bytes] = set()
    for r in rules:
        if r.ignore_case:
            folded.update(k.lower().encode() for k in r.keywords)
        else:
            exact.update(k.encode() for k in r.keywords)
    return frozenset(exact), frozenset(folded)


def keyword_alternation(rules: list[Rule]) -> bytes:
    """Every rule keyword in one alternation (the exact ones, then the case-folded ones): the text of
    ``RuleSet.keyword_regex``, compiled only when Python's re searches with it."""
    exact, folded = _keyword_sets(rules)
    alts = [_trie(sorted(exact))] if exact else []
    if folded:
        alts.append(b"(?i:" + _trie(sorted(folded)) + b")")
    return b"|".join(alts)


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
    stamps = _builtin_stamps()
    if stamps is None:
        return build_ruleset(_builtin_packs() + list(extra_key), cache=True)
    key = _cache_key([("stamp", "\0".join(f"{n}\0{s}" for n, s in stamps)), *extra_key])
    stored = _read_cache(key)
    if stored is not None:  # the packs are not even read
        parsed, keyword_pattern = stored
        return _assemble(parsed, lazy=True, keyword_pattern=keyword_pattern)
    return build_ruleset(_builtin_packs() + list(extra_key), cache=True, key=key)


def load_ruleset(extra_packs: list[tuple[str, str]] | None = None) -> RuleSet:
    """The built-in packs plus ``extra_packs`` ((name, toml text) pairs), compiled once per process."""
    return _default_ruleset_cached(tuple(extra_packs or ()))


def read_pack_file(path: str | Path) -> tuple[str, str]:
    p = Path(path)
    return (p.name, p.read_text(encoding="utf-8"))
