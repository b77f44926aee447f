"""The XLA/JAX and MindSpore catalogue pack (72-xla-mindspore-catalogue.toml).

It loads without warnings, and it diagnoses real failures: logs produced for real on a CPU machine by
jax/jaxlib 0.10.2, orbax-checkpoint 0.12.8 and the MindSpore 2.10.0 CPU wheel (the code that produced each
log is kept beside it in tests/data/kb/xla_mindspore_catalogue/labels.json). When jax is importable the
test also produces one failure live and diagnoses its stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "xla_mindspore_catalogue"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "72-xla-mindspore-catalogue.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]


def test_the_pack_loads_without_warnings():
    ids = loaded_rule_ids()
    text = PACK.read_text()
    for rule_id in (
        "xla.status.unimplemented",
        "xla.status.deadline_exceeded",
        "ms.cat.device_target_unsupported",
        "ms.cat.framework_unexpected",
        "orbax.stored_shape",
    ):
        assert f'id = "{rule_id}"' in text
        assert rule_id in ids


def test_the_pack_replaces_no_earlier_rule():
    """Its ids are new: no rule of 60-mindspore / 70-jax (or any other pack) is overridden."""
    import tomllib

    here = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}
    others = set()
    for pack in PACK.parent.glob("*.toml"):
        if pack != PACK:
            others |= {r["id"] for r in tomllib.loads(pack.read_text()).get("rule", [])}
    assert not here & others, here & others


def test_the_fixtures_cover_enough_rules():
    assert len({lab["rule"] for lab in LABELS}) >= 6


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_diagnoses_the_real_log(label):
    diag = diagnose([str(DATA / label["log"])], exit_code=label["exit_code"])
    cats = [c.category for c in diag.root_causes]
    rules = [c.rule for c in diag.root_causes]
    assert diag.profile.type == label["type"], (diag.profile.type, rules)
    if label["stage"]:
        assert diag.profile.stage == label["stage"], (diag.profile.stage, rules)
    assert label["rule"] in rules, rules
    assert label["category"] in cats[:3], list(zip(rules, cats, strict=True))
    top = diag.root_causes[0]
    assert top.rule == label["rule"], rules
    assert top.fix_hints


def test_it_diagnoses_a_failure_produced_live_when_jax_is_installed(tmp_path):
    pytest.importorskip("jax")
    script = tmp_path / "static_list.py"
    script.write_text(
        "import jax, jax.numpy as jnp\n"
        "from functools import partial\n"
        "@partial(jax.jit, static_argnums=1)\n"
        "def f(x, cfg):\n"
        "    return x * cfg[0]\n"
        "f(jnp.ones(3), [2.0])\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode != 0
    diag = diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)
    assert diag.profile.type == "runtime_error"
    assert any(c.rule == "jax.cat.non_hashable_static" for c in diag.root_causes)
    assert diag.root_causes[0].category == "model"
