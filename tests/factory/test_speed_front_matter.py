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
    monkeypatch.setattr(F, "_plain_toml", lambda text: None)
    slow = F.read_factory(root)
    assert fast.cards == slow.cards and fast.problems == slow.problems == []
    assert [c.signatures[0] for c in fast.cards] == [
        "CUDA error: (?P<what>.*)",
        "(?i)quota \\d+ exceeded",
        'tab\there "quoted" \\/slash',
        "é ünïcode",
    ]
