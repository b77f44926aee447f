"""Candidate lines of a big log in C: one multi-pattern engine instead of Python's backtracking ``re``.

Why: the scanner's candidate pattern (every rule keyword plus a few structural markers, see ``scan.py``) is a
large alternation; Python's ``re`` tries it at every byte and crawls at a few MB/s, so a 300 MB training log
took seconds before Python even looked at a line. A Hyperscan database of the same patterns (one id per
keyword, caseless where the rule says so, the structural markers as regexes) finds every line holding any of
them at hundreds of MB/s; RE2 (a DFA) runs the very same alternation at about the same speed when the
``hyperscan`` wheel is missing. Either engine only answers "which lines hold a hit": the scanner then feeds
exactly those lines to Python, as the standard-library path does, so all three give the same findings.

Not ``HS_FLAG_SINGLEMATCH``: a block holds thousands of lines, and a pattern reported once per block would
hide its later lines. Matches are reported by end offset and folded into line starts as they come.

A structural marker Hyperscan would anchor on a literal that healthy logs are full of (``.py:`` of pytest's
``path.py:12: in f``, in every line of a logger printing ``trainer.py:412``: half the scan time of a training
log) is searched by a rarer necessary condition instead (``Patterns.prefilters``), and Python's re checks the
marker itself on the few lines that hold the condition and no other hit. A block where too many lines do
(a log format that puts the condition in every line) is scanned again with the marker itself, so that
worst case costs what the plain database costs.

The compiled Hyperscan database (~0.1 s to build for today's knowledge base) is kept in the user's cache
folder (``$XDG_CACHE_HOME/faildiag``, private 0o700, written through ``fsio``'s no-follow helpers), keyed by
a hash of the patterns, their flags and the engine's version, so a fresh CLI loads it in microseconds. A
cache that cannot be read or written is ignored: it only costs the compile.

``FAILDIAG_SCAN_ENGINE=hyperscan|re2|python`` forces an engine (the parity tests and benchmarks use it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Any, NamedTuple, cast

from .. import fsio

ENGINE_ENV = "FAILDIAG_SCAN_ENGINE"
ENGINES = ("hyperscan", "re2", "python")
MIN_BYTES = 256 * 1024  # below this a log is scanned by Python's re when RE2 is the engine (see ``worth_it``)
KEEP_DATABASES = 8  # cached databases kept (several rule sets: with and without team cards)
MAX_DB_BYTES = 64 << 20  # a cached database larger than this is not ours
PREFILTER_LIMIT = 1024  # prefilter lines of one block verified by Python's re, at most (~1 ms); more: rescan
RE2_MAX_MEM = 64 << 20  # RE2's DFA budget: generous for the alternation, small beside the RSS target
_CACHE_FORMAT = b"faildiag-mpscan-2"

LineStarts = Any
"""A line finder: called with a block of whole lines, the sorted start offsets of the lines that hold a
hit; ``scan(block)`` gives them with the keyword occurrences (or None when the engine does not report
them). ``table``: each expression id's (length, kinds), when it reports them."""


@dataclass(frozen=True)
class Patterns:
    """What the candidate search looks for: the structural markers (regexes, as bytes) and the rule
    keywords (literals, each with its case mode); ``combined`` is the same as one Python alternation."""

    structural: tuple[bytes, ...]
    keywords: tuple[tuple[str, bool], ...]
    combined_of: Callable[[], bytes] | bytes
    hits: tuple[tuple[bytes, bool, int], ...] | None = None
    """The keyword search's own keywords ((literal, case-folded, ``rules.KW_*`` role), see
    ``KeywordRegex.hit_keywords``): reported with their positions so the scanner needs no regex to find
    a line's keywords. Only their lines that also hold a candidate pattern are candidates."""

    keep_out: str | None = None
    """A folder (the team cards', real path) that a cache folder inside of is never written: the
    database is compiled, used, not kept."""
    parts: tuple[Patterns, ...] = ()
    """The same search split in two (the built-in rules', the team cards'), for Hyperscan: one database
    each, their reports joined. The built-in one is the database of every diagnosis without cards (cached
    on disk), so a new or edited factory compiles only its cards' literals. Empty: one database."""
    prefilters: tuple[tuple[bytes, bytes], ...] = ()
    """(structural marker, a regex every line holding the marker also holds): Hyperscan searches the second,
    whose literal is rare where the marker's is common, and the marker is checked by Python's re on the lines
    it hits (see the module's docstring). RE2 and Python's re search the marker itself."""

    @cached_property
    def combined(self) -> bytes:
        """The whole search as one alternation (RE2 and Python's re run it; Hyperscan does not need it):
        made on first use, since with thousands of team cards it takes a while to build."""
        return self.combined_of if isinstance(self.combined_of, bytes) else self.combined_of()


class Entry(NamedTuple):
    """One expression of the database: its bytes (a regex for a structural marker, else a literal), case
    mode, whether a hit makes its line a candidate, and its keyword role (0: none) and length. A named
    tuple, not a frozen dataclass: every diagnosis makes one per keyword (~1,700), and a frozen
    dataclass's ``__init__`` costs several times a tuple's."""

    expr: bytes
    caseless: bool
    candidate: bool
    kinds: int = 0
    length: int = 0
    verify: bytes = b""  # a prefilter's marker (``Patterns.prefilters``): its lines are candidates if it matches


def engine_name() -> str:
    """The engine a big log is scanned with: the one forced by ``FAILDIAG_SCAN_ENGINE``, else the first
    installed of Hyperscan, RE2, Python's re."""
    forced = os.environ.get(ENGINE_ENV, "").strip().lower()
    if forced in ENGINES:
        return forced
    for name in ENGINES[:2]:
        if _module(name) is not None:
            return name
    return "python"


def worth_it(size: int) -> bool:
    """Whether an input that starts with ``size`` bytes is scanned with the engine: a big one always; a
    small one only with Hyperscan, whose database (the built-in one is cached on disk) loads in about a
    hundredth of a second and compiles in less time than Python's alternation of the same keywords,
    which a small input would need instead (the findings are the same either way)."""
    return size >= MIN_BYTES or (size > 0 and engine_name() == "hyperscan")


def _module(name: str) -> Any:
    try:
        if name == "hyperscan":
            import hyperscan

            return hyperscan
        if name == "re2":
            import re2  # type: ignore[import-untyped,import-not-found,unused-ignore]

            return re2
    except ImportError:
        return None
    return None


def build(name: str, patterns: Patterns) -> LineStarts | None:
    """A line finder for ``patterns`` on engine ``name``; None when the engine is missing or refuses the
    patterns (the caller then uses Python's re, with the same findings)."""
    try:
        if name == "hyperscan":
            return _hyperscan(patterns)
        if name == "re2":
            return _re2(patterns)
    except Exception:  # an engine's own error types (CompilerError, re2.error, ...): fall back, never fail
        return None
    return None


def build_soon(name: str, patterns: Patterns) -> LineStarts | None:
    """``build``, with the team cards' database compiled on another thread from now on (None when there is
    no such part or engine: build on first use as usual). Why: Hyperscan compiles without holding the
    GIL, so a new factory's 5,000 literals (~0.06 s) compile while this thread writes the factory's index,
    builds the built-in part and reads the log; the scan waits for them only at its first block."""
    if name != "hyperscan" or len(patterns.parts) != 2 or _module("hyperscan") is None:
        return None
    if not all(p.structural or p.keywords or p.hits for p in patterns.parts):
        return None
    return _Soon(patterns)


class _Soon:
    """The line finder of ``patterns`` (built-in part and cards' part), the cards' part being built on a
    thread started now; the first ``scan`` builds the built-in part here and scans its block with it,
    then waits for the other. Should either part fail, Python's re runs the whole alternation (the
    findings are the same, as with RE2)."""

    def __init__(self, patterns: Patterns) -> None:
        self.patterns = patterns
        self.cards: list[LineStarts | None] = []
        self.lines: LineStarts | None = None
        self.lock = threading.Lock()  # one build, whichever thread scans first
        self.thread = threading.Thread(target=self._build_cards, name="faildiag-card-database")
        self.thread.start()

    def _build_cards(self) -> None:
        try:
            self.cards.append(_hyperscan(self.patterns.parts[1]))
        except Exception:  # an engine's own errors: Python's re then (see ``_build``)
            self.cards.append(None)

    def _build(
        self, block: tuple[bytes | bytearray, int | None, memoryview | None] | None
    ) -> tuple[LineStarts, tuple[list[int], Occurrences | None] | None]:
        """(the line finder, what its built-in part found in ``block`` when it scanned it while the cards'
        part was being built)."""
        with self.lock:
            if self.lines is not None:
                return self.lines, None
            first = None
            try:
                base = _hyperscan(self.patterns.parts[0])
                if base is not None and block is not None:
                    first = base.scan(*block)
            except Exception:
                base = None
            self.thread.join()
            cards = self.cards[0] if self.cards else None
            if base is None or cards is None:
                self.lines, first = _Re2Lines(re.compile(self.patterns.combined)), None
            else:
                self.lines = _JoinedLines(cast("list[_HyperscanLines]", [base, cards]))
            return self.lines, first

    def get(self) -> LineStarts:
        return self.lines if self.lines is not None else self._build(None)[0]

    @property
    def table(self) -> list[tuple[int, int]] | None:
        return getattr(self.get(), "table", None)

    def scan(
        self, buf: bytes | bytearray, n: int | None = None, view: memoryview | None = None
    ) -> tuple[list[int], Occurrences | None]:
        lines, first = (self.lines, None) if self.lines is not None else self._build((buf, n, view))
        if first is not None:
            return cast("_JoinedLines", lines).scan(buf, n, view, first)
        found: tuple[list[int], Occurrences | None] = cast("Any", lines).scan(buf, n, view)
        return found

    def __call__(self, buf: bytes) -> list[int]:
        return self.scan(buf)[0]


# ---------------------------------------------------------------------------------------------- Hyperscan
def entries(patterns: Patterns, literal: bool = False) -> list[Entry]:
    """The database's expressions: the structural markers, the rule keywords (candidates) and the keyword
    search's literals, one id per distinct literal and case mode (a case-folded literal is spelt in lower
    case: the engine folds ASCII only, as Python's re does on bytes). ``literal``: the literals as they
    are, for Hyperscan's literal compiler (no ``re.escape``, a few µs each with thousands of cards)."""
    pre = dict(patterns.prefilters)
    out = [Entry(pre[e], False, False, verify=e) if e in pre else Entry(e, False, True) for e in patterns.structural]
    merged: dict[tuple[bytes, bool], list[int]] = {}  # (literal, caseless) -> [candidate, kinds]
    for kw, ignore_case in sorted(set(patterns.keywords)):
        if kw:
            raw = kw.encode("utf-8")
            merged.setdefault((raw.lower() if ignore_case else raw, ignore_case), [0, 0])[0] = 1
    for raw, caseless, kind in patterns.hits or ():
        if raw:
            merged.setdefault((raw.lower() if caseless else raw, caseless), [0, 0])[1] |= kind
    for (raw, caseless), (cand, kinds) in merged.items():
        out.append(Entry(raw if literal else re.escape(raw), caseless, bool(cand), kinds, len(raw)))
    return out


def _expressions(patterns: Patterns, hs: Any) -> tuple[list[bytes], list[int]]:
    ents = entries(patterns)
    return [e.expr for e in ents], [hs.HS_FLAG_CASELESS if e.caseless else 0 for e in ents]


def _hyperscan(patterns: Patterns) -> LineStarts | None:
    if patterns.parts:
        found = [_hyperscan(p) for p in patterns.parts if p.structural or p.keywords or p.hits]
        if any(f is None for f in found) or not found:
            return None
        return found[0] if len(found) == 1 else _JoinedLines(cast("list[_HyperscanLines]", found))
    hs = _module("hyperscan")
    if hs is None:
        return None
    literal = not patterns.structural  # the team cards' part: literals only
    ents = entries(patterns, literal)
    exprs = [e.expr for e in ents]
    flags = [hs.HS_FLAG_CASELESS if e.caseless else 0 for e in ents]
    if not exprs:
        return None
    key = _cache_key(exprs, flags, hs, literal)
    db = _load_cached(key, hs)
    if db is None and literal and patterns.keep_out is not None:
        tiered = _tiered(hs, ents, patterns.keep_out)
        if tiered is not None:
            return tiered
    if db is None:
        db = _compile(hs, exprs, flags, literal)
        _store_cached(key, hs.dumpb(db), patterns.keep_out)
        if literal and patterns.keep_out is not None and len(ents) >= TIER_FROM:
            _store_manifest(patterns.keep_out, key, ents)
    exact = partial(_hyperscan, replace(patterns, prefilters=())) if patterns.prefilters else None
    return _HyperscanLines(db, hs, ents, exact)


# ------------------------------------------------------------------------- a changed factory's cards
# Why: the cards' database holds every card keyword (~11 µs each to compile: 0.06 s for 5,000 cards), and
# one card edited or added changes its key. So the last full database of a factory is its *stable* one,
# named in a small manifest beside it (the literals in their id order); a later set of keywords is scanned
# with that database plus a *delta* database of only the literals it lacks, and the stable literals no
# card holds any more are kept out of the reports (never a candidate, no keyword role): together they
# report exactly what one database of the current keywords reports. When the delta grows past a quarter
# of the stable set (or the literals no card holds any more do), the full database is compiled again and
# becomes the stable one. A factory of under TIER_FROM literals compiles in full (a few ms), never tiered.
MIN_DELTA = 256
TIER_FROM = 1024
_MANIFEST_FORMAT = 1


def _manifest_file(keep_out: str) -> Path:
    name = hashlib.sha256(keep_out.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return cache_dir() / f"hs-cards-{name}.json"


def _store_manifest(keep_out: str, key: str, ents: list[Entry]) -> None:
    """Name the database ``key`` as the stable one of the factory ``keep_out``; never fatal."""
    where = os.path.realpath(cache_dir())
    if where == keep_out or where.startswith(keep_out.rstrip(os.sep) + os.sep):
        return
    literals = [[e.expr.decode("latin-1"), int(e.caseless)] for e in ents]
    body = json.dumps({"format": _MANIFEST_FORMAT, "key": key, "literals": literals}, separators=(",", ":"))
    try:
        fsio.safe_atomic_write(cache_dir(), _manifest_file(keep_out).name, body, mode=fsio.PRIVATE_FILE_MODE)
    except (OSError, ValueError):
        pass


def _tiered(hs: Any, ents: list[Entry], keep_out: str) -> LineStarts | None:
    """The stable database of the factory ``keep_out`` and a delta database of the literals it lacks (see
    above); None when there is no usable stable database or the delta is too large to be worth it."""
    try:
        fsio.check_output_root(cache_dir())
        data = json.loads(fsio.read_capped(_manifest_file(keep_out), MAX_DB_BYTES))
        if not isinstance(data, dict) or data.get("format") != _MANIFEST_FORMAT:
            return None
        key, literals = data["key"], [(str(x).encode("latin-1"), bool(c)) for x, c in data["literals"]]
    except Exception:  # missing, not ours, not of this shape: compile in full
        return None
    if len(literals) < TIER_FROM:
        return None
    flags = [hs.HS_FLAG_CASELESS if c else 0 for _, c in literals]
    if _cache_key([x for x, _ in literals], flags, hs, True) != key:
        return None  # the manifest does not name the database it describes
    current = {(e.expr, e.caseless): e for e in ents}
    stable = [current.pop(lit) if lit in current else Entry(lit[0], lit[1], False, 0, len(lit[0])) for lit in literals]
    delta = list(current.values())
    dead = len(literals) - (len(ents) - len(delta))
    if max(len(delta), dead) > max(MIN_DELTA, len(literals) // 4):
        return None
    db = _load_cached(key, hs)
    if db is None:
        return None
    found: list[_HyperscanLines] = [_HyperscanLines(db, hs, stable)]
    if delta:
        exprs = [e.expr for e in delta]
        dflags = [hs.HS_FLAG_CASELESS if e.caseless else 0 for e in delta]
        dkey = _cache_key(exprs, dflags, hs, True)
        ddb = _load_cached(dkey, hs)
        if ddb is None:
            try:
                ddb = _compile(hs, exprs, dflags, True)
            except Exception:
                return None
            _store_cached(dkey, hs.dumpb(ddb), keep_out)
        found.append(_HyperscanLines(ddb, hs, delta))
    return found[0] if len(found) == 1 else _JoinedLines(found)


def _compile(hs: Any, exprs: list[bytes], flags: list[int], literal: bool) -> Any:
    """The database of ``exprs``. Literals go to Hyperscan's literal compiler (Hyperscan 5.2+): about a
    third faster than the same literals escaped as regexes, which is most of what a factory's first
    reading spends on its cards' database; an engine without it gets the escaped regexes."""
    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    ids = list(range(len(exprs)))
    if literal:
        try:
            db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags, literal=True)
            return db
        except Exception:  # an older wheel (no ``literal``) or engine: the regex compiler below
            db = hs.Database(mode=hs.HS_MODE_BLOCK)
            exprs = [re.escape(e) for e in exprs]
    db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
    return db


Occurrences = dict[int, list[tuple[int, int]]]
"""Line start → the keyword-search literals in that line, as (end offset in the block, expression id)."""


class _HyperscanLines:
    """Scans a block with the database; each thread gets its own scratch space (never shared), made once
    and reused for every block it scans (~30 µs to allocate for the built-in database: once per 2 MiB
    block it was 2 % of a big log's scan).
    ``scan`` also reports where the keyword search's literals are (``Occurrences``); ``table`` gives each
    expression id's (length, kinds)."""

    def __init__(
        self, db: Any, hs: Any, ents: list[Entry], exact: Callable[[], LineStarts | None] | None = None
    ) -> None:
        self.db = db
        self.hs = hs
        self.candidate = [e.candidate for e in ents]
        self.table = [(e.length, e.kinds) for e in ents]
        self.keywords = any(e.kinds for e in ents)
        self.verify = [re.compile(e.verify) if e.verify else None for e in ents]
        self.exact = exact  # builds the database of the markers themselves, for a block of too many maybes
        self.exact_lines: list[LineStarts | None] = []  # what ``exact`` built, once built
        self.local = threading.local()  # this thread's scratch space (``_scratch``)

    def _scratch(self) -> Any:
        scratch = getattr(self.local, "scratch", None)
        if scratch is None:
            scratch = self.local.scratch = self.hs.Scratch(self.db)
        return scratch

    def __call__(self, buf: bytes) -> list[int]:
        return self.scan(buf)[0]

    def scan(
        self, buf: bytes | bytearray, n: int | None = None, view: memoryview | None = None, limit: int | None = None
    ) -> tuple[list[int], Occurrences | None]:
        """The candidate line starts of ``buf[:n]`` and the keyword occurrences per line (``view``: a
        memoryview of ``buf``, so the block is scanned where it lies). A block with ``limit`` prefilter
        lines (default ``PREFILTER_LIMIT``) is scanned again with the markers themselves (-1: no limit)."""
        n = len(buf) if n is None else n
        limit = PREFILTER_LIMIT if limit is None else limit
        starts: list[int] = []
        occ: Occurrences = {}
        maybe: list[tuple[int, int, re.Pattern[bytes]]] = []  # prefilter lines: (start, end, the marker)
        candidate, table, verify = self.candidate, self.table, self.verify
        line = [0, -1, 0]  # the line being reported (start, end, 1: a candidate, 2: a maybe): O(1) per hit
        here: list[list[tuple[int, int]] | None] = [None]  # its keyword occurrences, once it has one

        def on_match(i: int, _start: int, end: int, _flags: int, _ctx: object) -> bool:
            at = end - 1  # matches never span a newline: the byte before the end is in the hit's line
            if not line[0] <= at <= line[1]:
                line[0] = buf.rfind(b"\n", 0, at) + 1
                nl = buf.find(b"\n", at, n)
                line[1] = n if nl < 0 else nl
                line[2] = 0
                here[0] = None
            if table[i][1]:
                got = here[0]
                if got is None:
                    got = here[0] = occ.setdefault(line[0], [])
                got.append((end, i))
            if line[2] != 1:
                if candidate[i]:
                    line[2] = 1
                    starts.append(line[0])
                elif not line[2] and (marker := verify[i]) is not None:
                    line[2] = 2
                    maybe.append((line[0], line[1], marker))
                    return len(maybe) == limit  # too many: stop, the block is scanned with the markers
            return False

        if n:
            block = (view if view is not None else memoryview(buf))[:n] if n < len(buf) or view is not None else buf
            try:
                self.db.scan(block, match_event_handler=on_match, scratch=self._scratch())
            except self.hs.ScanTerminated:
                exact = self._exact()
                if exact is None:  # no database of the markers (cannot happen short of a compile error)
                    return self.scan(buf, n, view, -1)
                return cast("_HyperscanLines", exact).scan(buf, n, view)
        if maybe:
            starts = _verified(buf, starts, maybe)
        elif any(a >= b for a, b in zip(starts, starts[1:], strict=False)):  # reports come in end order
            starts = sorted(set(starts))
        return starts, (occ if self.keywords else None)

    def _exact(self) -> LineStarts | None:
        """The line finder of the markers themselves, built (or loaded from the cache) on first use: the
        same ids, a prefilter's id being its marker's."""
        if not self.exact_lines and self.exact is not None:
            self.exact_lines.append(self.exact())
        return self.exact_lines[0] if self.exact_lines else None


def _verified(buf: bytes | bytearray, starts: list[int], maybe: list[tuple[int, int, re.Pattern[bytes]]]) -> list[int]:
    """The candidate line starts plus those prefilter lines that hold their marker, sorted."""
    have = set(starts)
    for start, end, marker in maybe:
        if start not in have and marker.search(buf, start, end):
            have.add(start)
    return sorted(have)


class _JoinedLines:
    """Several databases scanned over the same block, reported as one: the candidate line starts of any,
    the keyword occurrences of all (ids numbered on through ``table``). A literal in two databases is
    reported by both, each with its own roles, which is what one database holding its merged entry says:
    ``_Seen`` takes each role's longest keyword per position, in any order."""

    def __init__(self, parts: list[_HyperscanLines]) -> None:
        self.parts = parts
        self.offsets: list[int] = []
        self.table: list[tuple[int, int]] = []
        for part in parts:
            self.offsets.append(len(self.table))
            self.table.extend(part.table)
        self.keywords = any(part.keywords for part in parts)

    def __call__(self, buf: bytes) -> list[int]:
        return self.scan(buf)[0]

    def scan(
        self,
        buf: bytes | bytearray,
        n: int | None = None,
        view: memoryview | None = None,
        first: tuple[list[int], Occurrences | None] | None = None,
    ) -> tuple[list[int], Occurrences | None]:
        """``first``: what the first part already found in this block (``_Soon``)."""
        starts: set[int] = set()
        occ: Occurrences = {}
        for part, offset in zip(self.parts, self.offsets, strict=True):
            got, found = first if first is not None and not offset else part.scan(buf, n, view)
            starts.update(got)
            for line, hits in (found or {}).items():
                have = occ.setdefault(line, [])
                have.extend(hits if not offset else [(end, i + offset) for end, i in hits])
        return sorted(starts), (occ if self.keywords else None)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/faildiag`` (an absolute XDG_CACHE_HOME only, as the spec says), else
    ``~/.cache/faildiag``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "faildiag"


def _cache_key(exprs: Sequence[bytes], flags: Sequence[int], hs: Any, literal: bool = False) -> str:
    h = hashlib.sha256(_CACHE_FORMAT + (b"-literal" if literal else b""))
    h.update(str(getattr(hs, "__version__", "?")).encode() + b"\0" + _machine().encode() + b"\0")
    h.update(b"".join(e + b"\0" + str(f).encode() + b"\n" for e, f in zip(exprs, flags, strict=True)))
    return h.hexdigest()[:40]


def _machine() -> str:
    """``platform.machine()`` without importing ``platform`` (a fresh CLI's every call would pay it)."""
    try:
        return os.uname().machine
    except AttributeError:  # Windows
        import platform

        return platform.machine()


def _cache_file(key: str) -> Path:
    return cache_dir() / f"hs-{key}.db"


def _load_cached(key: str, hs: Any) -> Any:
    """The cached database, or None (missing, not ours, unreadable, built for another CPU or version)."""
    folder = cache_dir()
    try:
        fsio.check_output_root(folder)  # a folder of ours that nobody else may write: its files are ours
        data = fsio.read_capped(_cache_file(key), MAX_DB_BYTES)
        db = hs.loadb(bytes(data), hs.HS_MODE_BLOCK)
        hs.Scratch(db)  # a database this CPU cannot run fails here, not in the middle of a scan
        return db
    except Exception:
        return None


def _store_cached(key: str, blob: bytes, keep_out: str | None = None) -> None:
    """Keep the database for the next process; never fatal (read-only home, a full disk, a foreign folder).
    Only the newest few are kept: each change of the knowledge base or the team cards makes a new key.
    Not kept where the cache folder lies in ``keep_out`` (the team cards' folder is never written to)."""
    if keep_out is not None:
        where = os.path.realpath(cache_dir())
        if where == keep_out or where.startswith(keep_out.rstrip(os.sep) + os.sep):
            return
    try:
        written = fsio.safe_atomic_write(cache_dir(), _cache_file(key).name, bytes(blob), mode=fsio.PRIVATE_FILE_MODE)
        old = sorted(written.parent.glob("hs-*.db"), key=lambda p: p.lstat().st_mtime, reverse=True)
        for stale in old[KEEP_DATABASES:]:
            stale.unlink(missing_ok=True)
    except (OSError, ValueError):
        pass


# ---------------------------------------------------------------------------------------------------- RE2
def _re2(patterns: Patterns) -> LineStarts | None:
    re2 = _module("re2")
    if re2 is None or not patterns.combined:
        return None
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1  # bytes as bytes: (?i) folds ASCII only, as Python's re does
    opts.max_mem = RE2_MAX_MEM
    return _Re2Lines(re2.compile(patterns.combined, opts))


class _Re2Lines:
    """The same alternation as Python's, run by RE2's DFA: every line holding a match starts one."""

    def __init__(self, regex: Any) -> None:
        self.regex = regex

    def scan(
        self, buf: bytes | bytearray, n: int | None = None, view: memoryview | None = None
    ) -> tuple[list[int], None]:
        whole = n is None or n == len(buf)
        block = (
            buf
            if isinstance(buf, bytes) and whole
            else bytes((view if view is not None else memoryview(buf))[: len(buf) if n is None else n])
        )
        return self(block), None

    def __call__(self, buf: bytes) -> list[int]:
        starts: list[int] = []
        line_end = -1
        for m in self.regex.finditer(buf):
            at = m.start()
            if at <= line_end:
                continue
            starts.append(buf.rfind(b"\n", 0, at) + 1)
            nl = buf.find(b"\n", at)
            line_end = len(buf) if nl < 0 else nl
        return starts


# ------------------------------------------------------------------------------------------- the scanner's view
def next_line(starts: list[int]) -> Callable[[int], tuple[int, int] | None]:
    """``find(pos)`` over precomputed line starts: the first hit line starting at or after ``pos``, as the
    (start, end) of a match inside it, like ``re.search(buf, pos)`` gives the scanner. The scanner asks
    with ``pos`` growing, so the search goes on from the last answer (a bisection only when it went back)."""
    at = [0]

    def find(pos: int) -> tuple[int, int] | None:
        i = at[0]
        if i and starts[i - 1] >= pos:
            i = bisect_left(starts, pos)
        while i < len(starts) and starts[i] < pos:
            i += 1
        at[0] = i
        return (starts[i], starts[i]) if i < len(starts) else None

    return find
