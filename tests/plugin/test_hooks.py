"""faildiag's hooks are pytest hooks: a conftest.py alone adds a rule pack, a validation check and evidence
to the diagnoses ``pytest --faildiag`` makes (real sessions through pytester), and a module registered under
the ``faildiag`` entry-point group does the same for the command line (a real entry point, a real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import entry_for, session_index

pytestmark = pytest.mark.usefixtures("isolated")

ROOT = Path(__file__).resolve().parents[2]

# A pack no built-in rule knows: only a hook can make a diagnosis name this cause.
ACME_PACK = """\
[[rule]]
id = "acme.widget_jam"
title = "ACME widget jammed"
keywords = ["WIDGET-JAM"]
patterns = ['WIDGET-JAM in slot (?P<slot>\\d+)']
type = "backend"
priority = 90

[[rule.causes]]
id = "acme.widget.jam"
category = "hardware"
confidence = 0.8
summary = "the ACME widget in slot {slot} jammed"
fix_hints = ["reseat the widget"]
checks = ["acme-slot-known"]
"""

PACK_HOOK = """
from pathlib import Path

def pytest_faildiag_rule_packs():
    return [("acme.toml", Path(__file__).with_name("acme.toml").read_text())]
"""

CHECK_HOOK = """
from pytest_faildiag.model import ValidationCheck

def _slot_known(ctx, cause, finding):
    slot = finding["groups"]["slot"]
    return ValidationCheck("acme-slot-known", "passed", f"slot {slot} is in the inventory")

def pytest_faildiag_checks():
    return {"acme-slot-known": _slot_known}
"""

JAMMED_TEST = """
def test_widget():
    print("WIDGET-JAM in slot 7")
    raise RuntimeError("the widget stopped")
"""


def _report(root: Path, test_name: str) -> dict[str, Any]:
    entry = entry_for(session_index(root), test_name)
    assert entry["snapshot"], entry
    return json.loads((root / "faildiag-out" / entry["snapshot"] / "report.json").read_text(encoding="utf-8"))


def _check(cause: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in cause["validation_checks"] if c["name"] == name]
    assert found, cause["validation_checks"]
    return found[0]


def test_a_rule_pack_from_a_conftest_names_the_cause(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", acme=ACME_PACK)
    pytester.makeconftest(PACK_HOOK)
    pytester.makepyfile(test_widget=JAMMED_TEST)
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1)
    top = _report(pytester.path, "test_widget")["root_causes"][0]
    assert (top["id"], top["category"]) == ("acme.widget.jam", "hardware")
    assert top["summary"] == "the ACME widget in slot 7 jammed"
    # the rule lists a check that no plugin provides here: it says so instead of vanishing
    assert _check(top, "acme-slot-known")["status"] == "skipped"


def test_a_check_from_a_conftest_runs_for_the_rule_that_names_it(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", acme=ACME_PACK)
    pytester.makeconftest(PACK_HOOK + CHECK_HOOK)
    pytester.makepyfile(test_widget=JAMMED_TEST)
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1)
    top = _report(pytester.path, "test_widget")["root_causes"][0]
    assert top["id"] == "acme.widget.jam"
    assert _check(top, "acme-slot-known") == {
        "name": "acme-slot-known",
        "status": "passed",
        "detail": "slot 7 is in the inventory",
    }


def test_an_evidence_collector_in_a_conftest_adds_evidence_and_gets_the_snapshot_folder(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("""
        import json
        from pathlib import Path

        def pytest_faildiag_collect_evidence(context):
            Path(__file__).with_name("seen.json").write_text(json.dumps(context))
            return {"gpu-tool.txt": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. "
                                    "GPU 0 has a total capacity of 15.77 GiB of which 2.12 GiB is free.\\n"}
    """)
    pytester.makepyfile(test_train="def test_step():\n    assert False, 'the step did not finish'\n")
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1)
    report = _report(pytester.path, "test_step")
    assert report["profile"]["type"] == "oom", report["profile"]  # the assert alone says nothing of memory
    assert any(e["source"] == "gpu-tool.txt" for e in report["root_causes"][0]["evidence"]), report["root_causes"][0]
    seen = json.loads((pytester.path / "seen.json").read_text())
    entry = entry_for(session_index(pytester.path), "test_step")
    assert Path(seen["out_dir"]) == (pytester.path / "faildiag-out" / entry["snapshot"]).resolve()
    assert seen["command"] == f"pytest {entry['nodeid']}"


def test_a_hook_that_raises_is_a_warning_and_the_other_hooks_still_count(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", acme=ACME_PACK)
    pytester.makeconftest(
        PACK_HOOK
        + CHECK_HOOK
        + """
def pytest_faildiag_collect_evidence(context):
    raise OSError("vendor tool missing")
"""
    )
    pytester.makepyfile(test_widget=JAMMED_TEST)
    result = pytester.runpytest("--faildiag")
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*pytest_faildiag_collect_evidence*failed*vendor tool missing*"])
    top = _report(pytester.path, "test_widget")["root_causes"][0]
    assert top["id"] == "acme.widget.jam" and _check(top, "acme-slot-known")["status"] == "passed"


def test_a_conftest_with_optional_hooks_runs_when_faildiag_is_disabled(pytester: pytest.Pytester) -> None:
    """``-p no:faildiag`` removes the specs too: hooks marked optional are then ignored, not an error."""
    pytester.makeconftest("""
        import pytest

        @pytest.hookimpl(optionalhook=True)
        def pytest_faildiag_rule_packs():
            return []
    """)
    pytester.makepyfile(test_a="def test_ok():\n    pass\n")
    pytester.runpytest("-p", "no:faildiag").assert_outcomes(passed=1)


ENTRY_POINT_PLUGIN = """
import json
from pathlib import Path

from pytest_faildiag.model import ValidationCheck

HERE = Path(__file__).parent


def pytest_faildiag_rule_packs():
    return [("acme.toml", (HERE / "acme.toml").read_text())]


def pytest_faildiag_checks():
    return {"acme-slot-known": lambda ctx, cause, finding: ValidationCheck(
        "acme-slot-known", "passed", "slot " + finding["groups"]["slot"] + " is in the inventory")}


def pytest_faildiag_collect_evidence(context):
    (HERE / "seen.json").write_text(json.dumps(context))
    return {"widget-console.txt": "WIDGET-JAM in slot 4\\n"}
"""


def test_the_command_line_loads_the_same_hooks_from_a_faildiag_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "acme_faildiag-1.0.dist-info").mkdir(parents=True)
    (site / "acme_faildiag-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-faildiag\nVersion: 1.0\n"
    )
    (site / "acme_faildiag-1.0.dist-info" / "entry_points.txt").write_text("[faildiag]\nacme = acme_faildiag\n")
    (site / "acme_faildiag.py").write_text(ENTRY_POINT_PLUGIN)
    (site / "acme.toml").write_text(ACME_PACK)
    log = tmp_path / "train.log"
    log.write_text("step 1\nRuntimeError: the widget stopped\n")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_faildiag.cli",
            "diagnose",
            str(log),
            "--exit-code",
            "1",
            "--format",
            "json",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    top = json.loads(p.stdout)["root_causes"][0]
    assert top["id"] == "acme.widget.jam" and top["summary"] == "the ACME widget in slot 4 jammed", top
    assert _check(top, "acme-slot-known")["status"] == "passed"
    assert any(e["source"] == "widget-console.txt" for e in top["evidence"]), top["evidence"]
    assert json.loads((site / "seen.json").read_text())["out_dir"] == str(out)
