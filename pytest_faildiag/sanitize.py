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

from .redact import redact_text

# C0 except tab and newline (layout), DEL and C1; then the Unicode format characters that reorder or break
# lines (bidi embeddings/overrides/isolates, the Arabic letter mark, line/paragraph separators): "Trojan
# Source" text reads differently on screen than it is.
_C0_C1 = [c for c in range(0x20) if c not in (0x09, 0x0A)] + list(range(0x7F, 0xA0))
_FORMAT = [0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SHOWN: dict[int, str] = {c: f"\\x{c:02x}" for c in _C0_C1} | {c: f"\\u{c:04x}" for c in _FORMAT}
_SHOWN_ONE_LINE: dict[int, str] = _SHOWN | {0x0A: "\\n"}
_UNSAFE = re.compile("[" + "".join(re.escape(chr(c)) for c in [*_C0_C1, *_FORMAT]) + "]")
_UNSAFE_ONE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\n]")
_JSON_RAW = re.compile("[" + "".join(re.escape(chr(c)) for c in [*range(0x7F, 0xA0), *_FORMAT]) + "]")

# Markdown: ASCII punctuation that starts an inline construct (code, emphasis, strike-through, link, image,
# raw HTML, autolink, entity, table cell, math, heading); a backslash makes each literal (CommonMark 2.4).
_MD_SPECIAL = re.compile(r"([\\`*_~\[\]()!<>&|$#])")
# GitHub also links bare URLs and www. names (the autolink extension): the escape inside "://" and after
# "www" keeps the text and drops the link.
_MD_URL = re.compile(r"(?i)(?<=[a-z0-9])://|(?<![a-z0-9])(www)\.")
_BACKTICKS = re.compile(r"`+")
ELLIPSIS = "…"


def visible(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\u202e``); a newline stays a
    newline unless ``one_line``. Not redacted: use ``display`` for text from a run."""
    if not text:
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if (_UNSAFE_ONE_LINE if one_line else _UNSAFE).search(text) is None:
        return text
    return text.translate(_SHOWN_ONE_LINE if one_line else _SHOWN)


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
    """JSON text with C1 and bidi characters written as ``\\u`` escapes (the same value; ``json.dumps``
    already escapes C0), for printing JSON to a terminal."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m[0]):04x}", text)
