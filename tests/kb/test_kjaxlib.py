"""The JAX ecosystem libraries' own error families (75-jax-ecosystem-catalogue.toml): Flax's flax.errors
catalogue and flax.serialization's restore checks, Haiku's transform contract, Chex's assertions, Optax's chain
and partition states, Orbax's step and args checks, jaxtyping's type checks and Equinox's error_if and API
checks. Each family is shown on the output of a real program run on the CPU (tests/data/kb/kjaxlib/README.md:
the programs and the library versions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import check_pack_rules, fired, ids_in_other_packs, pack_rules, rules_dir

PACK = "75-jax-ecosystem-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kjaxlib"

# log name -> (rule that reads it, the category it must rank first, the stage when the rule sets one)
CASES: dict[str, tuple[str, str, str | None]] = {
    "flax_reserved": ("flax.eco.module_contract", "model", None),
    "flax_setup_assign": ("flax.eco.module_contract", "model", None),
    "flax_init_on_class": ("flax.eco.module_contract", "model", None),
    "flax_post_init": ("flax.eco.module_contract", "model", None),
    "flax_descriptor": ("flax.eco.module_contract", "model", None),
    "flax_transform_target": ("flax.eco.module_contract", "model", None),
    "flax_unbind": ("flax.eco.module_contract", "model", None),
    "flax_apply_method": ("flax.eco.module_contract", "model", None),
    "flax_scope_variable": ("flax.eco.variable_not_found", "model", None),
    "flax_restore_keys": ("flax.eco.restore_structure", "checkpoint", "checkpoint"),
    "flax_restore_opt_state": ("flax.eco.restore_structure", "checkpoint", "checkpoint"),
    "flax_outdated_ckpt": ("jaxeco.checkpoint_step_exists", "config", "checkpoint"),
    "orbax_step_exists": ("jaxeco.checkpoint_step_exists", "config", "checkpoint"),
    "orbax_args_composite": ("orbax.eco.args_api", "model", "checkpoint"),
    "haiku_get_param": ("haiku.eco.transform_contract", "model", None),
    "haiku_outside": ("haiku.eco.transform_contract", "model", None),
    "haiku_jit_in_transform": ("haiku.eco.transform_contract", "model", None),
    "haiku_super_ctor": ("haiku.eco.transform_contract", "model", None),
    "haiku_module_name": ("haiku.eco.transform_contract", "model", None),
    "haiku_apply_rng": ("haiku.eco.apply_rng_removed", "environment", None),
    "haiku_missing_rng": ("haiku.eco.missing_rng", "model", None),
    "haiku_param_missing": ("haiku.eco.param_missing", "model", None),
    "haiku_param_shape": ("haiku.eco.param_shape", "checkpoint", None),
    "chex_shape": ("chex.eco.shape_assertion", "model", None),
    "chex_rank": ("chex.eco.shape_assertion", "model", None),
    "chex_tree_finite": ("chex.eco.non_finite", "model", None),
    "chex_trees_close": ("chex.eco.trees_differ", "model", None),
    "chex_max_traces": ("chex.eco.max_traces", "model", "compile"),
    "optax_chain_state": ("optax.eco.chain_state_mismatch", "model", None),
    "optax_multi_transform": ("optax.eco.partition_labels", "config", None),
    "jaxtyping_check": ("jaxtyping.eco.type_check", "model", None),
    "eqx_error_if": ("equinox.eco.error_if", "model", None),
    "eqx_no_arrays": ("equinox.eco.error_if", "model", None),
    "eqx_grad_keyword": ("equinox.eco.api_contract", "model", None),
    "eqx_field_uninit": ("equinox.eco.api_contract", "model", None),
}


def test_the_pack_loads_and_its_ids_are_its_own():
    rules = pack_rules(PACK)
    ids = {r.id for r in rules}
    assert len(ids) >= 20
    assert not ids & ids_in_other_packs(rules_dir() / PACK)
    check_pack_rules(rules)


def test_every_real_output_is_tested():
    assert {p.stem for p in DATA.glob("*.log")} == set(CASES) | {"eqx_error_if_jaxjit"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_output_is_read_by_its_family(name):
    rule, category, stage = CASES[name]
    diag = diagnose([str(DATA / f"{name}.log")], exit_code=1)
    causes = [(c.rule, c.category) for c in diag.root_causes]
    assert fired(diag, rule), causes
    assert diag.profile.type == "runtime_error", (diag.profile.type, causes)
    assert diag.profile.stack == "jax", diag.profile.stack
    top = diag.root_causes[0]
    assert (top.rule, top.category) == (rule, category), causes
    assert top.fix_hints
    if stage:
        assert diag.profile.stage == stage, diag.profile.stage


@pytest.mark.parametrize("name", ["flax_reserved", "haiku_outside", "optax_chain_state", "orbax_step_exists"])
def test_the_signature_alone_carries_it(name):
    """Without an exit status (a JSONL scorer's view) the message still gives the family and its home."""
    rule, category, _ = CASES[name]
    diag = diagnose([str(DATA / f"{name}.log")])
    assert fired(diag, rule)
    assert diag.root_causes[0].category == category


def test_equinox_check_under_jax_jit_is_the_programs():
    """eqx.error_if under jax.jit (not filter_jit) surfaces as _EquinoxRuntimeError inside XLA's callback error:
    the family still reads it and the program's code is the home."""
    diag = diagnose([str(DATA / "eqx_error_if_jaxjit.log")], exit_code=1)
    assert fired(diag, "equinox.eco.error_if")
    assert diag.root_causes[0].category == "model"


def test_the_step_exists_family_names_the_step_and_directory():
    diag = diagnose([str(DATA / "flax_outdated_ckpt.log")], exit_code=1)
    top = diag.root_causes[0]
    assert "step 3" in top.summary and "/home/user/ckpt/checkpoint_3" in top.summary, top.summary
    others = {c.category for c in diag.root_causes if c.rule == "jaxeco.checkpoint_step_exists"}
    assert {"config", "model", "harness"} <= others


def test_a_haiku_parameter_missing_outranks_the_chained_missing_rng():
    """haiku raises "Unable to retrieve parameter" from the MissingRNGError of re-initialising at apply time: the
    missing parameter is the failure, the key only how it was found (suppressed_by)."""
    diag = diagnose([str(DATA / "haiku_param_missing.log")], exit_code=1)
    assert fired(diag, "haiku.eco.param_missing")
    assert not fired(diag, "haiku.eco.missing_rng")
    cats = [c.category for c in diag.root_causes if c.rule == "haiku.eco.param_missing"]
    assert {"model", "checkpoint"} <= set(cats)


def test_a_chex_message_logged_without_its_traceback():
    """The family keys on Chex's own words, so a line a training loop logged (absl) is read the same way."""
    text = (
        "I1202 10:00:00.000000 140 train.py:88] step 12\n"
        "E1202 10:00:01.000000 140 train.py:91] AssertionError: [Chex] Assertion assert_shape failed: "
        "Error in shape compatibility check: input 0 has shape (32, 128) but expected (32, 256).\n"
    )
    diag = diagnose(texts={"train.log": text}, exit_code=1)
    assert fired(diag, "chex.eco.shape_assertion")
    assert diag.root_causes[0].category == "model"
