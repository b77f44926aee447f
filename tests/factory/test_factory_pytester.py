"""A real pytest session with `--faildiag --faildiag-factory DIR`: the card's category and citation reach the
report section, the snapshot and the JUnit properties; the factory stays byte-identical."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from .conftest import QUOTA_CARD, WRONG_OOM_CARD, make_read_only, make_writable, snapshot_of, write_factory

SUITE = """
def test_allocates_gpus():
    raise RuntimeError("srun: error: QOSMaxGRESPerUser limit reached for account ml-vision-17 (job 4412)")

def test_runs_out_of_memory():
    raise RuntimeError("CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.")
"""


def _props(xml_path) -> dict[str, dict[str, str]]:
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        out[case.get("name")] = {p.get("name"): p.get("value") for p in case.iter("property")}
    return out


@pytest.mark.usefixtures("isolated")
def test_a_card_only_failure_gets_the_cards_category_in_junit_and_the_factory_is_untouched(pytester, factory):
    pytester.makepyfile(test_suite=SUITE)
    before = snapshot_of(factory)
    result = pytester.runpytest_subprocess(
        "--faildiag", "--faildiag-factory", str(factory), "--junitxml=j.xml", "-p", "no:cacheprovider", timeout=180
    )
    result.assert_outcomes(failed=2)
    assert snapshot_of(factory) == before
    props = _props(pytester.path / "j.xml")
    assert props["test_allocates_gpus"]["faildiag.category"] == "harness"
    assert "slurm-qos-gres" in props["test_allocates_gpus"]["faildiag.summary"]
    assert props["test_runs_out_of_memory"]["faildiag.category"] == "resource"
    result.stdout.fnmatch_lines(["*factory:infra/slurm-qos.md: slurm-qos-gres*"])  # the report section
    reports = [json.loads(p.read_text()) for p in (pytester.path / "faildiag-out").glob("*/report.json")]
    cited = [r for r in reports if r.get("factory")]
    assert len(cited) == 1 and cited[0]["factory"][0]["id"] == "slurm-qos-gres"


@pytest.mark.usefixtures("isolated")
def test_without_the_factory_the_same_failure_is_not_the_cards(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("--faildiag", "--junitxml=j.xml", "-p", "no:cacheprovider", timeout=180)
    result.assert_outcomes(failed=2)
    props = _props(pytester.path / "j.xml")
    assert props["test_allocates_gpus"]["faildiag.category"] != "harness"
    assert "slurm-qos-gres" not in result.stdout.str()


@pytest.mark.usefixtures("isolated")
def test_a_card_contradicting_the_logs_does_not_win_in_a_session(pytester, tmp_path):
    root = write_factory(tmp_path / "wrong", {"oom.md": WRONG_OOM_CARD})
    make_read_only(root)
    before = snapshot_of(root)
    pytester.makepyfile(test_suite=SUITE)
    try:
        result = pytester.runpytest_subprocess(
            "--faildiag", "--faildiag-factory", str(root), "--junitxml=j.xml", "-p", "no:cacheprovider", timeout=180
        )
    finally:
        after = snapshot_of(root)
        make_writable(root)
    assert after == before
    result.assert_outcomes(failed=2)
    assert _props(pytester.path / "j.xml")["test_runs_out_of_memory"]["faildiag.category"] == "resource"


WANDERING_SUITE = """
import os, tempfile

def test_leaves_its_folder_removed():
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)  # the folder goes at the end of the block: the process's current folder no longer exists
    raise RuntimeError("CUDA error: an illegal memory access was encountered")

def test_allocates_gpus_from_elsewhere():
    os.chdir(tempfile.gettempdir())
    raise RuntimeError("srun: error: QOSMaxGRESPerUser limit reached for account ml-vision-17 (job 4412)")
"""


@pytest.mark.usefixtures("isolated")
def test_the_default_factory_is_where_pytest_started_whatever_folder_a_test_left(pytester):
    # `./.faildiag/factory/` is read from where pytest was started: a test that changed the current folder, or
    # removed it, changes neither which cards are read nor whether its own and later failures are diagnosed
    root = write_factory(pytester.path / ".faildiag" / "factory", {"infra/slurm-qos.md": QUOTA_CARD})
    before = snapshot_of(root)
    pytester.makepyfile(test_suite=WANDERING_SUITE)
    result = pytester.runpytest_subprocess("--faildiag", "--junitxml=j.xml", "-p", "no:cacheprovider", timeout=180)
    result.assert_outcomes(failed=2)
    assert "no diagnosis" not in result.stdout.str()
    props = _props(pytester.path / "j.xml")
    assert props["test_leaves_its_folder_removed"]["faildiag.type"] == "crash"
    assert props["test_allocates_gpus_from_elsewhere"]["faildiag.category"] == "harness"
    assert "slurm-qos-gres" in props["test_allocates_gpus_from_elsewhere"]["faildiag.summary"]
    assert snapshot_of(root) == before
