"""Rule packs as data: validation of packs, third-party packs through the pluggy hook, replacement by id."""

from __future__ import annotations

import types
import warnings

import pluggy
import pytest

from pytest_faildiag import hookspecs
from pytest_faildiag.engine import diagnose
from pytest_faildiag.rules import RuleError, _builtin_packs, build_ruleset, load_ruleset, parse_pack

PACK = """
[[rule]]
id = "acme.flux_capacitor"
title = "flux capacitor overheated"
keywords = ["FluxCapacitorError"]
patterns = ['FluxCapacitorError: (?P<temp>\\d+)K']
type = "backend"
stage = "runtime"
priority = 90

[[rule.causes]]
id = "hardware.flux"
category = "hardware"
confidence = 0.8
summary = "the flux capacitor ran at {temp}K"
fix_hints = ["let it cool down"]
"""


def test_every_builtin_pack_loads_and_every_rule_has_causes_or_a_role():
    rs = load_ruleset()
    assert len(rs.rules) > 50
    for r in rs.rules:
        assert r.causes or r.noise or r.stage, r.id


def test_each_builtin_rule_id_is_defined_by_one_pack():
    """A later pack replaces a rule of the same id (so a team's or a plugin's pack can override a built-in one):
    two built-in packs defining one id would silently drop the earlier rule (two helpers' passes merged, say)."""
    owners: dict[str, list[str]] = {}
    for name, text in _builtin_packs():
        for rule in parse_pack(text, name)[0]:
            owners.setdefault(rule.id, []).append(name)
    assert len(owners) > 50
    assert {i: packs for i, packs in owners.items() if len(packs) > 1} == {}


def test_every_rule_a_context_names_as_its_lead_is_a_builtin_rule():
    # a [[context]]'s lead_rules say which signatures its fact is about: a renamed rule would silently end the fact
    rs = load_ruleset()
    ids = {r.id for r in rs.rules}
    named = {(c.fact, r) for c in rs.reasoning.contexts for r in c.lead_rules}
    assert named, "the distributed pack's collective wait names its rules"
    assert {(fact, r) for fact, r in named if r not in ids} == set()


def test_a_pack_with_an_unknown_category_is_rejected_with_the_rule_named():
    bad = PACK.replace('category = "hardware"', 'category = "gremlins"')
    with pytest.raises(RuleError, match="acme.flux_capacitor"):
        parse_pack(bad, "bad.toml")


def test_a_cause_whose_header_was_lost_is_an_unknown_key_of_its_rule():
    """TOML reads a cause's fields left under the rule (its ``[[rule.causes]]`` line deleted in an edit) as the
    rule's own keys: the pack must say so, not load a rule without that cause."""
    lost = PACK.replace('[[rule.causes]]\nid = "hardware.flux"\n', "")
    with pytest.raises(RuleError, match=r"acme\.flux_capacitor: unknown key 'category', 'confidence'"):
        parse_pack(lost, "lost.toml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = build_ruleset([("lost.toml", lost)])
    assert any("lost.toml" in str(w.message) and "unknown key" in str(w.message) for w in caught)
    assert rs.by_id("acme.flux_capacitor") is None


def test_a_mistyped_key_of_a_cause_is_named():
    with pytest.raises(RuleError, match="unknown key 'fix_hint'"):
        parse_pack(PACK.replace("fix_hints =", "fix_hint ="), "typo.toml")


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('[[context]]\nfact = "cue:acme"\nwhy = "w"\npattern = "acme"\nfactor = { model = 2.0 }\n', "context cue:acme"),
        ('[[exception]]\nnames = ["AcmeError"]\nfamilly = "runtime"\n', "exception ['AcmeError']"),
        ('[[symptom]]\nid = "acme"\ntitle = "t"\ncause = []\n', "symptom acme"),
        (
            '[[symptom]]\nid = "acme"\ntitle = "t"\ncauses = [{ category = "model", priors = 0.5 }]\n',
            "symptom acme: a cause",
        ),
        ('[[frame_stage]]\nfunc = "evaluate"\nstages = "evaluation"\n', "frame_stage"),
    ],
)
def test_a_reasoning_table_with_an_unknown_key_fails_its_pack(table, named):
    """A context whose ``factors`` is misspelt would be a fact that weighs nothing, a symptom without its
    ``causes`` a family with no hypothesis: the pack's reasoning tables are skipped with the table and the key
    named (its rules, checked apart, stay)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = build_ruleset([("acme.toml", PACK + table)])
    said = [str(w.message) for w in caught if "acme.toml" in str(w.message)]
    assert said and "reasoning tables of acme.toml skipped" in said[0], said
    assert named in said[0] and "unknown key" in said[0], said
    assert "acme" not in rs.reasoning.symptoms and "AcmeError" not in rs.reasoning.exceptions
    assert not [c for c in rs.reasoning.contexts if c.fact == "cue:acme"]
    assert rs.by_id("acme.flux_capacitor") is not None


def test_a_malformed_pack_is_skipped_with_a_warning_not_an_error():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = build_ruleset([("broken.toml", "[[rule]\nid = "), ("good.toml", PACK)])
    assert any("broken.toml" in str(w.message) for w in caught)
    assert rs.by_id("acme.flux_capacitor") is not None


def test_a_third_party_pack_arrives_through_the_pluggy_hook():
    plugin = types.SimpleNamespace(pytest_faildiag_rule_packs=hookspecs.hookimpl(lambda: [("acme.toml", PACK)]))
    pm = pluggy.PluginManager("faildiag")
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name="acme")
    packs = hookspecs.collect_rule_packs(pm.hook)
    assert packs == [("acme.toml", PACK)]
    d = diagnose(texts={"stderr": "acme.FluxCapacitorError: 1210K\n"}, exit_code=1, ruleset=load_ruleset(packs))
    assert d.root_causes[0].id == "hardware.flux"
    assert d.root_causes[0].summary == "the flux capacitor ran at 1210K"
    assert d.profile.type == "backend"


def test_a_later_pack_replaces_a_builtin_rule_with_the_same_id():
    override = PACK.replace("acme.flux_capacitor", "torch.device_mismatch").replace(
        "FluxCapacitorError", "Expected all tensors to be on the same device"
    )
    rs = load_ruleset([("override.toml", override)])
    assert rs.by_id("torch.device_mismatch").causes[0].id == "hardware.flux"


def test_a_hook_that_raises_becomes_a_warning():
    def boom():
        raise RuntimeError("plugin bug")

    plugin = types.SimpleNamespace(pytest_faildiag_rule_packs=hookspecs.hookimpl(boom))
    pm = pluggy.PluginManager("faildiag")
    pm.add_hookspecs(hookspecs)
    pm.register(plugin)
    with pytest.warns(UserWarning, match="plugin bug"):
        assert hookspecs.collect_rule_packs(pm.hook) == []


def test_a_third_party_collector_adds_evidence_through_the_pluggy_hook():
    def collect(context):
        assert context["exit_code"] == 1
        return {"npu-smi.txt": "EZ9999: Inner Error! device 3 health status: Alarm\n"}

    plugin = types.SimpleNamespace(pytest_faildiag_collect_evidence=hookspecs.hookimpl(collect))
    pm = pluggy.PluginManager("faildiag")
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name="vendor")
    d = diagnose(texts={"stderr": "training stopped\n"}, exit_code=1, hook=pm.hook)
    assert "npu-smi.txt" in d.sources


def test_a_placeholder_whose_group_did_not_match_renders_as_nothing(tmp_path):
    """`cat` says "No such file or directory" without Python's `'path'` quoting, so py.file_not_found's
    second pattern (no `path` group) fires: its summary must not show a stray placeholder."""
    import subprocess

    missing = tmp_path / "no-such-dir" / "train.yaml"
    proc = subprocess.run(["cat", str(missing)], capture_output=True, text=True)
    assert proc.returncode != 0 and "No such file or directory" in proc.stderr
    d = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    summaries = [c.summary for c in d.root_causes]
    assert any(c.rule == "py.file_not_found" for c in d.root_causes), summaries
    assert all("?" not in s and not s.endswith(":") for s in summaries), summaries


def test_a_pack_says_which_stack_a_package_runs_on_and_only_a_stack_of_the_contract():
    """``[stack_packages]`` is data: a third-party pack can teach that its framework's package is, e.g., JAX;
    a stack outside the contract's vocabulary is refused with the package named."""
    log = 'Traceback (most recent call last):\n  File "/v/site-packages/acmejax/core.py", line 3, in f\n    g()\nTypeError: bad\n'
    plain = diagnose(texts={"stderr.txt": log}, exit_code=1)
    assert plain.profile.stack == "python"
    taught = build_ruleset([*_builtin_packs(), ("acme.toml", '[stack_packages]\nacmejax = "jax"\n')])
    assert diagnose(texts={"stderr.txt": log}, exit_code=1, ruleset=taught).profile.stack == "jax"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_ruleset([("bad.toml", '[stack_packages]\nacmejax = "keras-on-k8s"\n')])
    assert any("acmejax" in str(w.message) for w in caught)
