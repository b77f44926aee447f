"""Ascend (PTA/CANN) facts found among the train logs' misses: each test diagnoses a real log from the thread
corpus's train split and checks the rule that states the fact fires and puts the catalogue's meaning first."""

from __future__ import annotations

from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import pack_rules

ROOT = Path(__file__).resolve().parents[2]
THREADS = ROOT / "tests/data/corpus/threads"


def test_the_ascend_pack_loads_without_a_warning():
    assert pack_rules("50-ascend.toml")


def test_orphaned_tbe_compile_workers_point_at_the_exit_not_at_compilation():
    # the only lines of the log are the TBE workers' "main process disappeared!": the script ended uncleanly
    log = THREADS / "ascend/pta_tbe_subprocess_main_process_disappeared_no_cleanup.log"
    d = diagnose([log])
    assert d.profile.type == "runtime_error"
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("pta.tbe_subprocess_orphaned", "model")
    assert "resource" in [c.category for c in d.root_causes[:3]]
