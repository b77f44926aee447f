"""Three distinct hypotheses that cover where causes really live (issue 13).

Each test shows one mechanism of ``engine/reason.py`` on real evidence: output of real processes run here
(coreutils, Python), or real logs of the thread corpus's train split (never dev). Where a test needs a log
that no rule knows, it diagnoses a real train log with the pack that knows its message left out: the
reasoning alone must then reach what the rule would have said.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, build_ruleset

THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _without(*packs: str):
    """The built-in rule set without ``packs``: the rules that know a message are left out."""
    return build_ruleset([p for p in _builtin_packs() if p[0] not in packs])


def _train_log(name: str, *without: str):
    """A train log of the thread corpus (the split is checked: dev logs are never tests), diagnosed with
    every built-in pack, or without the packs ``without`` (a log whose message no rule knows)."""
    split = json.loads((THREADS / "split.json").read_text())["split"]
    assert split[name] == "train", name
    log = THREADS / f"{name}.log"
    label = json.loads(log.with_suffix(".json").read_text())
    rs = _without(*without) if without else None
    return diagnose([str(log)], exit_code=label.get("exit_code"), command=label.get("command"), ruleset=rs), label


def _cats(diag, n: int = 3) -> list[str]:
    return [c.category for c in diag.root_causes[:n]]


def _run(tmp_path: Path, code: str) -> tuple[str, int]:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


def test_a_stage_the_family_does_not_list_still_names_a_hypothesis(tmp_path):
    """A decode error's family (data, config, the locale, the code) lists no checkpoint; the frames show
    the program loading its checkpoint, and the stage lifts ``checkpoint``, so it joins the differential
    with the facts that lifted it (a passed ``context:stage:checkpoint`` check). The same error while
    reading records does not offer it."""
    body = """
        import json

        def {func}(path):
            with open(path) as f:
                return json.load(f)

        open("state.json", "w").close()  # a file another run was killed while writing
        {func}("state.json")
    """
    err, rc = _run(tmp_path, body.format(func="load_checkpoint"))
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert diag.profile.stage == "checkpoint"
    assert "checkpoint" in _cats(diag)
    cause = next(c for c in diag.root_causes if c.category == "checkpoint")
    assert cause.rule == "differential:decode"
    assert [v.status for v in cause.validation_checks if v.name == "context:stage:checkpoint"] == ["passed"]

    err, rc = _run(tmp_path, body.format(func="read_records"))
    plain = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "checkpoint" not in [c.category for c in plain.root_causes]


def test_a_checkpoint_error_no_rule_knows_offers_the_checkpoint_first():
    """A real train log (a state dict saved from DataParallel loaded into a bare model) without the rule
    that knows PyTorch's state-dict message: a bare RuntimeError, whose generic family lists no checkpoint.
    Its words speak of the state dict, so the checkpoint still leads."""
    diag, label = _train_log("pytorch/pt_yolov1_dataparallel_module_prefix", "10-pytorch.toml")
    assert not any(c.rule.startswith("torch.") for c in diag.root_causes)  # no rule explains it here
    assert label["category"] == "checkpoint"
    assert _cats(diag, 1) == ["checkpoint"]


def test_three_distinct_hypotheses_show_even_when_the_family_names_two():
    """A JAX tracer error's family names two causes (the program, a library that traces unsafe code); the
    generic family completes a third, weighed below both, so a person always sees three places to look."""
    diag, label = _train_log("jax/graphcast_xarray_jax_tracer_array_conversion")
    cats = _cats(diag)
    assert len(set(cats)) == 3
    assert cats[:2] == ["model", "library"] and label["category"] in cats
    third = diag.root_causes[2]
    assert third.rule == "differential:trace" and third.confidence < diag.root_causes[1].confidence
