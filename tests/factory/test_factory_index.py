"""The factory index: what reading a factory found, kept in the user's cache folder so a fresh process does
not parse every card again. Real CLI runs, a real cache folder, real edits of real cards."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from pytest_faildiag import factory as F

from .conftest import QUOTA_CARD, QUOTA_LOG, make_read_only, make_writable, snapshot_of, write_factory

BROKEN = {
    "nofront.md": "just notes\n",
    "category.md": QUOTA_CARD.replace("slurm-qos-gres", "bad-cat").replace('"harness"', '"weather"'),
    "twosigs.md": QUOTA_CARD.replace("slurm-qos-gres", "two-sigs").replace(
        "signatures = ['QOSMaxGRESPerUser limit reached for account \\S+']",
        "signatures = ['QOSMaxGRESPerUser limit reached for account \\S+', '\\d+ \\w+']",
    ),
}


def _diagnose(tmp_path: Path, root: Path, log: str = QUOTA_LOG, cache: Path | None = None):
    path = tmp_path / "run.log"
    path.write_text(log, encoding="utf-8")
    env = dict(os.environ)
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_faildiag.cli", "diagnose", str(path), "--exit-code", "1", "--format", "json"]
        + ["--out", str(tmp_path / "out"), "--factory-root", str(root)],
        capture_output=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Traceback" not in proc.stderr.decode()
    return json.loads(proc.stdout), proc.stderr.decode()


def _index_files(cache: Path) -> list[Path]:
    return sorted((cache / "faildiag").glob("factory-*.json"))


def test_a_second_process_reads_the_index_and_reports_the_same(tmp_path, _private_cache):
    root = write_factory(tmp_path / "factory", {"infra/slurm-qos.md": QUOTA_CARD, **BROKEN})
    make_read_only(root)
    before = snapshot_of(root)
    try:
        first, err1 = _diagnose(tmp_path, root)
        (index,) = _index_files(_private_cache)
        written = index.stat().st_mtime_ns
        second, err2 = _diagnose(tmp_path, root)
    finally:
        after = snapshot_of(root)
        make_writable(root)
    assert after == before  # the factory is only read, the index lives elsewhere
    assert index.stat().st_mtime_ns == written  # read, not rewritten
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    assert stat.S_IMODE(index.parent.stat().st_mode) == 0o700
    for report in (first, second):
        assert report["root_causes"][0]["category"] == "harness"
        assert report["factory"][0]["path"] == "infra/slurm-qos.md"
    assert first["root_causes"] == second["root_causes"] and first["notes"] == second["notes"]
    # the problems of broken cards are one line each, also when they come from the index
    warned = [sorted(ln for ln in err.splitlines() if "FactoryWarning" in ln) for err in (err1, err2)]
    assert warned[0] == warned[1] and len(warned[0]) == 3
    assert any("category.md" in ln and "unknown category 'weather'" in ln for ln in warned[1])
    assert any("twosigs.md" in ln and "that signature skipped" in ln for ln in warned[1])


def test_an_edited_added_or_removed_card_is_read_again(tmp_path, _private_cache):
    other = QUOTA_CARD.replace("slurm-qos-gres", "nfs-hang").replace(
        "QOSMaxGRESPerUser limit reached for account \\S+", "NFS server \\S+ not responding"
    )
    root = write_factory(tmp_path / "factory", {"a.md": QUOTA_CARD})
    nfs_log = "step 1\nRuntimeError: NFS server storage-12:/export/vol7 not responding\n"
    first, _ = _diagnose(tmp_path, root, nfs_log)
    assert "factory" not in first
    card = root / "a.md"
    stamp = card.stat()
    card.write_text(other)  # edited in place: same file, same folder time, new bytes
    os.utime(card, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))
    edited, _ = _diagnose(tmp_path, root, nfs_log)
    assert edited["factory"][0]["id"] == "nfs-hang"
    write_factory(root, {"sub/b.md": QUOTA_CARD})  # added
    added, _ = _diagnose(tmp_path, root)
    assert added["factory"][0]["path"] == "sub/b.md"
    (root / "sub" / "b.md").unlink()  # removed
    removed, _ = _diagnose(tmp_path, root)
    assert "factory" not in removed
    assert len(_index_files(_private_cache)) == 1  # one index per factory, replaced when it changes


def test_an_index_that_is_not_ours_or_not_current_is_ignored(tmp_path, _private_cache):
    root = write_factory(tmp_path / "factory", {"a.md": QUOTA_CARD})
    listing = F.walk(root)
    path = F.index_path(root)
    assert path is not None and path.parent == _private_cache / "faildiag"
    key = F.index_key(root, listing)
    F.load_factory(root, listing)
    assert F.read_index(path, key) is not None
    good = path.read_bytes()
    lying = json.loads(good)
    lying["files"][0][4] = "dataset"  # a stale or forged reading: ignored unless its key matches, and its
    lying["key"] = "0" * 64  # records are only taken for cards whose size, times and inode they name
    lying["stamps"][0] = "0.0.0.0"
    for data in (b"not json", b"[]", b'{"format": 1}', json.dumps(lying).encode(), good[: len(good) // 2]):
        path.write_bytes(data)
        assert F.read_index(path, key) is None
        fac = F.load_factory(root)
        assert [r.causes[0].category for r in fac.rules] == ["harness"]
    os.chmod(path, 0o620)  # writable by the group: never trusted
    assert F.read_index(path, key) is None
    os.chmod(path, 0o600)
    target = tmp_path / "elsewhere.json"
    target.write_bytes(good)
    path.unlink()
    path.symlink_to(target)  # a link planted in its place is not followed, and is replaced by a real file
    assert F.read_index(path, key) is None
    F.load_factory(root)
    assert not path.is_symlink() and F.read_index(path, key) is not None
    assert target.read_bytes() == good


def test_a_cache_folder_inside_the_factory_is_never_written(tmp_path, monkeypatch):
    root = write_factory(tmp_path / "factory", {"a.md": QUOTA_CARD})
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    before = snapshot_of(root)
    report, _ = _diagnose(tmp_path, root, cache=root / "cache")
    assert report["factory"][0]["id"] == "slurm-qos-gres"
    assert snapshot_of(root) == before
    assert F.index_path(root) is None


def test_an_unwritable_cache_costs_nothing_but_the_index(tmp_path, monkeypatch):
    root = write_factory(tmp_path / "factory", {"a.md": QUOTA_CARD})
    cache = tmp_path / "ro-cache"
    cache.mkdir()
    os.chmod(cache, 0o555)
    try:
        report, err = _diagnose(tmp_path, root, cache=cache)
    finally:
        os.chmod(cache, 0o755)
    assert report["factory"][0]["id"] == "slurm-qos-gres"
    if os.geteuid() != 0:  # root writes anyway
        assert not (cache / "faildiag").exists()
    assert "FactoryWarning" not in err


def test_an_index_matches_a_fresh_reading(tmp_path):
    cards = {f"c{i}.md": QUOTA_CARD.replace("slurm-qos-gres", f"card-{i}") for i in range(5)}
    cards["ci.md"] = QUOTA_CARD.replace("slurm-qos-gres", "ci-card").replace("['QOSMax", "['(?i)QOSMax")
    root = write_factory(tmp_path / "factory", {**cards, **BROKEN})
    fresh = F.read_factory(root)
    F.load_factory(root)  # writes the index
    t0 = time.perf_counter()
    indexed = F.load_factory(root)
    assert time.perf_counter() - t0 < 5
    assert indexed.problems == fresh.problems
    assert indexed.cards == fresh.cards
    for a, b in zip(indexed.rules, fresh.rules, strict=True):
        assert (a.id, a.title, a.keywords, a.ignore_case, a.type, a.stack, a.pack, a.priority) == (
            b.id,
            b.title,
            b.keywords,
            b.ignore_case,
            b.type,
            b.stack,
            b.pack,
            b.priority,
        )
        assert a.causes == b.causes and [p.pattern for p in a.patterns] == [p.pattern for p in b.patterns]
    built = F.KeywordTables.of(fresh.rules)  # the lookup is made from the rules, the same either way
    again = F.KeywordTables.of(indexed.rules)
    assert (again.anchors, again.folded, again.partial) == (built.anchors, built.folded, built.partial)
    assert again.card_pattern() == built.card_pattern() and built.folded  # the (?i) card has its own table
    hits = F.CardKeywords(None, fresh.rules).hit_keywords()
    assert hits == F.CardKeywords(None, indexed.rules).hit_keywords() and hits
    assert {kw for kw, _, _ in hits} == {
        kw for v in [*built.anchors.values(), *built.folded.values()] for kw in v
    } | set(built.partial)


def test_a_changed_factory_reads_only_the_cards_that_changed(tmp_path, _private_cache, monkeypatch):
    """After one card of many changed, a fresh process takes every other card from the last reading's
    records (same size, times and inode) and reports exactly what reading every card reports: the same
    rules, rows and problem lines, duplicates decided across old and new cards alike."""
    cards = {f"c{i:02d}.md": QUOTA_CARD.replace("slurm-qos-gres", f"card-{i}") for i in range(20)}
    cards["c03.md"] = cards["c03.md"].replace('title = "', 'title = "ünïcode \\"quoted\\" ')
    root = write_factory(tmp_path / "factory", {**cards, **BROKEN})
    F.load_factory(root)  # the first reading writes the index
    reads: list[str] = []
    real = F._read_card

    def counting(path, rel):
        reads.append(rel)
        return real(path, rel)

    monkeypatch.setattr(F, "_read_card", counting)
    assert F.load_factory(root).rules and reads == []  # the index is current: no card read
    edited = root / "c05.md"
    stamp = edited.stat()
    edited.write_text(cards["c05.md"].replace("QOSMaxGRESPerUser", "QOSMaxJobsPerUser"))
    os.utime(edited, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))
    (root / "c11.md").unlink()
    write_factory(root, {"b-dup.md": cards["c07.md"], "nofront.md": QUOTA_CARD.replace("card-", "x")})
    (root / "twosigs.md").write_text("+++\nnot toml\n+++\n")  # a card that parsed no longer does
    changed = F.load_factory(root)
    assert sorted(reads) == ["b-dup.md", "c05.md", "nofront.md", "twosigs.md"]
    fresh = F.read_factory(root)
    assert changed.problems == fresh.problems and changed.rows == fresh.rows
    assert any("c07.md: skipped: duplicate id 'card-7' (also in b-dup.md)" in p for p in changed.problems)
    assert [r.keywords for r in changed.rules] == [r.keywords for r in fresh.rules]
    assert any(r.keywords[0].startswith("QOSMaxJobsPerUser") for r in changed.rules)
    reads.clear()
    again = F.load_factory(root)  # and that reading was indexed in turn
    assert reads == [] and again.problems == fresh.problems and again.rows == fresh.rows
    index = F.index_path(root)
    assert index is not None
    copied = index.read_bytes()  # the unchanged cards' lines were copied from the last index as they were
    index.unlink()
    F.load_factory(root)  # every card read and encoded
    assert index.read_bytes() == copied and copied.count(b"\n") == len(F.walk(root).files) + 1


def test_a_record_line_is_the_json_of_the_record(tmp_path, _private_cache):
    rows = [
        ["a/b.md", "id", 'ünï "q" \\ \t \u2028 \ud800', ["x\\d+"], "harness", None, None, [], [], ["kw"], True, None]
    ]
    for row in rows + [["c.md"], ["c.md", "id"]]:
        line = F._row_encoder()(row)
        assert line == json.dumps(row, separators=(",", ":")) and json.loads(line) == row
    root = write_factory(tmp_path / "factory", {"a.md": QUOTA_CARD})
    os.rename(root / "a.md", os.fsdecode(bytes(root / "a") + b"\xff\xc3\xa9.md"))  # a name not UTF-8
    first = F.load_factory(root)  # read, and indexed
    again = F.load_factory(root)  # from the index
    assert again.records is None and first.records is not None  # the second from the index
    assert again.rows == first.rows and again.rows[0][0] == "a\udcff\xe9.md"
