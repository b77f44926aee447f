"""Shared helpers of the knowledge-base tests."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
import warnings
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.model import Diagnosis
from pytest_faildiag.rules import Rule, _builtin_packs, build_ruleset

THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"
KB_DATA = Path(__file__).resolve().parents[1] / "data" / "kb"  # the kb's real logs and fixtures, one folder per pack


def train_log_path(name: str) -> Path:
    """A thread-corpus log that the split puts in train (the only ones a rule may be shown on)."""
    assert json.loads((THREADS / "split.json").read_text())["split"].get(name) == "train", name
    path = THREADS / f"{name}.log"
    assert path.is_file(), path
    return path


def fired(diag, rule: str) -> bool:
    """Whether a rule's cause is among the diagnosis's causes."""
    return any(rc.rule == rule for rc in diag.root_causes)


def pack_rules(pack: str) -> list[Rule]:
    """The rules of one built-in pack, loaded with the others as the engine loads them; a warning that
    names the pack fails the caller (a malformed pack is skipped with a warning, never silently)."""
    packs = _builtin_packs()
    assert pack in {name for name, _ in packs}, f"{pack} is not a built-in pack"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rs = build_ruleset(packs)
    assert not [w for w in caught if pack in str(w.message)], [str(w.message) for w in caught]
    return [r for r in rs.rules if r.pack == pack]


def summaries(diag) -> str:
    """Every cause's summary of the diagnosis, as one text (what a reader sees named)."""
    return " ".join(rc.summary or "" for rc in diag.root_causes)


def top3(diag) -> list[str]:
    """The first three distinct categories, as the accuracy bench counts them."""
    out: list[str] = []
    for rc in diag.root_causes:
        if rc.category not in out:
            out.append(rc.category)
    return out[:3]


def run_failing(tmp_path: Path, body: str, *, as_file: bool = False, timeout: float = 240) -> tuple[Diagnosis, str]:
    """Run a program in a child interpreter, expect it to fail, and diagnose what it printed on stderr with
    its exit status. ``as_file`` runs it from prog.py (spawned workers re-import the main module)."""
    code = textwrap.dedent(body)
    if as_file:
        (tmp_path / "prog.py").write_text(code)
        argv = [sys.executable, str(tmp_path / "prog.py")]
    else:
        argv = [sys.executable, "-c", code]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=timeout)
    assert p.returncode != 0, p.stdout + p.stderr
    return diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode), p.stderr


def check_labelled_log(data: Path, label: dict) -> Diagnosis:
    """Diagnose a real log of a kb folder (with its exit status) as its ``labels.json`` entry says: its type,
    its rule among the causes, and either that rule's cause first (``first``) or its home among the first
    three (a hypothesis beside the error that ended the run, not ahead of it), or, where the label says its home is
    none of them (``home_in_top3`` false, said in the label), only the type and the rule."""
    diag = diagnose([str(data / label["log"])], exit_code=label["exit_code"])
    rules = [c.rule for c in diag.root_causes]
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == label["type"], (diag.profile.type, rules)
    assert label["rule"] in rules, rules
    if label.get("first", True):
        top = diag.root_causes[0]
        assert (top.rule, top.category) == (label["rule"], label["category"]), list(zip(rules, cats, strict=True))
        assert top.fix_hints
    elif label.get("home_in_top3", True):
        assert label["category"] in cats[:3], list(zip(rules, cats, strict=True))
    return diag


def check_pack_rules(rules: list[Rule]) -> None:
    """A catalogue pack's shape: every rule names causes, every cause says how to fix it, and no rule offers one
    category twice (its alternatives are distinct hypotheses)."""
    for r in rules:
        assert r.causes, r.id
        assert all(c.fix_hints for c in r.causes), r.id
        cats = [c.category for c in r.causes]
        assert len(cats) == len(set(cats)), (r.id, cats)


def own_pack_ids(pack: str) -> set[str]:
    """The rule ids of a built-in catalogue pack, after checking that it loads, has a catalogue pack's shape
    (``check_pack_rules``) and reuses no id of another pack (a rule that replaced another's would hide it)."""
    mine = pack_rules(pack)
    check_pack_rules(mine)
    ids = {r.id for r in mine}
    assert not ids & ids_in_other_packs(rules_dir() / pack), ids & ids_in_other_packs(rules_dir() / pack)
    return ids


def rules_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules"


def ids_in_other_packs(pack: Path) -> set[str]:
    """The rule ids of every built-in pack but ``pack`` (a new pack's ids must be its own)."""
    others: set[str] = set()
    for other in pack.parent.glob("*.toml"):
        if other != pack:
            others |= {r["id"] for r in tomllib.loads(other.read_text()).get("rule", [])}
    return others


def run_jax_on_cpu(tmp_path: Path, code: str) -> Diagnosis:
    """Run ``code`` with the installed JAX on 4 host CPU devices, expect it to fail, and diagnose its stderr
    with its exit status (the JAX families' live checks; the caller skips where JAX is not installed)."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode != 0
    return diagnose(texts={"stderr": proc.stderr}, exit_code=proc.returncode)


def train_log_with_rules(name: str) -> tuple[Diagnosis, dict]:
    """A train log diagnosed as ``bench/accuracy.py`` does (every rule, its label's exit status and command),
    and its label."""
    log = train_log_path(name)
    label = json.loads(log.with_suffix(".json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return diagnose([str(log)], exit_code=label.get("exit_code"), command=label.get("command")), label


def train_log_led_by(name: str, rule: str) -> tuple[Diagnosis, dict]:
    """A train log (see ``train_log_with_rules``) whose first cause is ``rule``'s and whose first home is the one
    its label names; the diagnosis and the label, for the caller's own assertions."""
    diag, label = train_log_with_rules(name)
    causes = [(rc.rule, rc.category) for rc in diag.root_causes[:4]]
    assert diag.root_causes[0].rule == rule, causes
    assert top3(diag)[0] == label["category"], causes
    return diag, label


def train_diagnosis(name: str) -> Diagnosis:
    """A train log diagnosed as ``bench/accuracy.py`` does (see ``train_log_with_rules``), without its label."""
    return train_log_with_rules(name)[0]


def first_cause(diag: Diagnosis) -> tuple[str, str | None]:
    """The top cause's category and the rule that gave it."""
    top = diag.root_causes[0]
    return top.category, top.rule


def train_log_without_rules(name: str) -> tuple[Diagnosis, dict]:
    """A train log diagnosed with the rules that explained it left out (their findings dropped, as
    ``bench/ablate_rules.py`` does: a failure no rule knows), and its label."""
    from bench.ablate_rules import OWN, dropping

    log = train_log_path(name)
    label = json.loads(log.with_suffix(".json").read_text())
    kw = {"exit_code": label.get("exit_code"), "command": label.get("command")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = diagnose([str(log)], **kw)
        rules = {c.rule for c in first.root_causes if not c.rule.startswith(OWN)}
        with dropping(rules):
            diag = diagnose([str(log)], **kw)
    assert not any(c.rule in rules for c in diag.root_causes), name
    return diag, label


def context_checks(diag: Diagnosis, category: str) -> dict[str, str]:
    """The ``context:<fact>`` checks on a category's best cause and their statuses (passed: the fact lifted
    it, failed: the fact lowered it)."""
    cause = next(c for c in diag.root_causes if c.category == category)
    return {v.name: v.status for v in cause.validation_checks if v.name.startswith("context:")}


def fact_statuses(diag: Diagnosis) -> dict[str, set[str]]:
    """Every reasoning fact reported on the causes (``context:<fact>`` checks) and the statuses it had across
    them (passed: it lifted a cause, failed: it lowered one)."""
    out: dict[str, set[str]] = {}
    for c in diag.root_causes:
        for v in c.validation_checks:
            if v.name.startswith("context:"):
                out.setdefault(v.name.removeprefix("context:"), set()).add(v.status)
    return out


def context_facts(diag: Diagnosis) -> set[str]:
    """Every reasoning fact that weighed on some cause of the diagnosis."""
    return {
        v.name.split(":", 1)[1] for c in diag.root_causes for v in c.validation_checks if v.name.startswith("context:")
    }


def fake_site_library(tmp_path: Path, body: str) -> str:
    """A package ``fakelib`` (``body`` as its ``__init__``) under a ``site-packages`` folder, which is how the
    reasoning tells a library's frames from the program's; returns the folder to put on ``sys.path``."""
    site = tmp_path / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "fakelib").mkdir(parents=True)
    (site / "fakelib" / "__init__.py").write_text(body)
    return str(site)


def run_fake_library_call(tmp_path: Path, body: str, call: str, imports: str = "") -> tuple[Diagnosis, str]:
    """``run_failing`` of a program that imports ``fakelib`` (``fake_site_library`` of ``body``, and ``imports``
    before it) and runs ``call``: the failure raised inside an installed library's code."""
    site = fake_site_library(tmp_path, body)
    head = f"import {imports}\n" if imports else ""
    return run_failing(tmp_path, f"import sys\nsys.path.insert(0, {site!r})\n{head}import fakelib\n{call}\n")


def check_text_alone(data: Path, label: dict) -> Diagnosis:
    """The labelled log handed over as its text alone (no exit status, as a JSONL scorer does): the signature
    must still carry it, its type, its rule and its home among the first three."""
    diag = diagnose([str(data / label["log"])])
    cats = [c.category for c in diag.root_causes]
    assert diag.profile.type == label["type"], (diag.profile.type, cats)
    assert fired(diag, label["rule"]), [c.rule for c in diag.root_causes]
    assert label["category"] in cats[:3], cats
    return diag
