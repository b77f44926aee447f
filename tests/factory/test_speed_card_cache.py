"""The engine databases of a rule set with team cards (the built-in rules' and the cards', see
``mpscan.Patterns.parts``) are cached like the rule packs: in the user's cache folder, never in a cache
folder that lies inside the team's cards (which are never written to), whatever the log's size."""

from __future__ import annotations

import pytest

from pytest_faildiag import factory as F
from pytest_faildiag.engine.api import diagnose

from .conftest import QUOTA_CARD, QUOTA_LOG, snapshot_of, write_factory

pytest.importorskip("hyperscan")


def _log(tmp_path, mb: float):
    log = tmp_path / "train.log"
    noise = "".join(f"step {i} | loss 2.{i % 97:02d} | lr 3.0e-04 | tokens/s 51234\n" for i in range(20000))
    body = noise * max(1, int(mb * 2**20 / len(noise)))
    log.write_text(body + QUOTA_LOG, encoding="utf-8")
    return log


@pytest.mark.parametrize("mb", [0, 1])  # a small log and one past the engine's size threshold
def test_no_engine_database_is_cached_inside_the_factory(tmp_path, monkeypatch, mb):
    root = write_factory(tmp_path / "factory", {"a.md": QUOTA_CARD})
    (root / "cache").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "cache"))
    before = snapshot_of(root)
    F._MEMO.entries.clear()
    d = diagnose([str(_log(tmp_path, mb))], exit_code=1, factory_root=root)
    assert [c["id"] for c in d.extra.get("factory", [])] == ["slurm-qos-gres"]
    assert snapshot_of(root) == before
    assert not list(root.rglob("hs-*.db"))


def test_elsewhere_both_databases_are_cached(tmp_path, monkeypatch):
    root = write_factory(tmp_path / "factory", {"a.md": QUOTA_CARD})
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    F._MEMO.entries.clear()
    d = diagnose([str(_log(tmp_path, 0))], exit_code=1, factory_root=root)
    assert [c["id"] for c in d.extra.get("factory", [])] == ["slurm-qos-gres"]
    assert len(list((cache / "faildiag").glob("hs-*.db"))) == 2  # the built-in rules' and the cards'
