"""Reading cards: the front-matter fast path agrees with tomllib, keywords are text every match contains,
and the word-lookup keyword search finds what a regex search finds."""

from __future__ import annotations

import random
import re
import tomllib

import pytest

from pytest_faildiag import factory as F
from pytest_faildiag.factory import CardError, CardKeywords, _simple_toml, signature_keywords
from pytest_faildiag.rules import CauseSpec, Rule

TOML_CASES = [
    'id = "a"\ntitle = \'t\'\nsignatures = [\'x\\S+\', "y\\\\d \\u00e9"]\n# c\ncategory="model" # trailing\n',
    "signatures = [\n  \"a\",  # one\n  'b',\n]\n",
    'a = "x\\qy"\n',
    'a = "x"\na = "y"\n',
    "a = 1\n",
    '[t]\na="x"\n',
    'a = """x"""\n',
    'a = "x\ty"\n',
    'a = "x\x01"\n',
    'a.b = "x"\n',
    "a = []\n",
    'a = ["x" "y"]\n',
    "a = \"x\"\r\nb = 'y'\r\n",
    "  \n\n",
    'a = "x" b = "y"\n',
    "a = 'it''s'\n",
    'a = "unterminated\n',
]


@pytest.mark.parametrize("text", TOML_CASES)
def test_the_fast_front_matter_reader_agrees_with_tomllib_or_defers_to_it(text):
    fast = _simple_toml(text)
    if fast is None:
        return  # tomllib reads it (and words the error)
    assert fast == tomllib.loads(text)


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        (r"NFS server \S+ not responding", "NFS server a:/b not responding"),
        (r"(?i)QUOTA exceeded for \w+", "quota EXCEEDED for team"),
        (r"abcd(e|f)ghij+k", "abcdeghijjjk"),
        (r"x{2}abcde{0,3}", "xxabcd"),
        (r"AAAA|BBBB", "zzBBBBzz"),
        (r"QOS\[limit\] reached", "QOS[limit] reached"),
        (r"a\x41bcde", "aAbcde"),
        (r"(a)\1bcdef", "aabcdef"),
    ],
)
def test_a_keyword_is_text_every_match_contains(pattern, line):
    kw = signature_keywords(pattern)
    assert re.search(pattern, line)
    hay = line.lower() if kw.ignore_case else line
    assert any(w in hay for w in kw.words)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(unclosed", "missing )"),
        ("abc)def", "unbalanced"),
        ("[abc", "unterminated character set"),
        ("abcd\\", "lone backslash"),
        (r"\d+ \w+", "literal text"),
        ("abcd|xy", "each alternative"),
        ("(?x)abcd efgh", "verbose"),
    ],
)
def test_signatures_without_usable_literal_text_or_visibly_broken_are_refused(pattern, why):
    with pytest.raises(CardError, match=re.escape(why)):
        signature_keywords(pattern)


def _rule(i: int, kw: str, folded: bool) -> Rule:
    return Rule(
        id=f"factory:c{i}",
        title="t",
        keywords=[kw],
        patterns=[],
        causes=[CauseSpec("x", "model", 0.5, "s")],
        ignore_case=folded,
    )


def test_the_word_lookup_finds_the_same_keywords_as_a_regex_would():
    rnd = random.Random(7)
    words = ["storage", "mount", "NCCL", "shard", "lease", "quota", "x9", "gpu-3", "QOSMax", "/mnt/a"]
    keywords = {" ".join(rnd.sample(words, 3)) + rnd.choice([" ", ": ", "-"]) for _ in range(200)}
    keywords |= {"QOSMaxGRESPerUser", "ab"}  # no whole word: the small alternation
    rules = [_rule(i, k, folded=i % 5 == 0) for i, k in enumerate(sorted(keywords))]
    matcher = CardKeywords(re.compile(rb"Traceback|error"), rules)
    for _ in range(300):
        line = " ".join(rnd.choice(words + ["error", "noise", "Storage", "QUOTA"]) for _ in range(8)) + " "
        raw = line.encode()
        found = set()
        hit = matcher.search(raw)
        while hit is not None:
            found.add(hit.group(0).decode().lower())
            hit = matcher.search(raw, hit.start() + 1)
        for r in rules:
            kw = r.keywords[0]
            present = kw.lower() in line.lower() if r.ignore_case else kw in line
            if present:  # a keyword inside a longer hit at one position is found by the scanner from that hit
                assert any(kw.lower() in f for f in found), (kw, line, found)


# atoms of signatures for ``_simple_runs``: literal text, escapes of every kind, class escapes, anchors,
# quantifiers, alternatives, and what only the token loop reads (groups, classes, braces, long escapes)
_ATOMS = [
    *["a", "bc", "Z9", "_", "-", " ", ":", "/", "é", "ERR", "quota", "word"],
    *["\\.", "\\(", "\\)", "\\-", "\\ ", "\\|", "\\*", "\\?", "\\+", "\\d", "\\S", "\\w", "\\b", "\\t", "\\"],
    *[".", "^", "$", "*", "+", "?", "|"],
    *["(", ")", "(?:x)", "[a-z]", "]", "{2}", "{0,3}", "{", "}", "\\\\", "\\x41", "\\1", "\\N{DASH}"],
]


def test_the_one_findall_cut_of_a_signature_is_the_token_loops(monkeypatch):
    """A signature without groups, classes or braces is cut into its literal runs by one ``findall``
    (``_simple_runs``): on 20,000 random signatures, the keywords (or the error) are those of the token
    loop, and the one-findall cut takes a good share of them."""
    rnd = random.Random(17)
    patterns = [
        ("(?i)" if rnd.random() < 0.1 else "") + "".join(rnd.choice(_ATOMS) for _ in range(rnd.randrange(1, 12)))
        for _ in range(20_000)
    ]
    patterns += [r"Lustre: a-OST00ff-osc-\w+: Connection to b \(at \S+\) was lost", r"x\.?y+z*|abcd\|efgh\d"]

    def outcome(pattern: str) -> object:
        try:
            return signature_keywords(pattern)
        except CardError as exc:
            return str(exc)

    fast = [outcome(p) for p in patterns]
    cut = sum(F._simple_runs(p[4:] if p.startswith("(?i)") else p) is not None for p in patterns)
    monkeypatch.setattr(F, "_simple_runs", lambda body: None)  # every signature through the token loop
    assert fast == [outcome(p) for p in patterns]
    assert cut > 3000
