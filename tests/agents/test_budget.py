"""`--max-chars` / `max_chars`: real diagnoses of the labelled corpus, fitted into budgets of every size."""

from __future__ import annotations

import json

import jsonschema
import pytest

from pytest_faildiag.agents.budget import compact_size, cut_text, fit_report
from pytest_faildiag.engine import diagnose, report_dict
from tests.agents.conftest import ROOT, cli
from tests.conftest import corpus_cases

CASES = corpus_cases()


def _report(case) -> dict:
    ev = [str(p) for p in sorted(case.iterdir()) if p.name in {"stdout.txt", "stderr.txt"}]
    return report_dict(diagnose(ev, exit_code=int((case / "rc.txt").read_text().strip())))


def _evidence(report: dict) -> list[tuple[str, str]]:
    return [(c["id"], e["kind"]) for c in report["root_causes"] for e in c["evidence"]]


@pytest.mark.parametrize("case", CASES[:8], ids=[c.name for c in CASES[:8]])
def test_the_rest_goes_first_and_the_core_last(case, report_schema):
    full = _report(case)
    size = compact_size(full)
    for budget in (size, size * 3 // 4, size // 2, size // 4, 1500, 900, 1):
        fitted = fit_report(full, budget)
        jsonschema.validate(fitted, report_schema)  # still a report.json, whatever was dropped
        ff, whole_ff = fitted["profile"]["first_failure"], full["profile"]["first_failure"]
        if whole_ff:  # kept: the same place, its excerpt at most shortened
            assert (ff["source"], ff["line"]) == (whole_ff["source"], whole_ff["line"])
            assert whole_ff["excerpt"].startswith(ff["excerpt"].removesuffix("…"))
        ids = [c["id"] for c in fitted["root_causes"]]
        assert ids == [c["id"] for c in full["root_causes"]][: len(ids)]  # the ranking, cut from the bottom
        if full["root_causes"]:
            assert ids, "the top cause is never dropped"
        if budget >= size:
            assert fitted is full
            continue
        assert fitted["budget"]["fits"] == (compact_size(fitted) <= budget)
        kept = _evidence(fitted)
        hypotheses_left = any(kind == "hypothesis" for _, kind in kept)
        direct_full = sum(kind == "direct" for _, kind in _evidence(full) if _ in ids)
        if sum(kind == "direct" for _, kind in kept) < direct_full:
            assert not hypotheses_left, "direct evidence was dropped while a hypothesis stayed"
        if len(ids) < len(full["root_causes"]):
            assert not fitted["next_actions"] and all(not c["validation_checks"] for c in fitted["root_causes"])


def test_a_budget_that_fits_the_core_keeps_every_cause_and_every_direct_evidence_line_intact():
    full = _report(next(c for c in CASES if c.name == "shape_mismatch"))
    causes = [
        {
            "id": c["id"],
            "category": c["category"],
            "confidence": c["confidence"],
            "summary": c["summary"],
            "evidence": [e for e in c["evidence"] if e["kind"] == "direct"],
            "validation_checks": [],
            "fix_hints": [],
        }
        for c in full["root_causes"]
    ]
    core = {k: full[k] for k in ("schema", "summary", "profile", "artifacts")} | {
        "next_actions": [],
        "root_causes": causes,
    }
    assert compact_size(core) < compact_size(full) - 1000  # there is a lot of "rest" to drop
    fitted = fit_report(full, compact_size(core) + 400)  # + the budget note
    assert fitted["budget"]["fits"]
    same = ("id", "category", "confidence", "summary", "evidence", "validation_checks")
    assert [{k: c[k] for k in same} for c in fitted["root_causes"]] == [{k: c[k] for k in same} for c in causes]
    assert len(fitted["root_causes"][0]["fix_hints"]) <= 1  # the top cause's first hint may stay
    assert fitted["profile"]["first_failure"] == full["profile"]["first_failure"]
    assert fitted["budget"]["dropped"]["hypotheses"] == sum(
        e["kind"] == "hypothesis" for c in full["root_causes"] for e in c["evidence"]
    )


@pytest.mark.parametrize("fmt", ["json", "text", "md"])
def test_faildiag_diagnose_prints_within_max_chars_and_keeps_the_snapshot_whole(fmt, tmp_path):
    log = ROOT / "tests" / "data" / "corpus" / "gpu" / "shape_mismatch" / "stderr.txt"
    whole = cli("diagnose", str(log), "--format", fmt, "--out", str(tmp_path / "a"), cwd=tmp_path)
    limit = 1500 if fmt == "json" else 900  # a report.json's required keys alone take ~1200 characters
    limited = cli(
        "diagnose", str(log), "--format", fmt, "--out", str(tmp_path / "b"), "--max-chars", str(limit), cwd=tmp_path
    )
    assert whole.returncode == 0 and limited.returncode == 0, limited.stderr
    text = limited.stdout.decode()
    assert len(text) <= limit < len(whole.stdout.decode())
    assert "mat1 and mat2 shapes cannot be multiplied" in text  # the first failure survives
    if fmt == "json":
        assert json.loads(text)["root_causes"][0]["id"] == "model.shape_mismatch"
    on_disk = [json.loads((tmp_path / d / "report.json").read_text()) for d in ("a", "b")]
    assert on_disk[0]["root_causes"] == on_disk[1]["root_causes"] and "budget" not in on_disk[1]


def test_a_large_budget_changes_nothing_and_a_bad_one_is_one_line(tmp_path):
    log = ROOT / "tests" / "data" / "corpus" / "gpu" / "shape_mismatch" / "stderr.txt"
    whole = cli("diagnose", str(log), "--out", str(tmp_path / "a"), cwd=tmp_path)
    roomy = cli("diagnose", str(log), "--out", str(tmp_path / "a"), "--max-chars", "100000", cwd=tmp_path)
    assert roomy.stdout == whole.stdout
    for bad in ("0", "-5", "lots"):
        res = cli("diagnose", str(log), "--max-chars", bad, "--out", str(tmp_path / "c"), cwd=tmp_path)
        assert res.returncode == 2 and res.stdout == b""
        assert res.stderr.decode().count("\n") == 1 and "--max-chars" in res.stderr.decode()


def test_cut_text_stays_within_the_limit_and_says_so():
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(100))
    for limit in (1, 10, 60, 200, 1000):
        cut = cut_text(text, limit)
        assert len(cut) <= limit
        if limit >= 200:
            assert cut.endswith(f"cut to {limit} characters\n") and cut.startswith("line 0 ")
    assert cut_text("short", 100) == "short"
