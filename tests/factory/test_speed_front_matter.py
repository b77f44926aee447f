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


def test_a_whole_card_read_by_the_json_scanner_is_the_card_read_line_by_line():
    """``_plain_card`` (one split of the key lines, then the JSON scanner) gives exactly what cutting
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


def _toml(head: bytes) -> object:
    import tomllib

    try:
        # the front matter's lines as the card holds them: each ends with its newline (the split drops the
        # last one, which would leave the CR of a CRLF card bare)
        return tomllib.loads(F.split_front_matter(head)[0] + "\n")
    except (tomllib.TOMLDecodeError, F.CardError) as exc:
        return type(exc)


def test_the_json_reading_of_a_card_is_tomllibs_reading_whenever_it_reads_at_all():
    """``_plain_card`` against ``tomllib`` itself (not the subset parser): random cards of every shape above,
    each read the same whenever the JSON path reads it."""
    rnd = random.Random(4242)
    read = 0
    for atoms in (ATOMS, ATOMS + RISKY):
        for _ in range(20000):
            head = _card_text(rnd, atoms)
            fast = F._plain_card(head)
            if fast is not None:
                read += 1
                assert fast == _toml(head), head
    assert read > 1500


# One card of each shape the JSON path reads, and of each it must leave to TOML (None), with what tomllib reads.
READ = [
    b'+++\nid = "a"\ntitle = "t"\n+++\n',
    b'\xef\xbb\xbf\n \n+++\r\nid = "a"\r\n\r\nsignatures = [\r\n  "x",\r\n  "y"\r\n]\r\n\t+++ \r\nbody',
    b'  +++  \n\tid\t=\t"a \\"q\\" \\\\ \\n \\t"  \nlinks = []\nfix_hints = [ "a" , "b" ]\n+++',
    b'+++\nid = "\xc3\xa9\xe2\x80\xa8"\n\n\n+++\n+++\n',
    b"+++\n+++\n",
    b'+++\nsig = ["a",\n\n "b"]\n+++\n',
    b'+++\n1-a_B = "x"\n+++\n',
]
LEFT = [
    b'+++\nid = "a" # comment\n+++\n',
    b"+++\nid = 'literal'\n+++\n",
    b'+++\nid = ["a", "b",]\n+++\n',
    b'+++\nid = ["a", # c\n "b"]\n+++\n',
    b'+++\nid = {x = "a"}\n+++\n',
    b'+++\nid.x = "a"\n+++\n',
    b'+++\n"id" = "a"\n+++\n',
    b"+++\nid = 1\n+++\n",
    b"+++\nid = true\n+++\n",
    b'+++\nid = [["a"]]\n+++\n',
    b'+++\nid = "\\u00e9"\n+++\n',
    b'+++\nid = "a\\/b"\n+++\n',
    b'+++\nid = "tab\there"\n+++\n',
    b'+++\nid = """a"""\n+++\n',
    b'+++\nid =\n"a"\n+++\n',
    b'+++\nid = "a", title = "b"\n+++\n',
    b'+++\nid = "a"\nid = "b"\n+++\n',
    b'+++\n[table]\nid = "a"\n+++\n',
    b'+++\nid = "a"\n[table]\n+++\n',
    b'+++\nid = "a"\rtitle = "b"\n+++\n',
    b'+++\nid = "a\x7f"\n+++\n',
    b'+++\nid = "a"\n\x0c\n+++\n',
    b'+++\nid = ["a"\ntitle = "b"]\n+++\n',
    b'+++\nid = "+++"\n+++\n',
    b'+++\nid = "a"\n',
    b'x\n+++\nid = "a"\n+++\n',
]


def test_each_shape_is_read_as_tomllib_reads_it_or_left_to_it():
    for head in READ:
        assert F._plain_card(head) is not None, head
        assert F._plain_card(head) == _toml(head), head
    for head in LEFT:
        assert F._plain_card(head) is None, head
    assert F._plain_card(READ[1]) == {"id": "a", "signatures": ["x", "y"]}


def test_plain_fields_are_the_checked_fields_of_any_front_matter():
    """``plain_fields`` (the common good card in a few steps) gives what ``card_fields`` gives, or raises
    its very error, for front matter of strings and lists of strings in every mix."""
    rnd = random.Random(7)
    values = ["", "a", "ok-id", "bad id", "environment", "pytorch", "crash", "nonsense", "x|y"]

    def value() -> object:
        return rnd.choice(values) if rnd.random() < 0.6 else rnd.sample(values, rnd.randrange(3))

    def outcome(fn, data):
        try:
            return fn(data)
        except F.CardError as exc:
            return str(exc)

    good = 0
    for _ in range(20000):
        keys = ["id", "title", "signatures", "category", "stack", "type", "fix_hints", "links", "other"]
        data = {k: value() for k in keys if rnd.random() < 0.85}
        if rnd.random() < 0.5:
            data.update(id="ok-id", category=rnd.choice(["environment", "harness"]))
        expected = outcome(F.card_fields, dict(data))
        assert outcome(F.plain_fields, dict(data)) == expected, data
        good += isinstance(expected, tuple)
    assert good > 100
