"""Text-level edits of config values in YAML, JSON, TOML and INI files.

Why text and not parse/dump: re-serialising a config loses its comments, key order and formatting, so
the diff a person confirms would be the whole file. Only the value's characters are replaced; the
rest of the file stays byte-identical. Only scalar values (numbers, words, quoted strings) are edited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class ValueSpan:
    """Where a key's scalar value sits in a text: ``start``/``end`` offsets, 1-based ``line``."""

    start: int
    end: int
    line: int
    value: str


def _patterns(key: str, fmt: str) -> list[re.Pattern[str]]:
    k = re.escape(key)
    if fmt == "json":
        return [re.compile(rf"\"{k}\"\s*:\s*(?P<val>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\"[^\"\n]*\"|true|false)")]
    if fmt == "yaml":
        return [
            re.compile(rf"^[ \t]*(?:-[ \t]+)?[\"']?{k}[\"']?[ \t]*:[ \t]*(?P<val>[^\s#,\]}}]+)", re.M),
            re.compile(rf"[{{,][ \t]*[\"']?{k}[\"']?[ \t]*:[ \t]*(?P<val>[^\s#,\]}}]+)"),
        ]
    return [re.compile(rf"^[ \t]*[\"']?{k}[\"']?[ \t]*[=:][ \t]*(?P<val>[^\s#;,]+)", re.M)]  # toml, ini


def find_config_values(text: str, key: str, fmt: str) -> list[ValueSpan]:
    """Every scalar value of ``key`` in ``text`` (a config of format ``fmt``), quotes stripped in ``value``."""
    out: list[ValueSpan] = []
    seen: set[int] = set()
    for pat in _patterns(key, fmt):
        for m in pat.finditer(text):
            start, end = m.span("val")
            if start in seen:
                continue
            seen.add(start)
            raw = m["val"]
            out.append(ValueSpan(start, end, text.count("\n", 0, start) + 1, raw.strip("\"'")))
    return sorted(out, key=lambda s: s.start)


def replace_span(text: str, span: ValueSpan, new_value: str) -> str:
    """``text`` with the value at ``span`` replaced, keeping its quoting."""
    raw = text[span.start : span.end]
    quote = raw[0] if raw[:1] in {"'", '"'} and raw[-1:] == raw[:1] and len(raw) > 1 else ""
    return text[: span.start] + f"{quote}{new_value}{quote}" + text[span.end :]


_INT_KEYS = {
    "json": [re.compile(r"\"(?P<key>[A-Za-z_][\w.-]*)\"\s*:\s*(?P<val>-?\d+)(?![\d.eE])")],
    "yaml": [
        re.compile(
            r"^[ \t]*(?:-[ \t]+)?[\"']?(?P<key>[A-Za-z_][\w.-]*)[\"']?[ \t]*:[ \t]*(?P<val>-?\d+)[ \t]*(?:#.*)?\r?$",
            re.M,
        ),
        re.compile(r"[{,][ \t]*[\"']?(?P<key>[A-Za-z_][\w.-]*)[\"']?[ \t]*:[ \t]*(?P<val>-?\d+)[ \t]*(?=[,}])"),
    ],
    "ini": [
        re.compile(
            r"^[ \t]*[\"']?(?P<key>[A-Za-z_][\w.-]*)[\"']?[ \t]*[=:][ \t]*(?P<val>-?\d+)[ \t]*(?:[#;].*)?\r?$", re.M
        )
    ],
}


def integer_values(text: str, fmt: str) -> list[tuple[str, ValueSpan]]:
    """Every ``key: <integer>`` in a config text, in file order (TOML uses the INI pattern)."""
    out: list[tuple[str, ValueSpan]] = []
    for pat in _INT_KEYS.get(fmt, _INT_KEYS["ini"]):
        for m in pat.finditer(text):
            start, end = m.span("val")
            out.append((m["key"], ValueSpan(start, end, text.count("\n", 0, start) + 1, m["val"])))
    return sorted(out, key=lambda kv: kv[1].start)
