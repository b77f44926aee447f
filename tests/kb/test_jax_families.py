"""JAX's own message families, third round (the kjax2 block of 74-jax-catalogue.toml).

Each family is a message jax 0.10.2 raises from its own sources (jax/_src) that no earlier rule read: arrays of
another rank, a non-scalar predicate, a transformation a function does not define (custom_vjp under jvp, grad
through a callback or a while_loop), jit arguments that cannot be traced or static/donated lists that do not
fit, typed PRNG keys used as numbers, a callback's result type, sharding specs and sharding usage, 32-bit
integer overflow without x64, strict dtype promotion, AOT argument types, the pytree registry's errors,
checkify and Pallas on the CPU, vmap axis specs. Each has a real log under tests/data/kb/jax_families,
produced on a CPU machine with jax 0.10.2 (the code beside each log in labels.json): its rule fires and the
category where the cause usually lives is among the first three. Two logs show families an earlier pack already
reads, kept as the harvest's evidence: an XLA status word (RESOURCE_EXHAUSTED on the CPU, jax.oom) and jax's
jaxlib release check (jax 0.10.2 beside jaxlib 0.4.36, jax.jaxlib_version). When jax is importable the
failures are also produced live.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_text_alone, fired, ids_in_other_packs, pack_rules, run_jax_on_cpu, top3

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "jax_families"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "74-jax-catalogue.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
BLOCK = "jax.cat3."


def _block_ids() -> set[str]:
    return {r["id"] for r in tomllib.loads(PACK.read_text())["rule"] if r["id"].startswith(BLOCK)}


def test_the_block_loads_without_warnings_and_replaces_no_rule():
    loaded = {r.id for r in pack_rules(PACK.name)}
    assert _block_ids() and _block_ids() <= loaded
    assert not _block_ids() & ids_in_other_packs(PACK)


def test_every_rule_of_the_block_has_a_real_log():
    assert _block_ids() == {lab["rule"] for lab in LABELS if lab["rule"].startswith(BLOCK)}


def test_the_logs_are_redacted():
    for log in DATA.glob("*.log"):
        text = log.read_text()
        assert "/tmp/" not in text and "/work/" not in text, log.name


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_reads_the_family_in_the_real_log(label):
    diag = diagnose([str(DATA / label["log"])], exit_code=label["exit_code"])
    rules = [c.rule for c in diag.root_causes]
    assert diag.profile.type == label["type"], (diag.profile.type, rules)
    assert fired(diag, label["rule"]), rules
    assert label["category"] in top3(diag), list(zip(rules, [c.category for c in diag.root_causes], strict=True))
    cause = next(c for c in diag.root_causes if c.rule == label["rule"] and c.category == label["category"])
    assert cause.fix_hints


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_reads_the_family_from_the_text_alone(label):
    """A scorer may hand over the log only (no exit status): the signature must carry it."""
    check_text_alone(DATA, label)


def test_a_family_with_several_causes_names_the_competing_ones():
    """The sharding-spec family leads with the layout (config) and keeps the code's specs and a ragged
    last batch as hypotheses; 32-bit overflow leads with the x64 setting and keeps the value's origin."""
    diag = diagnose([str(DATA / "spec_indivisible.log")], exit_code=1)
    mine = [c for c in diag.root_causes if c.rule == "jax.cat3.sharding_spec"]
    assert [c.category for c in mine] == ["config", "model", "dataset"]
    assert "6" in mine[0].summary and "4" in mine[0].summary
    diag = diagnose([str(DATA / "x64_int_overflow.log")], exit_code=1)
    mine = [c for c in diag.root_causes if c.rule == "jax.cat3.int32_overflow"]
    assert [c.category for c in mine] == ["config", "model"]
    assert "1099511627776" in mine[0].summary


def test_numpys_own_index_error_is_not_read_as_jax():
    """NumPy spells its message in lower case ("too many indices for array", numpy 2.4 output kept beside
    the JAX logs); the JAX family must not claim a NumPy failure."""
    log = DATA / "numpy_too_many_indices.log"
    assert "too many indices for array" in log.read_text()
    diag = diagnose([str(log)], exit_code=1)
    assert not fired(diag, "jax.cat3.rank_mismatch"), [c.rule for c in diag.root_causes]
    assert diag.profile.stack != "jax"


@pytest.mark.parametrize("log", ["pred_cond.log", "jit_str_argument.log", "x64_int_overflow.log"])
def test_it_reads_the_family_produced_live_when_jax_is_installed(tmp_path, log):
    pytest.importorskip("jax")
    label = next(lab for lab in LABELS if lab["log"] == log)
    diag = run_jax_on_cpu(tmp_path, label["code"])
    assert fired(diag, label["rule"]), [c.rule for c in diag.root_causes]
    assert label["category"] in top3(diag)
