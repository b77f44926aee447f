"""The real `faildiag` CLI with a real factory folder: cards as supporting evidence, never touched."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pytest_faildiag.model import STACKS

from .conftest import (
    OOM_LOG,
    QUOTA_CARD,
    QUOTA_LOG,
    WRONG_OOM_CARD,
    make_read_only,
    make_writable,
    snapshot_of,
    write_factory,
)


def _diagnose(run_cli, tmp_path: Path, log: str, *extra: str, env: dict | None = None, cwd: Path | None = None):
    path = tmp_path / "run.log"
    path.write_text(log, encoding="utf-8")
    out = tmp_path / "out"
    if env is not None:
        import subprocess
        import sys

        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest_faildiag.cli",
                "diagnose",
                str(path),
                "--exit-code",
                "1",
                "--out",
                str(out),
                "--format",
                "json",
                *extra,
            ],
            capture_output=True,
            timeout=120,
            env={**os.environ, **env},
            cwd=cwd,
        )
    else:
        proc = run_cli(
            "diagnose", str(path), "--exit-code", "1", "--out", str(out), "--format", "json", *extra, cwd=cwd
        )
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout), proc, out


def test_a_failure_only_a_card_knows_gets_the_cards_category_and_cites_it(run_cli, tmp_path, factory):
    before = snapshot_of(factory)
    report, proc, out = _diagnose(run_cli, tmp_path, QUOTA_LOG, "--factory-root", str(factory))
    top = report["root_causes"][0]
    assert top["category"] == "harness"
    assert {
        "kind": "hypothesis",
        "source": "factory:infra/slurm-qos.md",
        "excerpt": "slurm-qos-gres: cluster QOS quota of the account is exhausted",
    } in top["evidence"]
    assert any(e["kind"] == "direct" and "QOSMaxGRESPerUser" in e["excerpt"] for e in top["evidence"])
    assert "slurm-qos-gres" in report["summary"]  # what the JUnit summary property carries
    assert report["factory"][0]["id"] == "slurm-qos-gres" and report["factory"][0]["path"] == "infra/slurm-qos.md"
    assert "slurm-qos-gres" in (out / "report.md").read_text()
    text = run_cli("report", str(out)).stdout.decode() if (out / "report.json").is_file() else ""
    assert "factory:infra/slurm-qos.md" in text or "factory:infra/slurm-qos.md" in (out / "report.md").read_text()
    assert snapshot_of(factory) == before  # read-only folder, bytes, mtimes and modes unchanged


def test_the_same_failure_without_the_factory_does_not_get_the_cards_category(run_cli, tmp_path):
    report, _, _ = _diagnose(run_cli, tmp_path, QUOTA_LOG, env={"FAILDIAG_FACTORY_ROOT": ""})
    assert report["root_causes"][0]["category"] != "harness"
    assert "factory" not in report
    assert not any(e["source"].startswith("factory:") for c in report["root_causes"] for e in c["evidence"])


def test_the_text_report_names_the_card(run_cli, tmp_path, factory):
    path = tmp_path / "run.log"
    path.write_text(QUOTA_LOG)
    proc = run_cli(
        "diagnose", str(path), "--exit-code", "1", "--out", str(tmp_path / "o"), "--factory-root", str(factory)
    )
    text = proc.stdout.decode()
    assert "factory:infra/slurm-qos.md: slurm-qos-gres" in text


def test_a_card_contradicting_direct_evidence_does_not_win(run_cli, tmp_path):
    root = write_factory(tmp_path / "factory", {"oom.md": WRONG_OOM_CARD})
    report, _, _ = _diagnose(run_cli, tmp_path, OOM_LOG, "--factory-root", str(root))
    causes = report["root_causes"]
    assert causes[0]["category"] == "resource"
    card = next(c for c in causes if any(e["source"] == "factory:oom.md" for e in c["evidence"]))
    assert card["category"] == "dataset" and card["confidence"] < causes[0]["confidence"]
    assert report["factory"][0]["effect"] == "candidate"


def test_a_card_agreeing_with_the_logs_raises_that_cause(run_cli, tmp_path):
    agree = WRONG_OOM_CARD.replace('"dataset"', '"resource"').replace("oom-is-bad-shard", "oom-batch")
    root = write_factory(tmp_path / "factory", {"oom.md": agree})
    plain, _, _ = _diagnose(run_cli, tmp_path, OOM_LOG, env={"FAILDIAG_FACTORY_ROOT": ""})
    backed, _, _ = _diagnose(run_cli, tmp_path, OOM_LOG, "--factory-root", str(root))
    assert backed["root_causes"][0]["id"] == plain["root_causes"][0]["id"]
    assert backed["root_causes"][0]["confidence"] >= plain["root_causes"][0]["confidence"]
    assert any(e["source"] == "factory:oom.md" for e in backed["root_causes"][0]["evidence"])
    assert backed["factory"][0]["effect"] == "raised"


def test_broken_cards_are_one_warning_line_each_and_skipped(run_cli, tmp_path):
    from .conftest import QUOTA_CARD

    root = write_factory(
        tmp_path / "factory",
        {
            "good.md": QUOTA_CARD,
            "nofront.md": "just notes\n",
            "toml.md": '+++\nid = "x"\ntitle = \n+++\n',
            "regex.md": QUOTA_CARD.replace("slurm-qos-gres", "bad-re").replace("\\S+", "(unclosed"),
            "category.md": QUOTA_CARD.replace("slurm-qos-gres", "bad-cat").replace('"harness"', '"weather"'),
        },
    )
    make_read_only(root)
    before = snapshot_of(root)
    try:
        report, proc, _ = _diagnose(run_cli, tmp_path, QUOTA_LOG, "--factory-root", str(root))
    finally:
        after = snapshot_of(root)
        make_writable(root)
    assert after == before
    err = proc.stderr.decode().splitlines()
    for name, why in (
        ("nofront.md", "no front matter"),
        ("toml.md", "TOML error"),
        ("regex.md", "missing )"),
        ("category.md", "unknown category 'weather'"),
    ):
        lines = [ln for ln in err if f"factory:{name}" in ln]
        assert len(lines) == 1 and why in lines[0], err
    assert "Traceback" not in proc.stderr.decode()
    assert report["root_causes"][0]["category"] == "harness"  # the good card still counts
    assert any("factory:toml.md" in n for n in report.get("notes", []))


def test_the_variable_and_the_default_folder_find_the_factory(tmp_path, factory):
    report, _, _ = _diagnose(None, tmp_path, QUOTA_LOG, env={"FAILDIAG_FACTORY_ROOT": str(factory)})
    assert report["root_causes"][0]["category"] == "harness"
    work = tmp_path / "work"
    write_factory(work / ".faildiag" / "factory", {"q.md": (factory / "infra" / "slurm-qos.md").read_text()})
    report, _, _ = _diagnose(None, tmp_path, QUOTA_LOG, env={"FAILDIAG_FACTORY_ROOT": ""}, cwd=work)
    assert report["factory"][0]["path"] == "q.md"


def test_a_missing_factory_root_is_a_one_line_usage_error(run_cli, tmp_path):
    path = tmp_path / "run.log"
    path.write_text(QUOTA_LOG)
    proc = run_cli("diagnose", str(path), "--factory-root", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.decode().strip().count("\n") == 0 and "not a folder" in proc.stderr.decode()


def test_a_drafted_card_added_to_a_factory_is_cited_for_a_similar_log(run_cli, tmp_path):
    # a real run through `faildiag run`: its snapshot keeps the logs the draft is checked against
    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "for i in range(50):\n    print(f'step {i} | loss {2.0 - i / 100:.3f} | shard /data/shards/part-{i:05d}.bin')\n"
        "print('[rank3]: RuntimeError: NFS server storage-12:/export/vol7 not responding at 0x7f3a2b10, gave up after 300 s',"
        " file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    snap = tmp_path / "snap"
    proc = run_cli("run", "--out", str(snap), "--quiet", "--", "python", str(script), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr.decode()
    drafted = run_cli("card", str(snap))
    assert drafted.returncode == 0, drafted.stderr.decode()
    card = drafted.stdout.decode()
    assert card.startswith("+++\n") and "signatures = [" in card
    assert list(snap.rglob("*.md")) == [snap / "report.md"]  # printed, never written
    root = write_factory(tmp_path / "factory", {"drafted.md": card})
    make_read_only(root)
    before = snapshot_of(root)
    similar = (
        "step 1 | loss 1.9\n"
        "[rank5]: RuntimeError: NFS server storage-40:/export/vol2 not responding at 0x55d2aa01, gave up after 120 s\n"
    )
    try:
        report, _, _ = _diagnose(run_cli, tmp_path, similar, "--factory-root", str(root))
    finally:
        after = snapshot_of(root)
        make_writable(root)
    assert after == before
    assert report["factory"] and report["factory"][0]["path"] == "drafted.md"
    assert any(e["source"] == "factory:drafted.md" for c in report["root_causes"] for e in c["evidence"])


def test_check_reports_parse_errors_duplicates_and_signatures_that_match_nothing_or_everything(run_cli, tmp_path):
    from .conftest import QUOTA_CARD

    root = write_factory(
        tmp_path / "factory",
        {
            "a.md": QUOTA_CARD,
            "b/copy.md": QUOTA_CARD,
            "never.md": QUOTA_CARD.replace("slurm-qos-gres", "never").replace("QOSMaxGRESPerUser", "NeverSeenMessage"),
            "always.md": QUOTA_CARD.replace("slurm-qos-gres", "always").replace(
                "QOSMaxGRESPerUser limit reached for account \\S+", "step \\d+"
            ),
            "empty.md": QUOTA_CARD.replace("slurm-qos-gres", "empty").replace(
                "QOSMaxGRESPerUser limit reached for account \\S+", "(?:abcd)?"
            ),
            "broken.md": "+++\nid = 'x'\n",
        },
    )
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i} | loss 2.0\n" for i in range(100)) + QUOTA_LOG)
    make_read_only(root)
    before = snapshot_of(root)
    try:
        proc = run_cli("card", "--check", str(root), "--logs", str(log))
    finally:
        after = snapshot_of(root)
        make_writable(root)
    assert after == before
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert "b/copy.md: duplicate id 'slurm-qos-gres' (also in a.md)" in out
    assert "never.md: no signature matches anything" in out
    assert "always.md: matches" in out and "nearly everything" in out
    assert "empty.md:" in out
    assert "broken.md: front matter not closed" in out
    assert "a.md:" not in out.replace("b/copy.md", "")
    clean = write_factory(tmp_path / "clean", {"a.md": QUOTA_CARD})
    ok = run_cli("card", "--check", str(clean), "--logs", str(log))
    assert ok.returncode == 0 and ok.stdout == b""


def test_faildiag_run_hands_its_factory_root_to_the_diagnosis(run_cli, tmp_path, factory):
    """A real command under `faildiag run --factory-root`: the card is cited in the run's own report."""
    script = tmp_path / "job.py"
    script.write_text(f"import sys\nsys.stderr.write({QUOTA_LOG!r})\nsys.exit(1)\n", encoding="utf-8")
    out = tmp_path / "run-out"
    proc = run_cli("run", "--out", str(out), "--factory-root", str(factory), "--", sys.executable, str(script))
    assert proc.returncode == 1, proc.stderr.decode()
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["factory"] and report["factory"][0]["id"] == "slurm-qos-gres"
    assert report["root_causes"][0]["category"] == "harness"


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_a_card_may_name_any_stack_of_the_contract(run_cli, tmp_path, stack):
    """Each of the contract's stacks (python too, which no built-in rule declares) is evidence a card may give
    for the profile's stack: the diagnosis cites the card and names a stack of the vocabulary (the drafted
    card of a plain Python log once ended in an internal error)."""
    card = QUOTA_CARD.replace('type = "runtime_error"', f'type = "runtime_error"\nstack = "{stack}"')
    root = write_factory(tmp_path / "factory", {"quota.md": card})
    log = "step 1 | loss 2.31\nRuntimeError: srun: error: QOSMaxGRESPerUser limit reached for account ml-a (job 7)\n"
    report, _proc, _out = _diagnose(run_cli, tmp_path, log, "--factory-root", str(root))
    assert report["factory"] and report["factory"][0]["id"] == "slurm-qos-gres"
    assert report["profile"]["stack"] in STACKS
