"""Front matter read by the C JSON scanner (issue 17): for the plain ``key = "string"`` / ``key = [...]``
lines nearly every card uses, the JSON reading must be exactly what the TOML subset parser reads, and
anything JSON and TOML read differently must be left to that parser (which also words the errors)."""

from __future__ import annotations

import random

from pytest_faildiag import factory as F

ATOMS = [
    "a",
    "Z",
    " ",
    "\\\\",
    '\\"',
    "\\n",
    "\\t",
    "\\b",
    "\\f",
    "\\r",
    "\\d",
    "é",
    "=",
    "[",
    "]",
    ",",
    ".*",
    "{",
    ":",
]
RISKY = ["\\/", "\\u0041", "\\U0001F600", '"', "'", "#", "\t", "\u2028", "\\", "\\\\/", "\\\\u"]


def _front_matter(rnd: random.Random, atoms: list[str]) -> str:
    def string() -> str:
        return '"' + "".join(rnd.choice(atoms) for _ in range(rnd.randrange(8))) + '"'

    lines = []
    for _ in range(rnd.randrange(1, 6)):
        key = rnd.choice(["id", "title", "signatures", "category", "fix_hints", "links", "a-b", "x y", ""])
        if rnd.random() < 0.5:
            value = string()
        else:
            value = "[" + ", ".join(string() for _ in range(rnd.randrange(3))) + rnd.choice(["", "", ","]) + "]"
        if rnd.random() < 0.05:
            value = string() + ", " + string()
        lines.append(
            rnd.choice(["", " "]) + key + rnd.choice([" = ", "=", " =\t"]) + value + rnd.choice(["", " ", "\r", " # c"])
        )
    return "\n".join(lines) + rnd.choice(["", "\n", "\n\n"])


def test_the_json_reading_is_the_subset_parsers_reading_whenever_it_reads_at_all():
    rnd = random.Random(17)
    read = 0
    for atoms in (ATOMS, ATOMS + RISKY):
        for _ in range(20000):
            text = _front_matter(rnd, atoms)
            fast = F._plain_toml(text)
            if fast is not None:
                read += 1
                assert fast == F._simple_toml(text), text
    assert read > 3000  # most plain front matter takes the fast path


def test_a_factory_reads_the_same_cards_through_either_parser(tmp_path, monkeypatch):
    root = tmp_path / "factory"
    root.mkdir()
    sigs = ["CUDA error: (?P<what>.*)", "(?i)quota \\\\d+ exceeded", 'tab\\there \\"quoted\\" \\\\/slash', "é ünïcode"]
    for i, sig in enumerate(sigs):
        (root / f"c{i}.md").write_text(
            f'+++\nid = "c{i}"\ntitle = "card {i}"\nsignatures = ["{sig}", "second signature {i}"]\n'
            f'category = "environment"\nfix_hints = ["a", "b"]\n+++\n# write-up\n',
            encoding="utf-8",
        )
    fast = F.read_factory(root)
    monkeypatch.setattr(F, "_plain_card", lambda head: None)
    monkeypatch.setattr(F, "_plain_toml", lambda text: None)
    slow = F.read_factory(root)
    assert fast.cards == slow.cards and fast.problems == slow.problems == []
    assert [c.signatures[0] for c in fast.cards] == [
        "CUDA error: (?P<what>.*)",
        "(?i)quota \\d+ exceeded",
        'tab\there "quoted" \\/slash',
        "é ünïcode",
    ]


def _card_text(rnd: random.Random, atoms: list[str]) -> bytes:
    """A card's first bytes: BOMs, blank lines, the +++ lines in their spellings (and misspellings), front
    matter as above, a write-up that may hold a +++ line of its own, CRLF line ends, a cut UTF-8 tail."""
    lead = rnd.choice(["", "\ufeff", "\ufeff\ufeff", "\n", " \n\t\n", "\r\n", "\x0c\n", "x\n"])
    opening = rnd.choice(["+++", "+++", " +++ ", "+++\r", "++", "+++\x0b"])
    closing = rnd.choice(["+++", "+++", "\t+++", "+++ \r", "", "\x0c+++"])
    body = _front_matter(rnd, atoms)
    if rnd.random() < 0.1:
        body += "\n" + rnd.choice(["+++ x", " ", "\r", "\x0c"])
    rest = rnd.choice(["", "\n", "\nwrite-up\n", "\n+++\nmore\n", "\nend"])
    text = lead + opening + "\n" + body.rstrip("\n") + "\n" + closing + rest
    if rnd.random() < 0.1:
        text = text.replace("\n", "\r\n")
    raw = text.encode("utf-8")
    return raw[:-1] if rnd.random() < 0.03 and raw[-1:] >= b"\x80" else raw


def test_a_whole_card_read_in_one_match_is_the_card_read_line_by_line():
    """``_plain_card`` (one regex over the card's bytes, then the JSON scanner) gives exactly what cutting
    the front matter out line by line and reading it as TOML gives, whenever it gives anything."""
    rnd = random.Random(1717)
    fast_read = 0
    for atoms in (ATOMS, ATOMS + RISKY):
        for _ in range(20000):
            head = _card_text(rnd, atoms)
            fast = F._plain_card(head)
            if fast is None:
                continue
            fast_read += 1
            assert fast == F.load_toml(F.split_front_matter(head)[0]), head
    assert fast_read > 800  # (most generated cards are of odd shapes on purpose)


def test_cards_read_through_the_fast_path_are_the_cards_read_slowly(tmp_path, monkeypatch):
    """A factory of cards of many shapes, broken ones included: the same cards, rules and problem lines
    whichever way each card is read."""
    rnd = random.Random(17)
    root = tmp_path / "factory"
    for i in range(400):
        sub = root / rnd.choice(["a", "b", "c/d"])
        sub.mkdir(parents=True, exist_ok=True)
        sigs = [
            rnd.choice(
                ["NFS server \\\\S+ gone", "(?i)Quota EXCEEDED \\\\d+", "ab", "AAAA|BBBB", "x(y", "lit text {i}"]
            )
            for _ in range(rnd.randrange(1, 3))
        ]
        lines = [
            f'id = "{rnd.choice(["card", "dup", "bad id"])}-{i % 380}"',
            f'title = "card {i}"',
            "signatures = [" + ", ".join(f'"{sig}"' for sig in sigs) + "]",
            f'category = "{rnd.choice(["environment", "harness", "nonsense"])}"',
            rnd.choice(["", 'fix_hints = ["a", "b"]', "fix_hints = 'one'", "links = [1]", "# comment"]),
        ]
        rnd.shuffle(lines)
        text = "+++\n" + "\n".join(lines) + "\n+++\nwrite-up\n"
        (sub / f"c{i}.md").write_bytes(text.encode() if rnd.random() < 0.95 else b"\xff" + text.encode())
    fast = F.read_factory(root)
    monkeypatch.setattr(F, "_plain_card", lambda head: None)
    monkeypatch.setattr(F, "_plain_toml", lambda text: None)
    slow = F.read_factory(root)
    assert fast.cards == slow.cards and fast.problems == slow.problems
    assert [(r.id, r.keywords, r.ignore_case) for r in fast.rules] == [
        (r.id, r.keywords, r.ignore_case) for r in slow.rules
    ]
    assert len(fast.cards) > 100 and len(fast.problems) > 20
