"""The Xid / SXid / Ascend fault-event pack (17-xid-catalogue.toml): each code family is read the way the
vendor's catalogue reads it, from kernel-log and device-log lines in the documented formats.

* NVIDIA Xid catalogue (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): the immediate action
  (RESTART_APP vs RESET_GPU) decides whether the hint takes the node out of the job;
* Fabric Manager guide (SXid): Fatal vs Non-fatal, and 12028 stalls NVLink traffic although non-fatal;
* CANN troubleshooting / Health Management Fault Definition: 0x80E01809 needs no operator action,
  0x80E01801 and 0x80C98000 do.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, parse_pack

PACK = "17-xid-catalogue.toml"
PACK_PATH = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK
STAMP = "Mar 03 10:12:44 gpu07 kernel: "


def _diagnose(*lines: str):
    """A failed run whose kernel log holds these lines (the launcher's exit status 1)."""
    return diagnose(texts={"kern.log": "".join(STAMP + line + "\n" for line in lines)}, exit_code=1)


def _rules(d) -> set[str]:
    return {c.rule for c in d.root_causes}


def _hints(d, rule: str) -> str:
    return " ".join(h for c in d.root_causes if c.rule == rule for h in c.fix_hints)


def test_it_parses_and_replaces_no_rule_of_another_pack():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rules, _ = parse_pack(PACK_PATH.read_text(encoding="utf-8"), PACK)
    ours = {r.id for r in rules}
    assert len(ours) == len(rules)
    others = {r.id for name, text in _builtin_packs() if name != PACK for r in parse_pack(text, name)[0]}
    assert not ours & others


def test_xid_8_restarts_the_job_but_xid_46_resets_the_gpu():
    """Catalogue: 8 (FIFO idle timeout) = RESTART_APP; 46 (GPU timeout) = RESET_GPU."""
    d8 = _diagnose("NVRM: Xid (PCI:0000:3b:00): 8, pid=4242, name=python, Channel 00000010")
    assert d8.profile.type == "crash"
    assert d8.root_causes[0].rule == "cuda.xid.idle_timeout"
    assert d8.root_causes[0].category == "hardware" and d8.root_causes[0].confidence < 0.5
    assert "hardware.device_fault" not in _rules(d8)  # the generic "take the node out" rule is silenced
    assert "does not require draining" in _hints(d8, "cuda.xid.idle_timeout")
    d46 = _diagnose("NVRM: Xid (PCI:0000:3b:00): 46, pid=4242, name=python, GPU stopped processing")
    assert d46.root_causes[0].rule in {"cuda.xid.gpu_stopped_processing", "hardware.device_fault"}
    assert d46.root_causes[0].category == "hardware"
    hint = _hints(d46, "cuda.xid.gpu_stopped_processing")
    assert "exclude the node" in hint and "nvidia-smi -r" in hint


def test_xid_32_is_a_pcie_fault_that_restarts_the_job():
    """Catalogue: 32 PBDMA error, mostly PCIe quality; immediate action RESTART_APP, investigate CHECK_APP/CUDA."""
    d = _diagnose("NVRM: Xid (PCI:0000:3b:00): 32, pid=4242, name=python, Channel ID 00000005 intr 00008000")
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("cuda.xid.host_interface", "hardware")
    assert "PCIe" in top.summary
    assert "hardware.device_fault" not in _rules(d)
    assert "RESTART_APP" in " ".join(top.fix_hints)
    assert any(c.category == "operator" for c in d.root_causes)


def test_xid_69_is_an_application_class_error():
    """Catalogue: 69 graphics engine class error = RESTART_APP, then CHECK_APP/CUDA (the GPU stays usable)."""
    d = _diagnose(
        "NVRM: Xid (PCI:0000:01:00): 69, pid=4242, name=python, Class Error: ChId 0005, Class 0000c7c0, "
        "Offset 00000d9c, Data ffffffff, ErrorCode 0000000c"
    )
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("cuda.xid.app_class", "operator")
    assert "hardware.device_fault" not in _rules(d)
    assert "no reset, no drain" in " ".join(top.fix_hints)


def test_xid_109_and_140_need_a_gpu_reset_before_reuse():
    """Catalogue: 109 context switch timeout and 140 ECC error escaping page offlining = RESET_GPU."""
    d = _diagnose(
        "NVRM: Xid (PCI:0000:0b:00): 109, pid=9468, name=python, channel 0x0000000f, "
        "errorString CTX SWITCH TIMEOUT, Info 0x3c014"
    )
    assert "cuda.xid.ctxsw_timeout" in _rules(d)
    assert "RESET_GPU" in next(c.summary for c in d.root_causes if c.rule == "cuda.xid.ctxsw_timeout")
    assert "exclude the node" in _hints(d, "cuda.xid.ctxsw_timeout")
    d = _diagnose("NVRM: Xid (PCI:0000:3b:00): 140, pid=4242, name=python, ECC Unrecovered Error")
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("cuda.xid.ecc_unrecovered", "hardware")
    assert "row remapping" in top.summary and "RESET_GPU" in top.summary
    assert "nvidia-smi -r" in " ".join(top.fix_hints)


def test_nvlink5_xids_are_read_by_their_severity_field():
    """Xid 144-150 carry "<unit> Fatal|Nonfatal"; the decode sheet gives fatal rows RESET_GPU, others IGNORE."""
    fatal = _diagnose(
        "NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 "
        "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
    )
    top = fatal.root_causes[0]
    assert (top.rule, top.category) == ("cuda.xid.nvlink5_fatal", "hardware")
    assert "NETIR_LINK_EVT" in top.summary and "exclude the node" in " ".join(top.fix_hints)
    nonfatal = _diagnose(
        "NVRM: Xid (PCI:0019:01:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 12 (0x040988e2 "
        "0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)"
    )
    rules = _rules(nonfatal)
    assert "cuda.xid.nvlink5_nonfatal" in rules
    assert not rules & {"cuda.xid.nvlink5_fatal", "hardware.device_fault"}
    assert max(c.confidence for c in nonfatal.root_causes if c.category == "hardware") < 0.3


def test_sxid_lines_go_to_the_sxid_rules_not_to_the_generic_xid_rule():
    """ "SXid (PCI:...)" holds "Xid (PCI:"; the generic hardware rule must not take it (no priority race)."""
    fatal = _diagnose("nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up")
    top = fatal.root_causes[0]
    assert (top.rule, top.category) == ("cuda.sxid.nvswitch", "hardware")
    assert "hardware.device_fault" not in _rules(fatal)
    assert "Xid 74" in top.summary and "exclude the node" in " ".join(top.fix_hints)
    ignorable = _diagnose(
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 22013, Non-fatal, Link 32 Minion Link DLREQ interrupt"
    )
    assert _rules(ignorable) & {"cuda.sxid.nonfatal"}
    assert not _rules(ignorable) & {"cuda.sxid.nvswitch", "hardware.device_fault"}
    assert max(c.confidence for c in ignorable.root_causes if c.category == "hardware") < 0.3
    stall = _diagnose(
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)"
    )
    assert stall.root_causes[0].rule == "cuda.sxid.traffic_stall"
    assert "Xid 45" in stall.root_causes[0].summary
    assert "cuda.sxid.nonfatal" not in _rules(stall)


@pytest.mark.parametrize(
    "line",
    [
        "[fault_manager] event_id: [0x80E01809]",  # CANN 8.0: device-os slog
        "event_id=0x80E01809",  # CANN 8.5: device event log (the keyword the troubleshooting guide quotes)
    ],
    ids=["cann80_slog", "cann85_event_log"],
)
def test_ascend_hbm_patrol_ecc_needs_no_operator_action(line: str):
    """Fault definition 0x80E01809: the driver isolates the address; "No operation is required"."""
    d = diagnose(texts={"device-os_2.log": line + "\n"}, exit_code=1)
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("ascend.fault.hbm_ecc_patrol", "hardware")
    assert "isolates the address" in top.summary
    assert "need not be drained" in " ".join(top.fix_hints)
    assert "ascend.fault.event" not in _rules(d)


def test_ascend_hbm_access_ecc_and_icache_fault_need_a_restart_or_reset():
    """0x80E01801: isolation failed, kill the process then reset the SoC; 0x80C98000: rerun, then reset."""
    d = diagnose(texts={"event_2.log": "event_id=0x80E01801\n"}, exit_code=1)
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("ascend.fault.hbm_ecc_access", "hardware")
    assert "reset the NPU" in " ".join(top.fix_hints)
    d = diagnose(texts={"device-os_2.log": "[fault_manager] event_id: [0x80C98000]\n"}, exit_code=1)
    top = d.root_causes[0]
    assert (top.rule, top.category) == ("ascend.fault.icache_verify", "hardware")
    assert "iCache" in top.summary and top.fix_hints[0].startswith("rerun the job")
    assert "ascend.fault.event" not in _rules(d)


def test_a_mig_xid_line_is_read_by_its_code():
    """NVIDIA's memory-error guide prints Xid 94 with MIG as "Xid (PCI:0000:01:00 GPU-I:05): 94, ..."."""
    d = _diagnose(
        "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No"
    )
    assert "cuda.xid.memory_fatal" in _rules(d)
    assert d.root_causes[0].category == "hardware"
