"""The honest protocol's split: old ids never move, a batch's non-dev logs can go to ``calib``."""

from __future__ import annotations

import json

from bench.split_corpus import MANIFEST, assign, promote


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


def test_promoting_calib_moves_only_calib_ids_and_a_share_per_family() -> None:
    manifest = {f"jax/d{i}": "dev" for i in range(10)} | {f"jax/c{i}": "calib" for i in range(9)}
    manifest |= {f"pta/c{i}": "calib" for i in range(3)} | {f"pta/t{i}": "train" for i in range(4)}
    moved = promote(manifest, 0.5)
    assert all(manifest[i] == "calib" for i in moved)
    assert sum(i.startswith("jax/") for i in moved) == 5
    assert sum(i.startswith("pta/") for i in moved) == 2
    assert moved == promote(dict(reversed(manifest.items())), 0.5)  # by hash, not by order or content


def test_the_labelling_study_reads_train_logs_only_and_scores_real_answers() -> None:
    """``bench/label_agreement.py`` scores two blind relabellings: every log they name is a train log (dev and
    calib stay frozen), every answer is a contract category, and the score counts the answers that equal the
    label (a relabelling that copied the labels would score 80 of 80)."""
    from bench.label_agreement import HERE, STUDIES, score, truth_of
    from pytest_faildiag.model import CATEGORIES

    split = json.loads(MANIFEST.read_text())["split"]
    for study in STUDIES:
        answers = json.loads((HERE / "label_study" / f"{study}.json").read_text(encoding="utf-8"))
        assert len(answers) == 80 and all(split[a["log"]] == "train" for a in answers)
        assert all(a["category"] in CATEGORIES for a in answers)
        first, two, *_ = score(answers)
        assert first == sum(a["category"] == truth_of(a["log"]) for a in answers) < two <= 80
        copied = [dict(a, category=truth_of(a["log"])) for a in answers]
        assert score(copied)[0] == 80
