"""Team knowledge: a team's own known-issue cards ("Factory" cards) as supporting evidence.

A card is a Markdown file with TOML front matter between ``+++`` lines (``id``, ``title``, ``signatures``,
``category``; optional ``stack``, ``type``, ``fix_hints``, ``links``) and the team's write-up below. Each
card becomes a rule with provenance (``factory:<id>``, its path in ``Rule.pack``) that joins the built-in
rules, so its signatures are matched in the same single pass over the logs: the literal text every
signature requires is its prefilter keyword, and only the lines holding that keyword ever see its regex.

Why lazily: a factory may hold thousands of cards and is read on every diagnosis. Loading reads only each
card's front matter (never its write-up) and derives the keywords without compiling any regex; a
signature is compiled the first time its keyword occurs in a log, once per process. Gross regex errors
(unbalanced groups, a dangling backslash) are caught at load; anything subtler when first compiled, and
``faildiag card --check`` compiles every signature. A broken card is one warning line and is skipped.
What a reading found is kept in a private per-user index (see "the index" below), so a fresh process
reads one file rather than every card while the factory's listing is unchanged, and only the cards that
changed when it is not.

How a match counts (``support``): it is supporting evidence, never a substitute for what the logs show.
It raises the cause the rules already found in the card's category (noisy-or, like a second signature),
or it adds a candidate with the card's category whose confidence stays below every cause the logs show
directly. Either way the cause carries a ``hypothesis`` evidence item citing ``factory:<path>``.

Cards are opened read-only and nothing here writes, moves or touches them (read-only mounts work); the
index lives in the user's cache folder, never in the factory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from .fsio import safe_atomic_write
from .model import CATEGORIES, STACKS, TYPES, Evidence, RootCause
from .rules import KW_ANY, CauseSpec, LazyRegex, Rule, RuleSet, _trie, keep_cache

ENV_VAR = "FAILDIAG_FACTORY_ROOT"
DEFAULT_ROOT = Path(".faildiag") / "factory"
RULE_PREFIX = "factory:"  # rule ids of cards: "factory:<card id>"
CAUSE_PREFIX = "factory."  # cause ids of the candidates cards add: "factory.<card id>"

CARD_PRIOR = 0.5  # a card's own weight: a team's write-up is a strong hint, not an observation
CARD_PRIORITY = 1  # below every built-in rule: a card never names the profile when a rule matched
UNDER_DIRECT = 0.9  # a card's candidate stays below this share of the best cause the logs show directly
CORROBORATION = 0.4  # the noisy-or weight of a card agreeing with a cause (as a second signature's)
MIN_KEYWORD = 4  # a signature needs this much literal text: shorter keywords hit most lines of a log
MAX_KEYWORD = 16  # the prefilter needs a selective prefix, not the whole text: short keywords keep it small
MAX_FRONT_MATTER = 64 * 1024
MAX_FACTORY_ENTRIES = 4  # combined rule sets kept per process (one per factory state in practice)
# The regexes below are compiled on first use (``LazyRegex``): most processes have no factory, and
# compiling them at import cost every CLI call ~10 ms.
_ID = LazyRegex(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class FactoryWarning(UserWarning):
    """A card was skipped (or one signature of it): shown once, one line, naming the card and why."""


class CardError(ValueError):
    """A card that cannot be used; ``line`` is where in the card, when known."""

    def __init__(self, why: str, line: int = 1):
        super().__init__(why)
        self.line = line


@dataclass(frozen=True)
class Card:
    id: str
    title: str
    signatures: tuple[str, ...]
    category: str
    path: str
    rel: str  # the path relative to the factory root, "/" separated: what reports cite
    stack: str | None = None
    type: str | None = None
    fix_hints: tuple[str, ...] = ()
    links: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        return f"factory:{self.rel}"


@dataclass
class Factory:
    """The cards of one root, the rules made of them and the problems met (one line each)."""

    root: Path
    rules: list[Rule] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    complete: bool = True  # False when a card could not be read: such a reading is never kept in the index
    rows: list[list[Any]] = field(default_factory=list, repr=False)  # each card's row (see ``_read_card``)
    records: list[list[Any]] | None = field(default=None, repr=False)  # what the index keeps (``Record``)
    taken: list[int] = field(default_factory=list, repr=False)  # the positions in ``records`` of ``rows``
    _cards: list[Card] | None = field(default=None, repr=False)

    @property
    def cards(self) -> list[Card]:
        """The cards (in the order of ``rules``), made from the rows on first use: a diagnosis needs only the
        rules, and thousands of objects made for nothing slow a fresh process down."""
        if self._cards is None:
            base = str(self.root)
            self._cards = [
                Card(cid, title, tuple(sigs), cat, os.path.join(base, rel), rel, stack, typ, tuple(hints), tuple(links))
                for rel, cid, title, sigs, cat, stack, typ, hints, links, *_ in self.rows
            ]
        return self._cards


# ----------------------------------------------------------------------------------------------------
# discovery
# ----------------------------------------------------------------------------------------------------


def resolve_root(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> tuple[Path | None, str | None]:
    """The factory root to read and, when a named root is unusable, why (one line).

    Order (contract): an explicit root (``--factory-root`` / ``--faildiag-factory``), the variable
    ``FAILDIAG_FACTORY_ROOT``, then ``./.faildiag/factory/`` when it exists. A named root that is not a
    folder gives ``(None, reason)``; the default folder missing is simply no factory."""
    env = os.environ if environ is None else environ
    base = Path(cwd) if cwd is not None else Path.cwd()
    for value, what in ((explicit, "factory root"), (env.get(ENV_VAR), ENV_VAR)):
        if value is None or str(value) == "":
            continue
        root = base / Path(value)
        if not root.is_dir():
            return None, f"{what} {value}: not a folder"
        return root, None
    root = base / DEFAULT_ROOT
    return (root, None) if root.is_dir() else (None, None)


def card_files(root: Path) -> list[str]:
    """Every ``*.md`` under ``root`` (sorted, hidden entries skipped, folder links not followed)."""
    return [path for path, _ in walk(root).files]


@dataclass
class Listing:
    """One walk of a factory: each card with what says whether it changed (size, mtime, ctime, inode: a
    card edited, replaced or made readable changes one of them), and each folder with its modification
    time (``folders`` is None when a folder could not be read: the per-process memo then never trusts it)."""

    files: list[tuple[str, tuple[int, int, int, int]]]
    folders: tuple[tuple[str, int], ...] | None


def walk(root: Path) -> Listing:
    """The cards and folders under ``root``: ``os.scandir`` (no ``Path`` objects, folder types from the
    directory entry) and one ``stat`` per card, the least a listing that notices an edit can cost."""
    files: list[tuple[str, tuple[int, int, int, int]]] = []
    folders: list[tuple[str, int]] | None = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            mtime = os.stat(folder).st_mtime_ns
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            folders = None
            continue
        if folders is not None:
            folders.append((folder, mtime))
        for e in entries:
            name = e.name
            if name[0] == ".":
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif name.endswith(".md"):
                    st = e.stat()  # a link to a card is followed (as ``is_file`` did); a folder link is not
                    if stat.S_ISREG(st.st_mode):
                        files.append((e.path, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)))
            except OSError:
                continue
    files.sort()
    return Listing(files, tuple(sorted(folders)) if folders is not None else None)


# ----------------------------------------------------------------------------------------------------
# one card
# ----------------------------------------------------------------------------------------------------


def front_matter(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(front matter TOML, the write-up's first bytes) of a card, read-only, the write-up never in full."""
    return split_front_matter(read_head(path))


def read_head(path: str | os.PathLike[str]) -> bytes:
    """A card's first MAX_FRONT_MATTER bytes: one ``open``/``read``/``close`` of the OS, no Python file
    object (a factory's first reading opens thousands of cards). Read-only: a card is never written, and
    its atime is the OS's business."""
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        return os.read(fd, MAX_FRONT_MATTER)
    finally:
        os.close(fd)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def split_front_matter(head: bytes) -> tuple[str, str]:
    """(front matter TOML, the rest) of a card's first bytes; CardError when there is none."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(head) < MAX_FRONT_MATTER or exc.start < MAX_FRONT_MATTER - 4:
            raise CardError("not UTF-8 text") from None
        text = head[: exc.start].decode("utf-8")
    text = text.lstrip("\ufeff")
    lines = text.split("\n")
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None or lines[first].strip() != "+++":
        raise CardError("no front matter (the card must start with a +++ line)")
    for i in range(first + 1, len(lines)):
        if lines[i].strip() == "+++":
            return "\n".join(lines[first + 1 : i]), "\n".join(lines[i + 1 :])
    raise CardError("front matter not closed by a +++ line", first + 1)


def parse_card(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Card:
    """Read and validate one card. Raises CardError with a one-line reason (and the line when known)."""
    path = os.fspath(path)
    return card_of(read_head(path), path, _rel(path, os.fspath(root)))


def card_of(head: bytes, path: str, rel: str) -> Card:
    """The card whose first bytes are ``head``. The common shape (a ``+++`` line, plain ``key = "string"``
    / ``key = ["a", "b"]`` lines, a ``+++`` line) is read by the C JSON scanner (``_plain_card``);
    anything else takes the line-by-line reading, which words the errors. Either gives the same card."""
    data = _plain_card(head)
    if data is None:
        data = load_toml(split_front_matter(head)[0])
    return card_from_dict(data, path, rel)


def _plain_card(head: bytes) -> dict[str, Any] | None:
    """The front matter of a card of the common shape, read by the C JSON scanner; None for any other card
    (``load_toml`` reads it, or words its error).

    The common shape: a ``+++`` line, ``key = value`` lines (a bare key at the start of its line, each
    value a basic string or an array of them, possibly over several lines, blank lines between), a
    ``+++`` line. One C-level ``split`` at the key lines gives the keys and the text of each value; the
    values, joined by ``null`` lines, are one JSON array read in one call. The JSON reading is the TOML
    reading whenever all of these hold, so anything else is None: nothing but blank lines before the
    first key line; the array read to its end, a ``null`` between every two values and nothing else (so
    each value's text is one JSON value and nothing more: no comment, table, dotted or quoted key,
    second pair on a line, trailing comma; a string cannot run on into the next value, as a newline ends
    it); no key twice; every value a string or a list of strings (no number, boolean, nested array or
    inline table); and none of what the two read differently: ``\\u`` and ``\\/`` escapes (JSON decodes
    surrogates, TOML refuses them; TOML has no ``\\/``), DEL (TOML refuses it raw), a lone CR (CRLF lines
    are read as LF, as TOML does). JSON refuses raw control characters in strings and a newline in a
    string, as TOML does (its only exception, a raw tab, then goes to TOML); a value on the line after
    its key (TOML refuses it) leaves that key line in the value before, which JSON refuses. The closing
    line is the first line after the opening one that holds ``+++`` at all, as ``split_front_matter``
    finds it."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.lstrip("\ufeff").lstrip()  # BOMs, then blank lines (as ``split_front_matter`` skips them)
    first = text.find("\n")
    if first < 0 or text[:first].strip() != "+++":
        return None
    end = text.find("+++", first)  # the first "+++" after the opening line must be the closing line
    if end < 0:
        return None
    start = text.rfind("\n", first, end) + 1
    nl = text.find("\n", end)
    if text[start : nl if nl >= 0 else len(text)].strip() != "+++":
        return None
    fm = text[first:start]  # from the opening line's newline to the closing line's start
    if "\\u" in fm or "\\/" in fm or "\x7f" in fm:
        return None
    if "\r" in fm:
        fm = fm.replace("\r\n", "\n")
        if "\r" in fm:
            return None
    parts = _KEY_LINE.compiled().split(fm)  # [before the first key line, key, value text, key, ...]
    if parts[0].strip(" \t\n"):
        return None  # a line before the first key line that is not blank (for TOML)
    values = parts[2::2]
    n = len(values)
    if not n:
        return {}  # blank front matter
    joined = "[" + ",\nnull,\n".join(values) + "]"
    try:
        found, stop = _JSON_SCAN(joined, 0)
    except (ValueError, StopIteration, RecursionError):
        return None
    if stop != len(joined) or len(found) != 2 * n - 1 or found[1::2].count(None) != n - 1:
        return None  # not one JSON value per key line
    found = found[::2]
    for v in found:
        if type(v) is not str and (type(v) is not list or not all(type(x) is str for x in v)):
            return None
    data = dict(zip(parts[1::2], found, strict=True))
    return data if len(data) == n else None  # a key given twice: tomllib words the error


# a key line of the front matter (a bare key, ``=``, a string or an array on the same line), from the newline
# before it
_KEY_LINE = LazyRegex(r'\n[ \t]*([A-Za-z0-9_-]+)[ \t]*=[ \t]*(?=["\[])')


def load_toml(text: str) -> dict[str, Any]:
    """The front matter as a dict: the plain ``key = "string"`` / ``key = ['a', "b"]`` shape every card
    uses is read by one regex (a factory of thousands of cards loads in a fraction of a second); anything
    else goes to ``tomllib``, which also words the error of a broken card."""
    fast = _plain_toml(text)
    if fast is None:
        fast = _simple_toml(text)
    if fast is not None:
        return fast
    import tomllib  # only for a card the subset parser does not read

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise CardError(f"TOML error: {exc}", int(m[1]) + 1 if m else 1) from None


_CTRL = "\\x00-\\x08\\x0a-\\x1f\\x7f"
_BASIC = rf'"(?:[^"\\{_CTRL}]|\\(?:[btnfr"\\]|u[0-9a-fA-F]{{4}}|U[0-9a-fA-F]{{8}}))*"'
_LITERAL = rf"'[^'{_CTRL}]*'"
_COMMENT = rf"#[^{_CTRL}]*"
_STRING = rf"(?:{_BASIC}|{_LITERAL})"
_GAP = rf"(?:[ \t\r\n]|{_COMMENT})*"
_LINE = LazyRegex(
    rf"[ \t]*(?:(?P<key>[A-Za-z0-9_-]+)[ \t]*=[ \t]*(?P<value>{_STRING}|\[{_GAP}(?:{_STRING}{_GAP},{_GAP})*"
    rf"(?:{_STRING}{_GAP})?\])[ \t]*)?(?:{_COMMENT})?\r?(?:\n|\Z)"
)
_ITEM = LazyRegex(rf"{_STRING}")
_ESCAPE = LazyRegex(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


# What TOML and JSON read alike: a basic string with the escapes both know (not ``\/``, ``\u``, ``\U``;
# no raw tab or control character, which JSON or TOML refuses), and one-line arrays of them without a
# trailing comma. Possessive repeats: text that is not of this shape fails at once, never backtracks.
_JSTR = r'"(?:[^"\\\x00-\x1f\x7f]++|\\[btnfr"\\])*+"'
_JVALUE = rf"(?:{_JSTR}|\[[ \t]*(?:{_JSTR}(?:[ \t]*,[ \t]*{_JSTR})*[ \t]*)?\])"
_PLAIN_LINE = rf"[ \t]*(?:[A-Za-z0-9_-]+[ \t]*=[ \t]*{_JVALUE}[ \t]*)?\r?"
_PLAIN = LazyRegex(rf"(?:{_PLAIN_LINE}\n)*+{_PLAIN_LINE}")
_PLAIN_PAIR = LazyRegex(r"^[ \t]*([A-Za-z0-9_-]+)[ \t]*=(.*)", re.M)  # in text of that shape


def _plain_toml(text: str) -> dict[str, Any] | None:
    """The commonest front matter, read by the C JSON scanner: one ``key = value`` per line, each value a
    basic string or a one-line array of them, with no comment, literal string or escape that TOML and
    JSON read differently (``\\/``, ``\\u``, ``\\U``). Where TOML and JSON agree, the JSON reading is
    the TOML one; anything else is None (``_simple_toml`` reads it, or words its error)."""
    return _plain_read(text) if _PLAIN.fullmatch(text) is not None else None


def _plain_read(text: str) -> dict[str, Any] | None:
    """``_plain_toml`` of text known to be of the plain shape: one regex lists the pairs and one call into
    the C JSON scanner reads every value (no Python step per line or per character)."""
    pairs = _PLAIN_PAIR.findall(text)
    if not pairs:
        return {}
    keys, values = zip(*pairs, strict=True)
    joined = "[" + ",".join(values) + "]"
    found, end = _JSON_SCAN(joined, 0)  # the C scanner itself: ``decode``'s Python wrapper costs as much
    if end != len(joined):
        raise ValueError("not one JSON array")  # cannot happen for text of the plain shape
    data = dict(zip(keys, found, strict=True))
    return data if len(data) == len(pairs) else None  # a key given twice: tomllib words the error


_JSON_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _simple_toml(text: str) -> dict[str, Any] | None:
    """The subset parser: None when the text holds anything but bare keys with strings or string arrays."""
    out: dict[str, Any] = {}
    pos, end = 0, len(text)
    while pos < end:
        m = _LINE.match(text, pos)
        if m is None or m.end() == pos:
            return None
        pos = m.end()
        key = m["key"]
        if key is None:
            continue
        if key in out:
            return None  # tomllib words the error
        value = m["value"]
        out[key] = [_string(v) for v in _ITEM.findall(value)] if value[0] == "[" else _string(value)
    return out


def _string(token: str) -> str:
    body = token[1:-1]
    if token[0] == "'" or "\\" not in body:
        return body
    return _ESCAPE.sub(_unescape, body)


def _unescape(m: re.Match[str]) -> str:
    code = m[1] or m[2]
    if code:
        return chr(int(code, 16))
    return _ESCAPES[m[3]]


Fields = tuple[str, str, list[str], str, Any, Any, list[str], list[str]]
"""A card's checked front matter: id, title, signatures, category, stack, type, fix hints, links."""


def card_from_dict(data: dict[str, Any], path: str, rel: str) -> Card:
    cid, title, sigs, category, stack, typ, hints, links = card_fields(data)
    return Card(cid, title, tuple(sigs), category, path, rel, stack, typ, tuple(hints), tuple(links))


def plain_fields(data: dict[str, Any]) -> Fields:
    """``card_fields`` of front matter read by ``_plain_card`` (every value a string or a list of strings,
    so most of its checks hold already): the common good card in a few steps; anything else (a field
    missing, of another type, out of its vocabulary) goes through ``card_fields``, which words it."""
    get = data.get
    cid, title, sigs, category = get("id"), get("title"), get("signatures"), get("category")
    if type(sigs) is str:
        sigs = [sigs]
    stack, typ = get("stack"), get("type")
    hints, links = get("fix_hints", []), get("links", [])
    if (
        type(cid) is not str
        or type(title) is not str
        or type(sigs) is not list
        or not sigs
        or "" in sigs
        or type(category) is not str
        or category not in _VOCAB[0]
        or (stack is not None and (type(stack) is not str or stack not in _VOCAB[1]))
        or (typ is not None and (type(typ) is not str or typ not in _VOCAB[2]))
        or not _ID.match(cid)
    ):
        return card_fields(data)
    return (
        cid,
        title,
        sigs,
        category,
        stack,
        typ,
        [hints] if type(hints) is str else hints,
        [links] if type(links) is str else links,
    )


_VOCAB = (frozenset(CATEGORIES), frozenset(STACKS), frozenset(TYPES))


def card_fields(data: dict[str, Any]) -> Fields:
    """The fields of a card's front matter, checked (CardError says what is wrong, one line)."""
    for key in ("id", "title", "signatures", "category"):
        if key not in data:
            raise CardError(f"missing {key!r}")
    cid = data["id"]
    if not isinstance(cid, str) or not _ID.match(cid):
        raise CardError(f"id {cid!r} must be letters, digits, '.', '_' or '-'")
    sigs = data["signatures"]
    if isinstance(sigs, str):
        sigs = [sigs]
    if not isinstance(sigs, list) or not sigs or not all(isinstance(s, str) and s for s in sigs):
        raise CardError("signatures must be a non-empty list of regexes")
    for key, vocab in (("category", CATEGORIES), ("stack", STACKS), ("type", TYPES)):
        if data.get(key) is not None and data[key] not in vocab:
            raise CardError(f"unknown {key} {data[key]!r} (one of: {' '.join(vocab)})")
    lists = []
    for key in ("fix_hints", "links"):
        value = data.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CardError(f"{key} must be a list of strings")
        lists.append(value)
    return cid, str(data["title"]), sigs, data["category"], data.get("stack"), data.get("type"), lists[0], lists[1]


# ----------------------------------------------------------------------------------------------------
# signatures: the literal text a regex requires (the prefilter keyword), and compiling on first use
# ----------------------------------------------------------------------------------------------------

_FLAGS = LazyRegex(r"^\(\?([aiLmsux]+)\)")
_META = LazyRegex(r"[\\.^$*+?{}\[\]()|]")  # a signature without any of these is its own literal text


@dataclass(frozen=True)
class Keywords:
    """The prefilter of one signature: one literal per top-level alternative, case-folded or not."""

    words: tuple[str, ...]
    ignore_case: bool


def signature_keywords(pattern: str) -> Keywords:
    """The literal text every match of ``pattern`` must contain, longest run per top-level alternative
    (``a|b`` needs one keyword each). Raises CardError when the regex is malformed in a way visible
    without compiling it, or when an alternative holds fewer than MIN_KEYWORD literal characters
    (such a signature would send most lines of a log through its regex)."""
    words, ci = _signature_words(pattern)
    return Keywords(tuple(words), ci)


def _signature_words(pattern: str) -> tuple[list[str], bool]:
    """``signature_keywords`` as (words, case-folded), without the object (a first reading derives
    thousands)."""
    flags = ""
    body = pattern
    m = _FLAGS.match(body) if body.startswith("(?") else None
    while m:  # leading global flags: (?i) folds the keyword, (?x) makes whitespace meaningless
        flags += m[1]
        body = body[m.end() :]
        m = _FLAGS.match(body)
    if "x" in flags:
        raise CardError(f"signature {pattern!r}: verbose (?x) patterns are not supported")
    words: list[str] = []
    if _META.search(body) is None:  # plain text: one run
        alternatives = [[body]]
    else:  # no group, class, brace or long escape: one findall; else the token loop
        alternatives = _simple_runs(body) or _required_runs(body, pattern)
    for runs in alternatives:
        best = max(runs, key=len, default="")
        if len(best) < MIN_KEYWORD:
            raise CardError(
                f"signature {pattern!r}: needs {MIN_KEYWORD}+ characters of literal text"
                + (" in each alternative" if len(words) or "|" in body else "")
            )
        words.append(_keyword_of(best))
    if "i" in flags:
        return [w.lower() for w in words], True
    return words, False


# the first word of three or more characters with a boundary inside the run on both sides (one search)
_STR_WORD = LazyRegex(r"(?<=[^A-Za-z0-9_])[A-Za-z0-9_]{3,}(?=[^A-Za-z0-9_])")


def _keyword_of(run: str) -> str:
    """The run's first MAX_KEYWORD characters, stretched to hold one whole word (a word with a boundary on
    both sides inside the keyword): that word is how ``CardKeywords`` finds the keyword without a regex."""
    kw = run[:MAX_KEYWORD]
    m = _STR_WORD.search(run)
    if m is not None and m.end() >= len(kw):
        return run[: m.end() + 1]
    return kw


# one regex atom per token, so a signature costs a few tokens rather than a Python step per character
_TOKEN = LazyRegex(
    r"""
 (?P<lit>(?:[^\\.^$*+?{\[\]()|]+|\\[^A-Za-z0-9]|\{(?!\d*(?:,\d*)?\}))+)
|(?P<esc>\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|[0-9]{1,3}|.))
|(?P<cls>\[\^?\]?(?:\\.|[^\]\\])*\])
|(?P<open>\()
|(?P<close>\))
|(?P<quant>[*+?]|\{\d*(?:,\d*)?\})
|(?P<alt>\|)
|(?P<any>[.^$])
|(?P<bad>[\[\\])
""",
    re.X | re.S,
)
_UNESCAPE = LazyRegex(r"\\(.)", re.S)


def _group1(m: re.Match[str]) -> str:
    return m[1]


def _required_runs(body: str, pattern: str) -> list[list[str]]:
    """For each top-level alternative, the runs of text it must match literally (an atom made optional by
    a quantifier ends a run; groups and classes are never counted: they may be optional)."""
    alts: list[list[str]] = [[]]
    cur = ""
    depth = 0
    prev = ""
    for m in _TOKEN.finditer(body):
        kind = m.lastgroup
        if kind == "bad":
            what = "ends with a lone backslash" if m.group() == "\\" else "unterminated character set"
            raise CardError(f"signature {pattern!r}: {what}")
        if depth:
            depth += 1 if kind == "open" else -1 if kind == "close" else 0
            prev = kind or ""
            continue
        if kind == "lit":
            text = m.group()
            if "\\" in text:  # ``\X`` escapes only: with no escaped backslash in it, every backslash goes
                text = text.replace("\\", "") if "\\\\" not in text else _UNESCAPE.sub(_group1, text)
            cur += text
        elif kind == "quant" and prev == "lit" and cur:
            q = m.group()
            optional = q in "*?" or (q.startswith("{") and not q[1:].split(",")[0].strip("}").lstrip("0"))
            if optional:
                cur = cur[:-1]
            alts[-1].append(cur)
            cur = ""
        else:
            if cur:
                alts[-1].append(cur)
                cur = ""
            if kind == "open":
                depth = 1
            elif kind == "close":
                raise CardError(f"signature {pattern!r}: unbalanced parenthesis")
            elif kind == "alt":
                alts.append([])
        prev = kind or ""
    if depth:
        raise CardError(f"signature {pattern!r}: missing ), unterminated group")
    if cur:
        alts[-1].append(cur)
    return alts


# The tokens of a signature, left to right, every character in one: a run of literal characters or ``\X``
# escapes (group 1) with the ``*``/``?`` that makes its last one optional (group 2), a ``|`` (group 3),
# what ``_simple_runs`` leaves to ``_required_runs`` (group 4: a group, class or brace, an escaped
# backslash, an escape longer than one character such as ``\x41`` or a back reference, a lone backslash at
# the end), a class escape (``\d``) or a ``.^$*+?`` (neither: they end a run).
_SIMPLE_TOKEN = LazyRegex(
    r"((?:[^\\.^$*+?|()\[\]{}]++|\\[^A-Za-z0-9\\])+)([*?]?)|(\|)|([()\[\]{}]|\\[\\xuUN0-9]|\\\Z)"
    r"|\\[A-Za-z0-9]|[.^$*+?]"
)


def _simple_runs(body: str) -> list[list[str]] | None:
    """``_required_runs`` of a signature without groups, classes or braces, by one ``findall``: a few tuples
    per signature instead of a Python step per token (a factory's first reading derives thousands); None
    for any other signature. The tests compare both on random signatures."""
    alts: list[list[str]] = [[]]
    for run, optional, bar, hard in _SIMPLE_TOKEN.findall(body):
        if run:
            if "\\" in run:
                run = run.replace("\\", "")
            alts[-1].append(run[:-1] if optional else run)
        elif bar:
            alts.append([])
        elif hard:
            return None
    return alts


class LazyPattern:
    """A signature compiled the first time a line holding its keyword needs it (compiling thousands of
    regexes up front would cost more than scanning the log). An invalid regex warns once, then never
    matches."""

    __slots__ = ("card_source", "pattern", "_compiled")

    def __init__(self, pattern: str, card_source: str):
        self.pattern = pattern
        self.card_source = card_source
        self._compiled: re.Pattern[str] | None = None

    def compile(self) -> re.Pattern[str] | None:
        if self._compiled is None:
            try:
                self._compiled = re.compile(self.pattern)
            except re.error as exc:
                _warn(self.card_source, f"signature {self.pattern!r} skipped: invalid regex: {exc}")
                self._compiled = _NEVER
        return None if self._compiled is _NEVER else self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        compiled = self._compiled if self._compiled is not None else self.compile()
        return compiled.search(text) if compiled is not None else None


_NEVER = re.compile(r"(?!)")


# ----------------------------------------------------------------------------------------------------
# a factory: cards → rules → one rule set with the built-in rules
# ----------------------------------------------------------------------------------------------------


def card_rule(card: Card, problems: list[str] | None = None) -> Rule:
    """The card as a rule: its signatures, their keywords, and one hypothesis cause with its category.
    A signature that cannot be prefiltered is dropped (a problem line); none left → CardError."""
    keywords, usable, folded = card_keywords(card, problems)
    return rule_of(card, keywords, usable, folded)


def card_keywords(card: Card, problems: list[str] | None = None) -> tuple[list[str], list[str], bool]:
    """(prefilter keywords, the usable signatures, case-folded) of a card; see ``card_rule``."""
    return keywords_of(card.signatures, card.source, problems)


def keywords_of(
    signatures: tuple[str, ...] | list[str], source: str, problems: list[str] | None = None
) -> tuple[list[str], list[str], bool]:
    """``card_keywords`` of the signatures of the card cited as ``source``."""
    keywords: list[str] = []
    usable: list[str] = []
    folded = False
    for sig in signatures:
        try:
            words, ci = _signature_words(sig)
        except CardError as exc:
            if len(signatures) == 1:
                raise
            if problems is not None:
                problems.append(f"{source}: {exc}; that signature skipped")
            continue
        folded = folded or ci
        for w in words:
            if w not in keywords:
                keywords.append(w)
        usable.append(sig)
    if not usable:
        raise CardError("no usable signature")
    if folded:  # one rule, one case mode: the folded prefilter is a superset; each regex keeps its own flags
        keywords = list(dict.fromkeys(k.lower() for k in keywords))
    return keywords, usable, folded


def rule_of(card: Card, keywords: list[str], signatures: list[str], folded: bool) -> Rule:
    """The rule of a card whose keywords are known (derived by ``card_keywords`` or read from the index)."""
    return CardRule(
        card.id,
        card.title,
        card.category,
        card.source,
        keywords,
        signatures,
        card.fix_hints,
        folded,
        card.type,
        card.stack,
    )


class CardRule(Rule):
    """A card's rule. One is made for every card at load (the scanner indexes them all), but the parts
    only a hit reads (the cause, the signatures compiled on first use, the empty lists of fields cards do
    not use) are made the first time they are read: thousands of cards then cost a few attributes each
    rather than a dozen objects that the garbage collector keeps walking. Fields a card leaves at the
    ``Rule`` default are read from the class."""

    def __init__(
        self,
        card_id: str,
        title: str,
        category: str,
        source: str,
        keywords: list[str],
        signatures: list[str],
        fix_hints: Iterable[str],
        folded: bool,
        type: str | None = None,
        stack: str | None = None,
    ):  # not Rule.__init__, which would make every field now
        self.id = RULE_PREFIX + card_id
        self.title = title
        self.keywords = keywords
        self.pack = source
        self.priority = CARD_PRIORITY
        self.requires_failure = True
        if folded:
            self.ignore_case = True
        if type is not None:
            self.type = type
        if stack is not None:
            self.stack = stack
        self._card = (card_id, category, signatures, fix_hints)

    def __getattr__(self, name: str) -> Any:  # only for attributes not set yet
        if name.startswith("_"):
            raise AttributeError(name)
        card_id, category, signatures, fix_hints = self._card
        value: Any
        if name == "patterns":
            value = [LazyPattern(sig, self.pack) for sig in signatures]
        elif name == "causes":
            value = [
                CauseSpec(
                    id=f"{CAUSE_PREFIX}{card_id}",
                    category=category,
                    confidence=CARD_PRIOR,
                    summary=f"known issue {card_id}: {self.title}",
                    fix_hints=[*fix_hints, f"read the team's write-up: {self.pack}"],
                    kind="hypothesis",
                    reason=f"{card_id}: {self.title}",
                )
            ]
        elif name in ("domains", "exit_codes", "suppressed_by"):
            value = []
        else:
            raise AttributeError(name)
        self.__dict__[name] = value
        return value


Record = list[Any]
"""What reading one card found, as the index keeps it: ``[rel, stamp, id, row, problems]``. ``stamp``: the
card's size, modification and change times and inode (``_stamp``); ``id`` None: the card did not parse;
``row`` None: it did, but no signature is usable; ``problems``: the card's own problem lines (its skip
line, or the signatures it skipped), newline-separated. Whether it is a duplicate depends on the other
cards, so that is decided when the records are joined (``_join``). Few objects per card: a fresh process
parses thousands of records, and every object made is one more for the garbage collector to walk. A record
taken from the last index (``previous_records``) has a sixth item: its line there (bytes), which the next
index copies as it is (``write_index``)."""


def _stamp(st: tuple[int, int, int, int]) -> str:
    return "%x.%x.%x.%x" % st  # noqa: UP031 (twice as fast as four ``:x`` fields: 5,000 cards)


def read_factory(
    root: Path,
    files: list[str] | None = None,
    *,
    listing: Listing | None = None,
    previous: Mapping[str, Record] | None = None,
) -> Factory:
    """Read every card of ``root`` (front matter only). Broken cards become problem lines, never errors;
    a later card with an id already seen is skipped (ids cite cards, so they must be unique). What a
    card says goes straight into its rule and its index row (``Card`` objects are made from the rows
    when asked: a diagnosis needs none).

    ``listing``: the walk that found the cards (their sizes and times go into the records). ``previous``:
    the records of the last reading by relative path; a card whose size, times and inode are unchanged is
    not read again (after one card of thousands changed, only that card is parsed)."""
    fac = Factory(root)
    base = str(root)
    if listing is not None:
        found: Iterable[tuple[str, Any]] = listing.files
    else:
        found = ((p, None) for p in (files if files is not None else card_files(root)))
    records: list[Record] | None = [] if listing is not None else None
    joined: list[Record] = []
    for path, st in found:
        rel = _rel(path, base)
        stamp = _stamp(st) if st is not None else ""
        old = previous.get(rel) if previous is not None and stamp else None
        if old is not None and old[1] == stamp:
            rec = old
        else:
            try:
                cid, row, own = _read_card(path, rel)
            except OSError as exc:
                fac.problems.append(f"factory:{rel}: skipped: unreadable ({exc.strerror or exc})")
                fac.complete = False
                continue
            rec = [rel, stamp, cid, row, own]
        if records is not None:
            records.append(rec)
        joined.append(rec)
    _join(fac, joined)
    fac.records = records
    return fac


def _read_card(path: str, rel: str) -> tuple[str | None, list[Any] | None, str]:
    """(id, index row, own problem lines) of one card (see ``Record``); OSError when it cannot be read."""
    problems: list[str] = []
    try:
        head = read_head(path)
        data = _plain_card(head)
        if data is not None:
            cid, title, sigs, cat, stack, typ, hints, links = plain_fields(data)
        else:
            cid, title, sigs, cat, stack, typ, hints, links = card_fields(load_toml(split_front_matter(head)[0]))
    except CardError as exc:
        return None, None, f"factory:{rel}: skipped: {exc}"
    try:
        keywords, usable, folded = keywords_of(sigs, f"factory:{rel}", problems)
    except CardError as exc:
        return cid, None, f"factory:{rel}: skipped: {exc}"
    row = [rel, cid, title, sigs, cat, stack, typ, hints, links, keywords, folded, None if usable == sigs else usable]
    return cid, row, "\n".join(problems)


def _card_rule(row: list[Any]) -> CardRule:
    """The rule of a card's index row (see ``_read_card``): its usable signatures, cited by its path."""
    rel, cid, title, sigs, cat, stack, typ, hints, _, keywords, folded, usable = row
    return CardRule(
        cid, title, cat, f"factory:{rel}", keywords, sigs if usable is None else usable, hints, folded, typ, stack
    )


def _join(fac: Factory, records: Iterable[Record]) -> None:
    """The rules, rows and problem lines of the cards ``records`` found, in order: a card whose id an
    earlier card has is skipped (one line), as is a card without a usable signature."""
    seen: dict[str, str] = {}
    rules, rows, problems, taken = fac.rules, fac.rows, fac.problems, fac.taken
    for i, (rel, _, cid, row, own, *_) in enumerate(records):
        if cid is not None and cid in seen:
            problems.append(f"factory:{rel}: skipped: duplicate id {cid!r} (also in {seen[cid]})")
            continue
        if own:
            problems.extend(own.split("\n"))
        if row is None:
            continue
        seen[cid] = rel
        taken.append(i)
        rules.append(_card_rule(row))
        rows.append(row)


def _rel(path: str, root: str) -> str:
    """``path`` relative to ``root``, "/" separated (what a report cites; no machine path in it)."""
    prefix = root.rstrip(os.sep) + os.sep
    if path.startswith(prefix):
        return path[len(prefix) :].replace(os.sep, "/")
    return os.path.basename(path)


def with_cards(
    base: RuleSet, rules: list[Rule], tables: KeywordTables | None = None, root: str | os.PathLike[str] | None = None
) -> RuleSet:
    """``base`` plus the card rules, indexed for the same single pass. The built-in keyword alternation is
    kept as compiled; card keywords are found by ``CardKeywords`` (a word lookup, no regex to compile).
    ``tables``: the lookup of these rules when already made (else made when first needed). ``root``:
    the factory's folder, where the scanner's engine databases are never cached either."""
    if not rules:
        return base
    index = dict(base.keyword_index)
    for r in rules:
        for k in r.keywords:
            key = k.lower() if r.ignore_case else k
            hit = index.get(key)
            if hit is None:
                index[key] = [r]
            else:
                index[key] = [*hit, r]
    matcher = CardKeywords(base.keyword_regex, rules, tables=tables, root=root)
    return replace(base, rules=[*base.rules, *rules], keyword_index=index, keyword_regex=matcher)  # type: ignore[arg-type]


_WORD = LazyRegex(rb"[A-Za-z0-9_]+")
_COMMON = frozenset(
    b"""error errors failed failure fatal warning warn info debug exception the and for with from not
this that was were has have rank node step loss epoch time timeout data file line process python torch cuda true
false none process worker job""".split()
)


class _Hit:
    """What the scanner reads of a keyword match: the keyword and where it starts."""

    __slots__ = ("text", "at")

    def __init__(self, text: bytes, at: int):
        self.text, self.at = text, at

    def group(self, _: int = 0) -> bytes:
        return self.text

    def start(self) -> int:
        return self.at


def card_keyword_bytes(rules: list[Rule]) -> list[tuple[bytes, bool, list[bytes]]]:
    """Every keyword of the card rules as the scanner looks for it (bytes, case-folded ones in lower
    case), with whether it is case-folded and its whole words (``_INNER_WORDS``)."""
    out = []
    for r in rules:
        fold = r.ignore_case
        for k in r.keywords:
            kw = (k.lower() if fold else k).encode()
            out.append((kw, fold, _INNER_WORDS.findall(kw)))
    return out


@dataclass
class KeywordTables:
    """The card keywords by anchor word (exact and case-folded) and those without a whole word (exact and
    case-folded), plus the alternation that lets every line holding one through (built on first use).
    Made only when Python searches a line for keywords (``CardKeywords``): with Hyperscan the engine
    reports them itself."""

    anchors: dict[bytes, list[bytes]]
    folded: dict[bytes, list[bytes]]
    partial: list[bytes]
    pattern: bytes | None = None
    folded_partial: list[bytes] = field(default_factory=list)

    @classmethod
    def of(cls, rules: list[Rule]) -> KeywordTables:
        """Each keyword under its *anchor*: a whole word of it that few other keywords share."""
        anchors: dict[bytes, list[bytes]] = {}
        folded: dict[bytes, list[bytes]] = {}
        partial: set[bytes] = set()
        folded_partial: set[bytes] = set()
        cands = card_keyword_bytes(rules)
        counts: dict[bytes, int] = {}
        for _, _, words in cands:
            for w in words:
                counts[w] = counts.get(w, 0) + 1
        for kw, fold, words in cands:
            if not words:
                (folded_partial if fold else partial).add(kw)
                continue
            best = words[0] if len(words) == 1 else min(words, key=lambda w: (w.lower() in _COMMON, counts[w], -len(w)))
            table = folded if fold else anchors
            have = table.get(best)
            if have is None:
                table[best] = [kw]
            elif kw not in have:
                have.append(kw)
        return cls(anchors, folded, sorted(partial), folded_partial=sorted(folded_partial))

    def card_pattern(self) -> bytes:
        if self.pattern is None:
            parts = []
            if self.anchors:
                parts.append(_trie(sorted(self.anchors)))
            if self.folded:
                parts.append(b"(?i:" + _trie(sorted(self.folded)) + b")")
            if self.partial:
                parts.append(_trie(self.partial))
            if self.folded_partial:
                parts.append(b"(?i:" + _trie(self.folded_partial) + b")")
            self.pattern = b"|".join(parts)
        return self.pattern


class CardKeywords:
    """The scanner's keyword search (``search(line, pos)`` like a compiled alternation) over the built-in
    keywords plus the cards'. A card keyword holds an *anchor*, a whole word of it that few other cards
    share: the line's words (one C-level ``findall``) meet the anchors in a set intersection, and only the
    keywords of the anchors found are looked for. So thousands of cards cost neither a regex compile
    nor a slower search; keywords without a whole word go into a small alternation of their own.

    The lookup tables are made the first time Python searches a line: with Hyperscan the engine reports
    every keyword it finds (``hit_keywords``, made from the rules alone), so a diagnosis usually needs no
    tables at all, and a factory's first reading does not pay for them."""

    def __init__(
        self,
        base: re.Pattern[bytes] | None,
        rules: list[Rule],
        *,
        tables: KeywordTables | None = None,
        root: str | os.PathLike[str] | None = None,
    ):
        self.base = base
        self.rules = rules
        self.card_rules = len(rules)  # the rule set's last rules are these (``scan._card_parts``)
        self.root = None if root is None else os.path.realpath(root)  # nothing is cached inside it
        self._tables = tables
        self._pattern: bytes | None = None
        self._last: tuple[bytes, list[_Hit]] | None = None

    @property
    def tables(self) -> KeywordTables:
        if self._tables is None:
            self._tables = KeywordTables.of(self.rules)
        return self._tables

    @cached_property
    def _lookup(
        self,
    ) -> tuple[dict[bytes, list[bytes]], frozenset[bytes], dict[bytes, list[bytes]], frozenset[bytes], list[Any]]:
        """(anchors, their words, folded anchors, their words, the alternations to search: the built-in
        keywords' and those of the card keywords without a word, exact and folded: one each, so that each
        gives its longest keyword at a position)."""
        t = self.tables
        regexes: list[Any] = [self.base] if self.base is not None else []
        if t.partial:
            regexes.append(re.compile(_trie(t.partial)))
        if t.folded_partial:
            regexes.append(re.compile(_trie(t.folded_partial), re.I))
        return t.anchors, frozenset(t.anchors), t.folded, frozenset(t.folded), regexes

    @property
    def pattern(self) -> bytes:
        """An alternation that lets every line holding a keyword through (the scanner's non-grep path)."""
        if self._pattern is None:
            parts = [self.base.pattern] if self.base is not None else []
            cards = self.tables.card_pattern()
            if cards:
                parts.append(cards)
            self._pattern = b"|".join(parts)
        return self._pattern

    def hit_keywords(self) -> list[tuple[bytes, bool, int]] | None:
        """The built-in keywords (see ``KeywordRegex.hit_keywords``) and the cards': at a position, the
        longest of the built-in choice and every card keyword there is the hit (as ``search`` finds it).
        A folded card keyword is looked for case-folded, with or without an anchor word."""
        base = self.base.hit_keywords() if self.base is not None and hasattr(self.base, "hit_keywords") else []
        if base is None or (self.base is not None and not hasattr(self.base, "hit_keywords")):
            return None
        cards = dict.fromkeys(  # made from the rules: no lookup tables needed
            ((k.lower() if r.ignore_case else k).encode(), r.ignore_case, KW_ANY)
            for r in self.rules
            for k in r.keywords
        )
        if any(not kw for kw, _, _ in cards):
            return None
        return base + list(cards)

    def search(self, raw: bytes, pos: int = 0) -> _Hit | None:
        last = self._last
        hits = last[1] if last is not None and last[0] is raw else self._hits(raw)
        for h in hits:
            if h.at >= pos:
                return h
        return None

    def _hits(self, raw: bytes) -> list[_Hit]:
        """Every keyword occurrence of the line, by position; at one position only the longest (the scanner
        finds the keywords inside a hit itself). Runs on every line the prefilter lets through, so the word
        lookups are C-level set intersections over ``findall`` lists (no per-word Python step)."""
        out: list[_Hit] = []
        anchors, anchor_set, folded, folded_set, regexes = self._lookup
        for rx in regexes:
            m = rx.search(raw)
            while m is not None:
                out.append(_Hit(m.group(0), m.start()))
                m = rx.search(raw, m.start() + 1)
        for w in anchor_set.intersection(_WORD.findall(raw)):
            for kw in anchors[w]:
                at = raw.find(kw)
                while at >= 0:
                    out.append(_Hit(kw, at))
                    at = raw.find(kw, at + 1)
        if folded_set:
            low = raw.lower()
            for w in folded_set.intersection(_WORD.findall(low)):
                for kw in folded[w]:
                    at = low.find(kw)
                    while at >= 0:
                        out.append(_Hit(raw[at : at + len(kw)], at))
                        at = low.find(kw, at + 1)
        if len(out) > 1:
            out.sort(key=lambda h: (h.at, -len(h.text)))
        self._last = (raw, out)
        return out


# the words of a keyword with a non-word character on both sides inside it (so a line holding the keyword
# has each of them as a word of its own), three characters or longer: one ``findall``, no Python step
_INNER_WORDS = LazyRegex(rb"(?<=[^A-Za-z0-9_])[A-Za-z0-9_]{3,}(?=[^A-Za-z0-9_])")


# ----------------------------------------------------------------------------------------------------
# the index: what reading a factory found, kept in the user's cache folder for the next process
# ----------------------------------------------------------------------------------------------------
#
# Why: a fresh process (every CLI call, every pytest session) would otherwise open and parse every card
# and derive every keyword again: ~30 µs a card, 0.15 s for 5,000, close to the diagnosis itself. What
# the reading found (cards, keywords, the problem lines) depends only on the cards' bytes, so it is kept
# once per factory in ``$XDG_CACHE_HOME/faildiag/`` (else ``~/.cache/faildiag/``), keyed by the listing:
# every card's relative path, size, modification and change times and inode, plus this module and the
# vocabularies it checks against. Any card added, removed, edited, replaced or chmod-ed changes the key;
# the next reading then takes every card whose size, times and inode are unchanged from its record (one
# per card file, ``Record``) and reads only the others, deciding duplicate ids across all of them again:
# the same checks and problem lines as a full reading (a test compares both), for the cost of one card.
# The index is never written inside the factory, is private (folder 0700, file 0600, written atomically
# without following links) and is read only when it is a regular file of ours that nobody else can
# write; anything unexpected in it is a miss, never an error. Deleting it is always safe.

INDEX_FORMAT = 4  # 3: one record per card file (``Record``), so a changed factory re-reads only what changed;
# 4: one record per line, so a changed factory's next index copies the lines of the cards unchanged
MAX_INDEX = 64 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder of the factory indexes, or None when there is no home to put it in."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME")
    if base and os.path.isabs(base):
        return Path(base) / "faildiag"
    try:
        return Path.home() / ".cache" / "faildiag"
    except (RuntimeError, KeyError):
        return None


def index_path(root: Path) -> Path | None:
    """Where the index of ``root`` lives: one file per factory (a changed factory replaces its index), named
    by a hash of the root's real path. None when there is no cache folder or it lies inside the factory
    (cards are never written to, and neither is anything beside them)."""
    folder = cache_dir()
    if folder is None:
        return None
    real = os.path.realpath(root)
    where = os.path.realpath(folder)
    if where == real or where.startswith(real.rstrip(os.sep) + os.sep):
        return None
    name = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return folder / f"factory-{name}.json"


def index_key(root: Path, listing: Listing) -> str:
    """The listing's fingerprint (see above); ``root`` only makes the paths relative."""
    prefix = str(root).rstrip(os.sep) + os.sep
    rows = [_index_head()]
    rows.extend(
        f"{p[len(prefix) :] if p.startswith(prefix) else p}\0{s[0]}\0{s[1]}\0{s[2]}\0{s[3]}" for p, s in listing.files
    )
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogateescape")).hexdigest()


def _index_head() -> str:
    """What a card's record depends on besides its bytes: this module and the vocabularies it checks."""
    code = os.stat(__file__)
    return repr((INDEX_FORMAT, code.st_size, code.st_mtime_ns, CATEGORIES, STACKS, TYPES, MIN_KEYWORD, MAX_KEYWORD))


def _head_hash() -> str:
    return hashlib.sha256(_index_head().encode()).hexdigest()[:32]


def read_index(path: Path, key: str | None) -> dict[str, Any] | None:
    """The stored index when it is ours, private, regular and for ``key`` (None: for any listing); None
    otherwise (never raises)."""
    try:
        st = os.lstat(path.parent)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > MAX_INDEX:
            return None
        chunks = []
        while True:
            chunk = os.read(fd, max(st.st_size + 1, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
        raw = b"".join(chunks)
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT or (key is not None and data.get("key") != key):
        return None
    data[_RAW] = raw  # its bytes: the lines of the cards a changed factory's next index takes over as they are
    return data


_RAW = ""  # the key of an index's bytes in what ``read_index`` gives (no key of the file is empty)


def write_index(path: Path, key: str, fac: Factory) -> None:
    """Keep what reading ``fac`` found (best effort: a read-only home or a full disk only costs the next
    process a full reading): each card's record (what it says, its keywords, its problem lines).

    One JSON object, its last member ``files`` holding one record per line: the record of a card the
    last index holds unchanged is that index's line, copied as it is (after one card of thousands
    changed, one record is encoded, not thousands), the others are encoded one by one."""
    if fac.records is None:
        return  # not a factory read from a listing by ``read_factory``
    records = fac.records
    head = {
        "format": INDEX_FORMAT,
        "key": key,
        "head": _head_hash(),
        "cards": fac.taken,
        "problems": fac.problems,
        # stamps and the problem lines of the few cards that have some beside the records
        "stamps": [rec[1] for rec in records],
        "own": {str(i): rec[4] for i, rec in enumerate(records) if rec[4]},
    }
    try:
        encode = _row_encoder()
        # the records, as few objects as they can be (a fresh process parses them all): each card's row,
        # else ``[rel, id]`` (no usable signature) or ``[rel]`` (did not parse)
        lines = [
            rec[5]
            if len(rec) > 5
            else encode(rec[3] if rec[3] is not None else [rec[0]] if rec[2] is None else [rec[0], rec[2]]).encode()
            for rec in records
        ]
        text = json.dumps(head, separators=(",", ":"), check_circular=False)  # made here: no cycle in it
        body = b"".join((text[:-1].encode(), b',"files":[\n', b",\n".join(lines), b"\n]}"))
        safe_atomic_write(path.parent, path.name, body, mode=0o600)
    except (OSError, ValueError, TypeError):
        pass


def _row_encoder() -> Callable[[Any], str]:
    """A record's JSON text, compact, ASCII (``json.dumps`` with a new encoder per call costs a few µs
    more)."""
    from json import encoder

    make = getattr(encoder, "c_make_encoder", None)
    if make is not None:
        try:
            one = make(None, _unencodable, encoder.encode_basestring_ascii, None, ":", ",", False, False, True)
            return lambda obj: "".join(one(obj, 0))
        except TypeError:  # another signature: the general encoder below
            pass
    return json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def _unencodable(obj: Any) -> Any:
    raise TypeError(f"{type(obj).__name__} in a record")


def from_index(root: Path, data: dict[str, Any]) -> Factory | None:
    """The factory as stored; None when the index is not in the expected shape (then it is read again).
    The records' join (``_join``) is stored with them: ``cards`` are the positions of the cards taken,
    ``problems`` the problem lines, so a fresh process makes the rules in one pass over those."""
    records, taken, problems = data.get("files"), data.get("cards"), data.get("problems")
    if not isinstance(records, list) or not isinstance(taken, list) or not isinstance(problems, list):
        return None
    if not all(isinstance(x, str) for x in problems):
        return None
    try:
        rows = [records[i] for i in taken]
        rules: list[Rule] = [_card_rule(row) for row in rows]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
    return Factory(root, rules=rules, problems=problems, rows=rows)


def previous_records(data: dict[str, Any] | None) -> dict[str, Record]:
    """The records of an index made for another listing of the same factory, by relative path: the cards
    of that reading whose size, times and inode are unchanged need not be read again. Only from an index
    made by this very code (``head``), as trusted as an index for the current listing; a record not of
    the expected shape makes ``load_factory`` read every card."""
    if data is None or data.get("head") != _head_hash():
        return {}
    files, stamps, own = data.get("files"), data.get("stamps"), data.get("own")
    if not isinstance(files, list) or not isinstance(stamps, list) or not isinstance(own, dict):
        return {}
    if len(files) != len(stamps):
        return {}
    raw = data.get(_RAW)
    lines = raw.split(b"\n") if isinstance(raw, bytes) else []
    if len(lines) != len(files) + 2 or not lines[0].endswith(b'"files":['):  # not as ``write_index`` writes
        lines = []
    out: dict[str, Record] = {}
    for i, (x, stamp) in enumerate(zip(files, stamps, strict=True)):
        if isinstance(x, list) and x and isinstance(x[0], str) and isinstance(stamp, str):
            n = len(x)
            rec = [x[0], stamp, x[1] if n > 1 else None, x if n > 2 else None, own.get(str(i), "") if own else ""]
            if lines:  # the record's line, for the next index
                line = lines[i + 1]
                rec.append(line[:-1] if line.endswith(b",") else line)
            out[x[0]] = rec
    return out


def load_factory(root: Path, listing: Listing | None = None) -> Factory:
    """The factory of ``root``: from the index when it is current, else read (and indexed); a card the
    last reading saw unchanged is taken from its record rather than read again."""
    fac, index = _load(root, walk(root) if listing is None else listing)
    if index is not None:
        index()
    return fac


def _load(root: Path, listing: Listing) -> tuple[Factory, Callable[[], None] | None]:
    """(the factory, the writing of its index still to do) when cards were read, else (it, None): the
    caller starts the cards' engine database compiling before it writes (``_Memo.get``)."""
    path = index_path(root)
    key = index_key(root, listing) if path is not None else ""
    data = read_index(path, None) if path is not None else None
    if data is not None and data.get("key") == key:
        fac = from_index(root, data)
        if fac is not None:
            return fac, None
    try:
        fac = read_factory(root, listing=listing, previous=previous_records(data))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):  # a record not of this code's shape
        fac = read_factory(root, listing=listing)
    if path is not None and fac.complete:
        return fac, partial(write_index, path, key, fac)
    return fac, _nothing


def _nothing() -> None:
    """No index to write (no cache folder, or a card could not be read)."""


class _Memo:
    """Combined rule sets by (base rule set, factory root): a factory is read and joined once per process
    while its folders stay unchanged (see ``Listing``), like the built-in packs. Holding the base keeps
    its identity stable."""

    def __init__(self, size: int = MAX_FACTORY_ENTRIES):
        self.size = size
        self.entries: OrderedDict[tuple[int, str], tuple[RuleSet, tuple, RuleSet, Factory]] = OrderedDict()

    def get(self, base: RuleSet, root: Path) -> tuple[RuleSet, Factory]:
        key = (id(base), str(root))
        hit = self.entries.get(key)
        if hit is not None and hit[0] is base and _unchanged(hit[1]):
            self.entries.move_to_end(key)
            return hit[2], hit[3]
        listing = walk(root)  # each folder's time is taken before it is listed: a card added meanwhile is read
        fac, index = _load(root, listing)  # again next time
        for line in fac.problems:
            _warn_line(line)
        combined = with_cards(base, fac.rules, root=root)  # a new RuleSet: its compiled scanner lives with it
        if index is not None:  # cards were read: their database compiles while the index is written
            _engine_soon(combined)
            index()
        self.entries.pop(key, None)
        self.entries[key] = (base, listing.folders or (), combined, fac)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return combined, fac


def _engine_soon(rules: RuleSet) -> None:
    """Start the cards' Hyperscan database compiling on another thread (``mpscan.build_soon``), so a new or
    changed factory's compile (which does not hold the GIL) runs while the index is written and the scan
    starts. Nothing for another engine, or when the engine is already there."""
    from .parse import mpscan, scan

    name = mpscan.engine_name()
    if name != "hyperscan":
        return
    compiled = scan.compiled(rules)
    if name not in compiled.engines:
        soon = mpscan.build_soon(name, compiled.patterns)
        if soon is not None:
            compiled.engines[name] = soon


def _unchanged(folders: tuple[tuple[str, int], ...]) -> bool:
    try:
        return bool(folders) and all(os.stat(f).st_mtime_ns == t for f, t in folders)
    except OSError:
        return False


_MEMO = _Memo()


def attach(
    base: RuleSet, root: str | os.PathLike[str] | None = None, *, cwd: str | os.PathLike[str] | None = None
) -> tuple[RuleSet, Factory | None, list[str]]:
    """The rule set to scan with, the factory found (or None) and problems to note (one line each).
    ``root`` None = the variable, then ``./.faildiag/factory/``. Never raises for a bad card."""
    found, problem = resolve_root(root, cwd=cwd)
    keep_cache(base, allowed=found is None or index_path(found) is not None)  # never into the cards' folder
    if found is None:
        if problem:
            _warn_line(f"faildiag: {problem}; no team cards used")
        return base, None, [f"{problem}; no team cards used"] if problem else []
    combined, fac = _MEMO.get(base, found)
    return combined, fac, list(fac.problems)


def _warn(source: str, why: str) -> None:
    _warn_line(f"{source}: {why}")


def _warn_line(line: str) -> None:
    """One line on stderr (or in pytest's warnings summary): the file name given to ``warn_explicit`` is
    not a real file, so no source line is printed under it."""
    warnings.warn_explicit(line, FactoryWarning, filename="faildiag", lineno=0)


# ----------------------------------------------------------------------------------------------------
# a match: supporting evidence for the ranking
# ----------------------------------------------------------------------------------------------------


def is_card_rule(rule: Rule) -> bool:
    return rule.id.startswith(RULE_PREFIX)


def shown_directly(cause: RootCause) -> bool:
    """A cause the logs show on their own: found by a built-in rule (or a stuck frame) from a line it saw,
    not a fallback guess, a differential hypothesis, an inference of a rule, or a card."""
    rule = cause.rule or ""
    if not rule or rule == "fallback" or rule.startswith(("differential:", RULE_PREFIX)):
        return False
    if any(e.kind == "hypothesis" and e.source.startswith(("rule ", "factory:")) for e in cause.evidence):
        return False
    return any(e.kind == "direct" for e in cause.evidence)


def support(causes: dict[str, RootCause], findings: Iterable[Any]) -> list[dict[str, Any]]:
    """Apply card matches (``findings`` of card rules) to the candidate causes, in place; returns the
    report's ``factory`` entries. A card raises the best cause of its category that a rule found; else
    it adds its own candidate, kept below the best cause of another category the logs show directly."""
    firsts: dict[str, Any] = {}
    for f in findings:
        if f.rule.id not in firsts or f.seq < firsts[f.rule.id].seq:
            firsts[f.rule.id] = f
    entries = []
    for f in sorted(firsts.values(), key=lambda f: f.seq):
        rule: Rule = f.rule
        spec = rule.causes[0]
        cid, title = rule.id[len(RULE_PREFIX) :], rule.title
        cite = Evidence("hypothesis", rule.pack, f"{cid}: {title}")
        seen = Evidence("direct", f.source, f.text[:500], f.line or None)
        target = _supported(causes, spec.category)
        if target is not None:
            before = target.confidence
            target.confidence = 1 - (1 - before) * (1 - CORROBORATION * spec.confidence)
            if not shown_directly(target):
                target.confidence = min(target.confidence, max(before, _ceiling(causes, spec.category)))
            target.evidence.insert(min(1, len(target.evidence)), cite)
            target.fix_hints.extend(h for h in spec.fix_hints if h not in target.fix_hints)
            target.summary += f" (known issue {cid})"
            effect = "raised"
        else:
            conf = min(spec.confidence, _ceiling(causes, spec.category))
            target = RootCause(
                spec.id, spec.category, conf, spec.summary, [seen, cite], fix_hints=list(spec.fix_hints), rule=rule.id
            )
            causes[spec.id] = target
            effect = "candidate"
        entries.append(
            {
                "id": cid,
                "path": rule.pack[len("factory:") :],
                "title": title,
                "matched": {"source": f.source, "line": f.line or None, "excerpt": f.text[:300]},
                "cause": target.id,
                "effect": effect,
            }
        )
    return entries


def _supported(causes: dict[str, RootCause], category: str) -> RootCause | None:
    """The best cause of ``category`` that a rule (not a fallback guess, a differential or a card) found."""
    best = None
    for c in causes.values():
        rule = c.rule or ""
        if c.category != category or not rule or rule == "fallback" or rule.startswith(("differential:", RULE_PREFIX)):
            continue
        if best is None or c.confidence > best.confidence:
            best = c
    return best


def _ceiling(causes: dict[str, RootCause], category: str) -> float:
    """How high a card may lift a cause of ``category``: below the best other-category direct cause."""
    direct = [c.confidence for c in causes.values() if c.category != category and shown_directly(c)]
    return UNDER_DIRECT * max(direct) if direct else 1.0
