"""bench/fit_reasoning.py: the differential's numbers fitted on train logs only, scored by cross-validation.

The logs are real: each is the stderr of a Python process that failed in its own way. The labels are the
test's (a tiny synthetic split); the point is the protocol (dev never read, folds that hold out, a fit that
moves toward the labels, a catalogue fact's order kept), not the figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import fit_reasoning as fr

# (family folder, name, code that fails, labelled category, split)
LOGS = [
    ("py", "import_missing_a", "import faildiag_no_such_module_a", "environment", "train"),
    ("py", "import_missing_b", "import faildiag_no_such_module_b", "environment", "train"),
    ("py", "zero_div", "n = 0\nprint(10 / n)", "model", "train"),
    ("py", "bad_value", "int('twelve')", "dataset", "train"),
    ("py", "runtime_a", "raise RuntimeError('worker state is inconsistent')", "model", "train"),
    (
        "py",
        "runtime_b",
        "raise RuntimeError('the installed extension was compiled against another version')",
        "environment",
        "train",
    ),
    ("py", "key_missing", "cfg = {}\ncfg['lr']", "config", "train"),
    ("py", "dev_only", "raise RuntimeError('a dev log: never read by the fit')", "library", "dev"),
]


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "threads"
    split = {}
    for fam, name, code, category, which in LOGS:
        folder = root / fam
        folder.mkdir(parents=True, exist_ok=True)
        script = tmp_path / f"{name}.py"
        script.write_text(code + "\n")
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode != 0, proc.stdout
        (folder / f"{name}.log").write_text(proc.stderr)
        label = {"type": "runtime_error", "stage": "runtime", "category": category, "exit_code": proc.returncode}
        (folder / f"{name}.json").write_text(json.dumps(label))
        split[f"{fam}/{name}"] = which
    (root / "split.json").write_text(json.dumps({"note": "test split", "split": split}))
    return root


def test_cv_runs_on_train_only_and_matches_the_hand_numbers_at_infinite_strength(tmp_path: Path) -> None:
    cases = fr.train_cases(False, _corpus(tmp_path))
    names = [c.name for c in cases]
    assert len(cases) == 7 and "py/dev_only" not in names  # the dev log is never read
    lines: list[str] = []
    results = fr.run(cases, folds=2, ks=[2.0, 1e9], repeats=1, out=lines.append)
    recs = results["records"]
    assert {r.family for r in recs} >= {"import", "arithmetic", "runtime"}
    assert any(r.primary for r in recs)  # no rule knows some of these messages: the differential ranks alone
    for key, rows in results["cv"].items():
        assert len(rows) == len(cases), key
        n, t1, t3 = fr.score(rows)
        assert n == 7 and 0 <= t1 <= t3 <= 7
    # numbers shrunk infinitely toward the hand-set ones rank every held-out log as the hand-set ones do
    for key in ("priors/rate/all/k=1e+09", "priors/mle/all/k=1e+09", "factors/mle/all/k=1e+09"):
        assert fr.score(results["cv"][key]) == results["hand"], key
    assert any(line.startswith("CV priors/rate/all/k=2 ") for line in lines)


def test_cli_prints_the_cv_figures(tmp_path: Path, capsys) -> None:
    root = _corpus(tmp_path)
    assert fr.main(["--threads", str(root), "--folds", "2", "--repeats", "1", "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "train logs: 7 (7 thread-corpus train, 0 kb)" in out
    assert "best CV setting:" in out and "per family" in out


def test_fit_moves_toward_the_labels_and_keeps_a_catalogue_order() -> None:
    hand = {
        "import": {"environment": 0.55, "library": 0.2, "model": 0.15},
        "config_error": {"config": 0.7, "environment": 0.15, "model": 0.1},
    }
    recs = [fr.Record(f"import/{i}", "model", "import", True, [], True) for i in range(6)]
    recs += [fr.Record(f"cfg/{i}", "model", "config_error", True, [], True) for i in range(6)]
    fitted = fr.fit_priors(recs, hand, [], k=2.0, method="rate", scope="all")
    assert fitted["import"]["model"] > hand["import"]["model"]
    assert fitted["import"]["environment"] < hand["import"]["environment"]
    assert min(fitted["import"].values()) >= fr.MIN_PRIOR  # no listed cause is deleted
    # six logs say model, but a rejected configuration is the configuration's first (ORDER_FACTS)
    cfg = fitted["config_error"]
    assert cfg["config"] > max(v for c, v in cfg.items() if c != "config")
    # stronger shrinkage moves less
    strong = fr.fit_priors(recs, hand, [], k=50.0, method="rate", scope="all")
    assert hand["import"]["model"] < strong["import"]["model"] < fitted["import"]["model"]


def test_fitted_factor_keeps_the_direction_the_entry_states() -> None:
    # two logs where the fact holds, both labelled against the factor's direction
    recs = [fr.Record(f"x/{i}", "library", "runtime", True, [0], True) for i in range(2)]
    priors = {"runtime": {"model": 0.3, "library": 0.3, "environment": 0.3}}
    factors = [{"model": 1.5, "library": 0.6, "environment": 0.2}]
    out = fr.fit_factors(recs, priors, factors, k=1.0)[0]
    assert out["model"] >= 1.0  # a lift stays a lift
    assert out["library"] <= 1.0  # a lowering stays a lowering, however the labels disagree
    assert out["environment"] <= fr.REFUTES  # a refuting factor stays refuting


def test_spy_indexes_every_context_and_skips_what_it_cannot_fit() -> None:
    # the loaded rule set's own entries are found by identity, a copy of an entry's factors by its fact and
    # factors; a marker the reasoning code adds itself (no entry, no factors) is skipped and counted, not a KeyError
    from collections import Counter

    from pytest_faildiag.rules import load_ruleset

    rs = load_ruleset()
    ctxs = rs.reasoning.contexts
    j = next(i for i, c in enumerate(ctxs) if c.factors)
    last = len(ctxs) - 1
    skipped: Counter[str] = Counter()
    active = [
        (ctxs[last].fact, ctxs[last].why, ctxs[last].factors),
        (ctxs[j].fact, ctxs[j].why, dict(ctxs[j].factors)),
        ("type:unsupported_op", "a marker of the reasoning code", {}),
    ]
    got = fr._context_indices(active, rs, skipped)
    assert got[0] == last and ctxs[got[1]].fact == ctxs[j].fact and ctxs[got[1]].factors == ctxs[j].factors
    assert len(got) == 2 and skipped == Counter({"type:unsupported_op": 1})


def test_without_rules_leaves_each_logs_explaining_rules_out_of_every_run(tmp_path: Path) -> None:
    cases = fr.train_cases(False, _corpus(tmp_path))
    lines: list[str] = []
    results = fr.run(cases, folds=2, ks=[1e9], repeats=1, out=lines.append, without_rules=True)
    recs = results["records"]
    assert any(r.drop for r in recs)  # a rule explained the missing module: it is left out
    assert any(line.startswith("without rules:") for line in lines)
    rs = fr._ruleset(None)
    for case, r in zip(cases, recs, strict=True):
        assert r.drop == fr._explaining_rules(case, rs)
        assert not r.drop & {c.rule for c in fr._diagnosis(case, rs, r.drop).root_causes}
    # numbers shrunk infinitely toward the hand-set ones score as the hand-set ones, with the same rules left out
    assert fr.score(results["cv"]["priors/rate/all/k=1e+09"]) == results["hand"]
