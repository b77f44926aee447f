"""kfp: rules must not fire on healthy output.

The logs under tests/data/kb/healthy/ were printed here by real runs that finished with exit status 0 (paths
redacted, long INFO/trace runs shortened): a CPU training run with DataLoader workers, warnings and a
checkpoint save/load; a two-process gloo torchrun with TORCH_CPP_LOG_LEVEL=INFO and another with
TORCH_DISTRIBUTED_DEBUG=INFO; a passing pytest run with skips, an xfail and warnings; `python -X importtime -c
"import torch"`; gdb's backtrace of a sleeping interpreter; pip install/uninstall/download/check into a throwaway
venv; torch's CPU-only warnings (amp/autocast without CUDA, DataLoader worker count, sparse/nested betas);
torch.compile runs whose graph breaks Dynamo handled (TORCH_LOGS=graph_breaks); the profiler's table;
`python -m torch.utils.collect_env`; a torch C++ extension built by load_inline (ninja, a compiler warning);
Lightning fit/validate on the CPU (one process, DDP over gloo); a transformers load report and Trainer run; pip
installs of the Lightning and transformers stacks; a gloo rank started before its master.

No rule of any kind may name a cause of these runs: nothing failed. (The test checks every rule, not only
those with requires_failure=false: a graph-break log also holds "User code traceback:" blocks that the scanner
counts as tracebacks, so a requires_failure rule would count there too.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse.scan import ScanResult, scan_file
from pytest_faildiag.rules import load_ruleset

from .kb_helpers import fired, train_log_path

HEALTHY = Path(__file__).resolve().parents[1] / "data" / "kb" / "healthy"
LOGS = sorted(p.name for p in HEALTHY.glob("*.log"))


def test_the_healthy_set_is_there():
    assert len(LOGS) >= 10, LOGS


@pytest.mark.parametrize("name", LOGS)
def test_no_rule_names_a_cause_of_a_run_that_did_not_fail(name):
    ids = {r.id for r in load_ruleset().rules}
    d = diagnose([str(HEALTHY / name)], exit_code=0, factory_root=False)
    named = [(c.rule, c.summary[:80]) for c in d.root_causes if c.rule in ids]
    assert not named, named


def _findings(path: Path, rule: str) -> list[str]:
    rs = load_ruleset()
    res = ScanResult()
    scan_file(str(path), path.name, rs, res)
    return [f.text for f in res.findings if f.rule.id == rule]


def test_c10d_libuv_loop_close_note_is_not_a_busy_mount_point():
    """torch's libuv TCPStore logs `uv_loop_close failed with:-16 errn:EBUSY` at INFO as a healthy run exits."""
    log = HEALTHY / "torchrun_gloo_2proc_cpp_log_info.log"
    assert "errn:EBUSY" in log.read_text()
    assert not _findings(log, "errno.device_busy")


def test_a_real_ebusy_from_the_os_still_fires(tmp_path):
    """rmdir of a mount point (/proc) fails with errno 16; the rule still reads the OS's own message."""
    code = "import os\nos.rmdir('/proc')\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if "[Errno 16]" not in p.stderr:
        pytest.skip("rmdir of a mount point does not give EBUSY here: " + p.stderr[-200:])
    d = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode, factory_root=False)
    assert fired(d, "errno.device_busy"), [c.rule for c in d.root_causes]


def test_logged_graph_breaks_are_noise_and_the_catalogue_rules_give_way():
    log = HEALTHY / "torch_compile_graph_breaks_logged.log"
    assert _findings(log, "dynamo.graph_break_handled")
    assert _findings(log, "dynamo.gb.fundamental")  # the catalogue text is there ...
    d = diagnose([str(log)], exit_code=0, factory_root=False)
    assert not any(c.rule and c.rule.startswith("dynamo.") for c in d.root_causes)  # ... but names no cause


def test_a_fullgraph_break_logs_nothing_to_the_artifact_and_still_fires(tmp_path):
    """Dynamo logs to the graph_breaks artifact only when it goes on eagerly: under fullgraph=True it raises,
    so TORCH_LOGS=graph_breaks adds nothing and the catalogue rule names the cause."""
    pytest.importorskip("torch")
    code = textwrap.dedent(
        """
        import torch
        def f(x):
            y = x + 1
            torch._dynamo.graph_break()
            return y * 2
        print(torch.compile(f, fullgraph=True)(torch.randn(4)))
        """
    )
    env = dict(os.environ, TORCH_LOGS="graph_breaks")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode != 0, p.stderr[-2000:]
    assert "[__graph_breaks]" not in p.stderr
    d = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode, factory_root=False)
    assert fired(d, "dynamo.gb.user_directed"), [c.rule for c in d.root_causes]


def test_ncclwarn_skips_the_ibverbs_probe_and_keeps_other_warnings():
    """NCCL's missing-libibverbs probe is printed by every run on a host without RDMA libraries; the train log's
    other NCCL WARN (the topology's sysfs path) still fires."""
    log = train_log_path("distributed/dist_pr6_nccl_init_cannot_find_pci_path_sysfs_wsl2")
    assert "NCCL WARN Failed to open libibverbs" in log.read_text(errors="replace")
    hits = _findings(log, "nccl.warn")
    assert hits
    assert not any("libibverbs" in h for h in hits), hits
