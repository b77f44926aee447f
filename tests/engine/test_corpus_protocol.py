"""The honest protocol's split: old ids never move, a batch's non-dev logs can go to ``calib``."""

from __future__ import annotations

import json

from bench.split_corpus import MANIFEST, assign


def test_existing_ids_keep_their_split_and_new_rest_goes_to_calib() -> None:
    families = {"jax": [f"jax/old{i}" for i in range(20)] + [f"jax/new{i}" for i in range(20)]}
    old = assign({"jax": families["jax"][:20]}, {})
    out = assign(families, old, rest="calib")
    assert all(out[i] == old[i] for i in old)
    new = {i: out[i] for i in out if i not in old}
    assert set(new.values()) == {"dev", "calib"}
    assert "train" not in new.values()
    dev = sum(v == "dev" for v in out.values())
    assert dev >= 0.45 * 40 - 1  # the family's dev share is topped up, not diluted by the batch


def test_the_frozen_manifest_only_knows_three_splits() -> None:
    split = json.loads(MANIFEST.read_text())["split"]
    assert set(split.values()) <= {"train", "dev", "calib"}
    assert sum(v == "dev" for v in split.values()) >= 100
