"""The 16 real GPU failures of the corpus (this project's data now) keep their diagnosis: type exact and
the labelled cause group among the first three causes (first, in fact, for all of them today)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "gpu"
CASES = sorted(p for p in CORPUS.iterdir() if (p / "label.json").is_file())


def _evidence(case: Path) -> list[str]:
    return [
        str(f)
        for f in sorted(case.iterdir())
        if f.name in {"stdout.txt", "stderr.txt", "junit.xml"} or f.suffix == ".pkl"
    ]


def test_it_holds_the_whole_gpu_corpus():
    assert len(CASES) == 16


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_it_diagnoses_the_gpu_case_as_labelled(case: Path):
    label = json.loads((case / "label.json").read_text())
    rc = (case / "rc.txt").read_text().strip()
    cmd = (case / "cmd.txt").read_text().strip()
    diag = diagnose(_evidence(case), exit_code=int(rc), command=cmd)
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == label["type"]
    assert label["cause_group"] in cats[:3], cats
    assert cats[0] == label["cause_group"], cats
