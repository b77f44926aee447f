"""The ranking's fitted layer (engine/rerank.py): what it reads, how it re-weighs, and that it is data."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.rerank import candidates, features, held, rerank, shares
from pytest_faildiag.model import RootCause
from pytest_faildiag.rules import _builtin_packs, build_ruleset, load_ruleset

THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _by_rule(c: RootCause) -> bool:
    """What ``reason.pointed_at`` says of a cause no fact lifted: a rule's own is pointed at, a guess is not."""
    return not (c.rule or "").startswith("differential:")


def _causes(lead: str = "differential:runtime") -> list[RootCause]:
    """A table whose leading home comes from ``lead`` (the differential's by default: what the layer re-weighs)."""
    return [
        RootCause("a", "environment", 0.6, "installed versions", rule=lead),
        RootCause("b", "library", 0.4, "the library's bug", rule="differential:runtime"),
        RootCause("c", "environment", 0.3, "another install", rule=lead),
        RootCause("d", "model", 0.2, "the program's code", rule="differential:runtime"),
    ]


def test_the_table_holds_each_category_once_with_its_best_cause_and_the_facts_crossed() -> None:
    causes = _causes("py.import_error")
    table = features(causes, ["raiser:library_only"], "runtime_error", "python", "builtins.ImportError", _by_rule)
    assert [cat for cat, _ in table] == ["environment", "library", "model"]
    env = dict(table)["environment"]
    assert env["log_confidence"] == pytest.approx(math.log(0.6))
    assert env["place0"] == 1.0 and "place1" not in env
    lib = dict(table)["library"]
    # the facts are crossed with each category; the rule that leads is the best cause's of the table
    assert lib["library|raiser:library_only"] == 1.0
    assert lib["library|exc=ImportError"] == 1.0
    assert lib["library|lead=py.import_error"] == 1.0 and lib["library|lead_family=py"] == 1.0
    assert lib["library|source=differential"] == 1.0 and env["environment|source=rule"] == 1.0
    assert env["pointed"] == 1.0 and "pointed" not in lib
    assert held(table)  # a rule states the leading home


def test_without_weights_or_with_one_home_nothing_moves() -> None:
    causes = _causes()
    before = [c.confidence for c in causes]
    rerank(causes, features(causes, [], "runtime_error", "python", None), {})
    assert [c.confidence for c in causes] == before
    one = [RootCause("a", "environment", 0.6, "x", rule="r")]
    rerank(one, features(one, [], "runtime_error", "python", None), {"log_confidence": 1.0, "environment": 5.0})
    assert one[0].confidence == 0.6


def test_a_weight_on_a_fact_moves_its_home_first_and_the_shares_become_confidences() -> None:
    causes = _causes()
    table = features(causes, ["raiser:library_only"], "runtime_error", "python", None)
    plain = {"log_confidence": 1.0}
    assert candidates(causes)[0][0] == "environment"
    lifted = {**plain, "library|raiser:library_only": 1.5}
    share = shares(table, lifted)
    assert share["library"] > share["environment"] and sum(share.values()) == pytest.approx(1.0)
    rerank(causes, table, lifted)
    assert candidates(causes)[0][0] == "library"
    by_id = {c.id: c.confidence for c in causes}
    assert by_id["b"] == pytest.approx(share["library"])
    # a category's second cause keeps its proportion to the first (0.3 of 0.6)
    assert by_id["c"] == pytest.approx(share["environment"] / 2)
    # the same weight on a fact that does not hold moves nothing
    other = _causes()
    rerank(other, features(other, ["raiser:user"], "runtime_error", "python", None), lifted)
    assert candidates(other)[0][0] == "environment"


def test_a_home_the_evidence_points_at_is_not_re_weighed_by_counts() -> None:
    """The kb's facts keep their places: the layer weighs only the differential's guesses."""
    causes = _causes("py.import_error")
    before = [c.confidence for c in causes]
    table = features(causes, ["raiser:library_only"], "runtime_error", "python", None, _by_rule)
    rerank(causes, table, {"log_confidence": 1.0, "library|raiser:library_only": 5.0})
    assert [c.confidence for c in causes] == before


def test_the_weights_are_a_packs_data_and_a_later_pack_overrides_one() -> None:
    base = '[[rule]]\nid = "x.one"\nkeywords = ["boom"]\npatterns = ["boom"]\n'
    base += '[[rule.causes]]\nid = "x.one"\ncategory = "model"\nconfidence = 0.5\nsummary = "s"\n'
    rs = build_ruleset(
        [
            ("a.toml", base + '[ranking.weights]\n"log_confidence" = 1.0\n"library" = 0.5\n'),
            ("b.toml", '[ranking.weights]\n"library" = -0.25\n'),
        ]
    )
    assert rs.reasoning.ranking == {"log_confidence": 1.0, "library": -0.25}
    # a malformed table is reported (one line naming the pack) and skipped; the pack's rules still load
    with pytest.warns(UserWarning, match=r"c\.toml skipped: ranking\.weights must map feature names to numbers"):
        bad = build_ruleset([("c.toml", base + '[ranking.weights]\n"library" = "high"\n')])
    assert bad.reasoning.ranking == {} and [r.id for r in bad.rules] == ["x.one"]
    with pytest.warns(UserWarning, match=r"d\.toml skipped: ranking\.weights must map"):
        assert build_ruleset([("d.toml", "ranking = 3\n" + base)]).reasoning.ranking == {}
    with pytest.warns(UserWarning, match=r"e\.toml skipped"):  # any reasoning table given as a plain value
        assert build_ruleset([("e.toml", "calibration = 3\n" + base)]).reasoning.calibration == []


def test_the_built_in_packs_carry_no_weights_so_the_ranking_is_the_rules_and_the_reasoning() -> None:
    """Fitted on the public threads, the layer overrode catalogue facts on real runs or gained too little
    (bench/fit_ranking.py); the built-in ranking stays the knowledge's own."""
    assert load_ruleset().reasoning.ranking == {}


def _train_log(name: str) -> tuple[Path, str, int | None]:
    assert json.loads((THREADS / "split.json").read_text())["split"].get(name) == "train", name
    label = json.loads((THREADS / f"{name}.json").read_text())
    return THREADS / f"{name}.log", label["category"], label.get("exit_code")


def test_a_packs_weights_re_weigh_a_real_log_only_where_the_evidence_points_at_no_home() -> None:
    """A team's pack lifts library bugs: on a DeepSpeed error no rule knows (only the differential's priors lead)
    the library comes first; on a log whose home a rule states, nothing moves."""
    team = ("team.toml", '[ranking.weights]\n"log_confidence" = 1.0\n"library" = 2.0\n')
    full = build_ruleset([*_builtin_packs(), team])
    for name, moves in (
        ("distributed/deepspeed_zero3_offload_tracing_error_param_fetch_queue_fixed_upstream", True),
        ("jax/optax_017_uses_removed_jnp_devicearray", False),
    ):
        path, label, code = _train_log(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = diagnose([path], exit_code=code, factory_root=False)
            after = diagnose([path], exit_code=code, ruleset=full, factory_root=False)
        if moves:
            assert before.root_causes[0].rule.startswith("differential:")
            assert before.root_causes[0].category != "library" and after.root_causes[0].category == "library" == label
        else:
            assert not before.root_causes[0].rule.startswith("differential:")
            assert [c.category for c in after.root_causes[:3]] == [c.category for c in before.root_causes[:3]]


def test_the_fit_records_the_engines_own_table_and_writes_a_pack_the_loader_reads(tmp_path: Path) -> None:
    """bench/fit_ranking.py: the table it fits on is the one the engine computes (with the layer's input recorded,
    not applied), and the pack it writes loads back as the same weights."""
    from bench.accuracy import thread_cases
    from bench.fit_ranking import fit, record, vocabulary, write

    names = {
        "distributed/deepspeed_zero3_offload_tracing_error_param_fetch_queue_fixed_upstream",
        "jax/optax_017_uses_removed_jnp_devicearray",
    }
    cases = [c for c in thread_cases(THREADS) if c.name in names]
    records = record(cases)
    assert len(records) == 2 and all(table and label for table, label in records)
    for table, _ in records:
        assert all("log_confidence" in f and f[cat] == 1.0 for cat, f in table)
    weights = fit(records, vocabulary(records, 1), 0.01)
    assert weights["log_confidence"] > 0
    write(tmp_path / "team.toml", weights, ["a test"])
    loaded = build_ruleset([("team.toml", (tmp_path / "team.toml").read_text())]).reasoning.ranking
    assert loaded == pytest.approx(
        {k: round(v, 4) for k, v in weights.items() if abs(v) >= 0.005 or k.startswith(("log_", "place"))}
    )
