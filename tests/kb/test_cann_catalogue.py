"""The CANN catalogue pack (55-cann-catalogue.toml): it loads cleanly, keeps to its own rule ids, and turns
real Ascend failures from public threads into the type and cause category the CANN error catalogues
give for their codes (ACL runtime return codes, aclnn status codes, HCCL/HCCP E-codes, operator E-codes)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, load_ruleset, parse_pack

PACK = "55-cann-catalogue.toml"
PACK_PATH = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "cann_catalogue"
LOGS = sorted(p for p in DATA.glob("*.log") if p.with_suffix(".json").is_file())


def test_it_parses_the_pack_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rules, _ = parse_pack(PACK_PATH.read_text(encoding="utf-8"), PACK)
    assert len(rules) >= 40
    assert all(r.id.startswith("cann.") for r in rules)


def test_it_is_part_of_the_loaded_ruleset():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rs = load_ruleset()
    ours = [r for r in rs.rules if r.pack == PACK]
    assert ours, "the pack did not load"
    assert len({r.id for r in ours}) == len(ours), "duplicate rule ids inside the pack"


def test_it_replaces_no_rule_of_another_pack():
    others = {r.id for name, text in _builtin_packs() if name != PACK for r in parse_pack(text, name)[0]}
    ours = {r.id for r in parse_pack(PACK_PATH.read_text(encoding="utf-8"), PACK)[0]}
    assert not ours & others


def test_it_keeps_specific_codes_and_families_in_their_priority_bands():
    rules, _ = parse_pack(PACK_PATH.read_text(encoding="utf-8"), PACK)
    for r in rules:
        if r.type == "oom" or r.type == "crash":
            assert 60 <= r.priority <= 92, r.id
        else:
            assert 60 <= r.priority <= 79, r.id
        assert r.keywords and all(len(k) >= 6 for k in r.keywords), r.id


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_it_diagnoses_a_real_log_by_its_catalogue_code(log: Path):
    label = json.loads(log.with_suffix(".json").read_text())
    assert label["source_url"].startswith("https://github.com/")
    d = diagnose([str(log)])
    cats = [c.category for c in d.root_causes]
    assert d.profile.type == label["type"], (d.profile.type, cats)
    assert label["category"] in cats[:3], cats
    top = d.root_causes[0]
    assert top.fix_hints


def test_it_holds_enough_real_logs():
    assert 5 <= len(LOGS) <= 10


def test_it_reads_the_catalogue_example_of_an_invalid_hccl_environment_variable():
    # the EI0001 example printed in CANN's HCCL user guide ("Environment variable configuration error")
    text = (
        "[ERROR] 2024-04-20-10:42:34 (PID:2090824, Device:0, RankID:0) ERR02200 DIST call hccl api failed.\n"
        "EI0001: 2024-04-20-10:42:34.020.677 Environment variable [HCCL_EXEC_TIMEOUT] is invalid. Reason: it "
        "should be a number greater than or equal to 1s and less than or equal to 17340s.\n"
    )
    d = diagnose(texts={"train.log": text})
    assert d.root_causes[0].category == "config"
    assert "HCCL_EXEC_TIMEOUT" in d.root_causes[0].summary
