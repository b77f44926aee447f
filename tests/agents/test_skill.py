"""`faildiag skill`: the agent skill file, checked without any agent SDK (front matter as the common agents
load it: a `---` block with `name` and `description`, then Markdown)."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from tests.agents.conftest import ROOT, cli

NAME = re.compile(r"^[a-z0-9-]+$")


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """A strict reading of the simple YAML subset a skill's front matter uses: `key: value` lines between two
    `---` lines, plain scalars (no `: ` or ` #` inside a value, which YAML would read as structure)."""
    assert text.startswith("---\n"), "the file must open with front matter"
    head, sep, body = text[4:].partition("\n---\n")
    assert sep, "the front matter must be closed by a --- line"
    fields: dict[str, str] = {}
    for line in head.splitlines():
        key, colon, value = line.partition(": ")
        assert colon and re.fullmatch(r"[a-z_-]+", key), f"not a `key: value` line: {line!r}"
        assert ": " not in value and " #" not in value and not value.startswith(("'", '"', "[", "{", ">", "|")), line
        assert key not in fields, f"{key} given twice"
        fields[key] = value.strip()
    return fields, body


def test_faildiag_skill_prints_a_skill_with_a_valid_name_and_description(tmp_path):
    res = cli("skill", cwd=tmp_path)
    assert res.returncode == 0 and res.stderr == b""
    text = res.stdout.decode("utf-8")
    fields, body = front_matter(text)
    assert NAME.match(fields["name"]) and len(fields["name"]) <= 64
    assert 0 < len(fields["description"]) <= 1024
    assert text == (ROOT / "pytest_faildiag" / "agents" / "SKILL.md").read_text(encoding="utf-8")
    assert body.lstrip().startswith("# ")


def test_the_skill_says_when_to_run_what_how_to_read_evidence_and_to_ask_before_fixing(tmp_path):
    _, body = front_matter(cli("skill", cwd=tmp_path).stdout.decode("utf-8"))
    for command in ("pytest --faildiag", "faildiag run", "faildiag diagnose", "faildiag fix", "--confirm"):
        assert command in body, command
    assert "**`direct`**" in body and "**`hypothesis`**" in body
    assert "Never apply a fix the user has not confirmed" in body


def test_the_skill_ships_as_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["pytest_faildiag"]
    assert any(fnmatch.fnmatch("agents/SKILL.md", g) for g in globs)
