"""Display safety: every string faildiag prints to a terminal, writes into Markdown or sends as a CI annotation.

Why one module: what faildiag shows comes from failed runs (test ids, file and folder names, log lines,
fields of snapshots, flight-recorder dumps and agent logs), and a failed run can be hostile. A terminal
obeys escape sequences (OSC retitles the window or writes the clipboard, CSI erases and moves, ``\\r``
overwrites what was printed, 8-bit C1 codes such as ``\\x9b`` do the same as ``ESC [``, bidi overrides
reorder a line); a Markdown renderer turns ``[text](url)`` into a link, ``![](url)`` into a fetch and
``<img>`` into HTML. So each writer passes untrusted text through one function here, and each of them
redacts secrets first (``redact.redact_text``): showing and hiding are decided in one place.

* ``display``: for terminals, annotations, logs and HTML text: control characters are shown as ``\\x1b``,
  ``\\x9b``, ``\\u202e`` (nothing is dropped, so a hostile name is visible as such); a plain newline stays
  where it is layout, ``\\r\\n`` is read as a newline.
* ``md_text`` / ``md_code`` / ``md_fence``: for Markdown (job summaries, ``--format md``): one line with
  every character that starts Markdown or HTML escaped, or a code span / fenced block whose delimiter is
  longer than any backtick run inside.
* ``json_safe``: JSON text printed to a terminal: ``json.dumps`` escapes C0 controls but leaves C1 and bidi
  characters raw; they become ``\\u`` escapes, which is the same JSON value.
"""

from __future__ import annotations

import re
import unicodedata

from .redact import redact_text

# Shown as escapes: every control (C0 except tab and newline, which are layout; DEL; C1), format (bidi
# embeddings/overrides/isolates, zero-width and tag characters), surrogate, private-use and line/paragraph
# separator character. "Trojan Source" text reads differently on screen than it is; by Unicode category, so a
# new invisible character is covered without a list to keep up to date.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
# Where such characters live (a superset, checked against ``unicodedata`` by the tests): text in other
# scripts (CJK, Cyrillic, Devanagari logs) never reaches the per-character check.
_HIDDEN_RANGES = (
    "\x00-\x08\x0b-\x1f\x7f-\xad\u0600-\u061c\u06dd-\u070f\u0890-\u0891\u08e2\u180e\u200b-\u206f"
    "\ud800-\uf8ff\ufeff\ufff9-\ufffb\U000110bd-\U000110cd\U00013430-\U0001345f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001-\U000e007f\U000f0000-\U0010ffff"
)
_CANDIDATE = re.compile(f"[{_HIDDEN_RANGES}]")
_CANDIDATE_ONE_LINE = re.compile(f"[{_HIDDEN_RANGES}\t\n]")
_JSON_CANDIDATE = re.compile(f"[{_HIDDEN_RANGES}]")

# Markdown: ASCII punctuation that starts an inline construct (code, emphasis, strike-through, link, image,
# raw HTML, autolink, entity, table cell, math, heading); a backslash makes each literal (CommonMark 2.4).
_MD_SPECIAL = re.compile(r"([\\`*_~\[\]()!<>&|$#])")
# GitHub also links bare URLs and www. names (the autolink extension): the escape inside "://" and after
# "www" keeps the text and drops the link.
_MD_URL = re.compile(r"(?i)(?<=[a-z0-9])://|(?<![a-z0-9])(www)\.")
_BACKTICKS = re.compile(r"`+")
ELLIPSIS = "…"


def _escape(ch: str) -> str:
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if unicodedata.category(ch) not in _HIDDEN_CATEGORIES:
        return ch  # an ordinary letter or symbol (é, …, “)
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: object, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\u202e``); newlines and tabs
    stay as layout unless ``one_line`` (a command, a path, a message: one line on the screen is then one
    line of the value). Not redacted: use ``display`` for text from a run; fix mode uses this one directly,
    because what it shows must be exactly what it applies."""
    if not isinstance(text, str):
        text = str(text)
    if not text:
        return text
    if "\r\n" in text and not one_line:
        text = text.replace("\r\n", "\n")
    return (_CANDIDATE_ONE_LINE if one_line else _CANDIDATE).sub(lambda m: _escape(m[0]), text)


def display(text: object, *, one_line: bool = False, limit: int | None = None) -> str:
    """Redacted and made visible: what a terminal, a CI annotation or an HTML page may show of ``text``.
    ``limit`` cuts the result (after redaction, so a cut never leaves half a token unmasked)."""
    s = visible(redact_text(text if isinstance(text, str) else str(text)), one_line=one_line)
    return _cut(s, limit)


def _cut(s: str, limit: int | None) -> str:
    return s if limit is None or len(s) <= limit else s[: max(0, limit - 1)] + ELLIPSIS


def md_text(text: object, *, limit: int | None = None) -> str:
    """One line of Markdown that renders as exactly this text (redacted, controls visible): no link, image,
    HTML tag, autolink, emphasis, code span or table-cell break can come out of it."""
    s = " ".join(display(text).split())
    s = _cut(s, limit)
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return _MD_URL.sub(lambda m: f"{m[1]}\\." if m[1] else "\\://", s)


def md_code(text: object, *, limit: int | None = None, table: bool = False) -> str:
    """An inline code span holding this text on one line (redacted, controls visible); inside a table cell
    (``table=True``) its pipes are escaped, which GitHub's table parser reads before the span."""
    s = _cut(" ".join(display(text).split()), limit)
    if not s:
        return ""
    fence = "`" * (max((len(r) for r in _BACKTICKS.findall(s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    out = f"{fence}{pad}{s}{pad}{fence}"
    return out.replace("|", "\\|") if table else out


def md_fence(text: object) -> list[str]:
    """A fenced code block for multi-line text (redacted, controls visible), as lines: its fence is longer
    than any backtick run inside, so the text cannot close it and go on as Markdown."""
    body = display(text)
    longest = max((len(r) for r in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *body.split("\n"), fence]


def json_safe(text: str) -> str:
    """JSON text with the characters ``json.dumps(..., ensure_ascii=False)`` leaves raw but a terminal acts
    on (DEL, C1 controls such as U+009B, bidi and other format characters) written as ``\\u`` escapes: the
    same JSON value, as these characters only ever occur inside strings."""

    def repl(m: re.Match[str]) -> str:
        ch = m[0]
        if unicodedata.category(ch) not in _HIDDEN_CATEGORIES:
            return ch
        code = ord(ch)
        if code <= 0xFFFF:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

    return _JSON_CANDIDATE.sub(repl, text)
