"""Make control characters visible in what fix mode shows before it acts (diffs, commands, paths, notes).

Why: a person confirms a fix by reading it. A diff line holding ``\\x1b[2K\\x1b[1G`` erases itself on a
terminal and shows something harmless while the file gets the real line; a carriage return, a bidi
override (U+202E) or an invisible tag character does the same in other ways. Everything fix mode prints
goes through :func:`visible`, so what is on the screen is what is applied or run.

This is fix mode's own copy, kept in one place so that the project-wide terminal sanitiser can replace
it: callers use only :func:`visible` and :func:`visible_json`.
"""

from __future__ import annotations

import re
import unicodedata

# Candidates: everything outside printable ASCII; the check below keeps ordinary letters (é, …, “).
_CANDIDATE = re.compile(r"[^\x20-\x7e]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}  # controls, format (bidi, zero-width, tags), separators


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: object, *, layout: bool = False) -> str:
    """``text`` with every control, format or separator character written as an escape (``\\x1b``,
    ``\\r``, ``\\u202e``). With ``layout``, newlines and tabs stay as they are (multi-line text such as a
    diff); without it (one-line text: a command, a path, a message) they are escaped too, so one line on
    the screen is one line of the value."""
    s = str(text)

    def repl(m: re.Match[str]) -> str:
        ch = m.group()
        if layout and ch in "\n\t":
            return ch
        return _escape(ch) if (ch in _NAMED or _hidden(ch)) else ch

    return _CANDIDATE.sub(repl, s)


_JSON_CANDIDATE = re.compile(r"[\x7f-\U0010ffff]")


def visible_json(dumped: str) -> str:
    """A ``json.dumps(..., ensure_ascii=False)`` text with the characters JSON leaves raw but a terminal
    acts on (DEL, C1 controls such as U+009B, bidi and other format characters) written as ``\\uXXXX``
    escapes. The result is the same JSON value: these characters only ever occur inside strings."""

    def repl(m: re.Match[str]) -> str:
        ch = m.group()
        if not _hidden(ch):
            return ch
        code = ord(ch)
        if code <= 0xFFFF:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

    return _JSON_CANDIDATE.sub(repl, dumped)
