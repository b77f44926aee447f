"""The CUDA / cuDNN / cuBLAS / NCCL / Xid catalogue pack (15-cuda-nccl-catalogue.toml): it loads cleanly, its
cudaError names and messages are the CUDA runtime's own (checked against the real libcudart where one is
installed), and real logs are diagnosed with the code's catalogued meaning.

Real logs: a CUDA runtime call made for real in a child process (no driver on CI machines: the runtime answers
cudaErrorInsufficientDriver), NCCL's own output captured with libnccl on a machine without a GPU, and short
excerpts from public threads and documentation (tests/data/kb/cuda_nccl_catalogue/*.log with their labels)."""

from __future__ import annotations

import ctypes
import glob
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.rules import _builtin_packs, parse_pack
from tests.kb.kb_helpers import pack_rules

PACK = "15-cuda-nccl-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "cuda_nccl_catalogue"


def _pack_text() -> str:
    return dict(_builtin_packs())[PACK]


def _cudart() -> str | None:
    candidates = sorted(glob.glob("/usr/local/cuda*/lib*/libcudart.so*")) + sorted(
        glob.glob(
            os.path.join(
                sys.prefix, "lib", "python*", "site-packages", "nvidia", "cuda_runtime", "lib", "libcudart.so*"
            )
        )
    )
    for path in candidates:
        try:
            ctypes.CDLL(path)
        except OSError:
            continue
        return path
    return None


def test_it_loads_the_pack_without_a_warning():
    mine = pack_rules(PACK)
    assert len(mine) >= 40
    for r in mine:
        assert r.causes, r.id
        for c in r.causes:
            assert c.fix_hints and c.summary, (r.id, c.id)
        assert all(len(k) >= 8 for k in r.keywords), r.id  # no short, common keyword


def test_its_cuda_error_names_and_messages_are_the_runtimes_own():
    path = _cudart()
    if path is None:
        pytest.skip("no libcudart on this machine")
    rt = ctypes.CDLL(path)
    rt.cudaGetErrorName.restype = ctypes.c_char_p
    rt.cudaGetErrorString.restype = ctypes.c_char_p
    names, strings = set(), set()
    for code in range(0, 1000):
        name = rt.cudaGetErrorName(code).decode()
        if name.startswith("cudaError"):
            names.add(name)
            strings.add(rt.cudaGetErrorString(code).decode())
    rules, _ = parse_pack(_pack_text(), PACK)
    checked = 0
    for r in rules:
        if not r.id.startswith("cuda.err."):
            continue
        for kw in r.keywords:
            if kw.startswith("cudaError"):
                assert kw in names, (r.id, kw)
                checked += 1
            elif not kw.startswith(
                (
                    "CUDA_ERROR_",
                    "CUDA error: ",
                    "CUDA unknown error",
                    "Cannot re-initialize",
                    "Driver/library version mismatch",
                    "NVRM: ",  # the kernel module's own line (the driver's README), not the runtime's
                    "does not match DSO version",  # the stream executor's driver check (TensorFlow, XLA)
                    "cuInit(0) returned ",  # the driver API's numeric result in NGC images' banner
                    "all CUDA-capable devices are busy",  # cudaErrorDevicesUnavailable as CUDA 11 and older word it
                )
            ):
                assert any(kw in s for s in strings), (r.id, kw)
                checked += 1
    assert checked >= 60


def test_it_reports_a_runtime_older_driver_from_a_real_cuda_call(tmp_path):
    """cudaGetDeviceCount called for real; without a usable driver the runtime answers
    cudaErrorInsufficientDriver, printed the way the CUDA samples' checkCudaErrors prints it."""
    path = _cudart()
    if path is None:
        pytest.skip("no libcudart on this machine")
    script = tmp_path / "probe.py"
    script.write_text(
        textwrap.dedent(f"""
        import ctypes, sys
        rt = ctypes.CDLL({path!r})
        rt.cudaGetErrorName.restype = ctypes.c_char_p
        rt.cudaGetErrorString.restype = ctypes.c_char_p
        n = ctypes.c_int()
        err = rt.cudaGetDeviceCount(ctypes.byref(n))
        if err:
            name, text = rt.cudaGetErrorName(err).decode(), rt.cudaGetErrorString(err).decode()
            sys.stderr.write(f'CUDA error at probe.py:8 code={{err}}({{name}}) "cudaGetDeviceCount(&n)"\\n')
            raise RuntimeError(f"{{name}}: {{text}}")
        print("devices:", n.value)
    """)
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    if p.returncode == 0 or "cudaErrorInsufficientDriver" not in p.stderr:
        pytest.skip(f"this machine has a usable CUDA driver: {p.stdout.strip()} {p.stderr[-200:]}")
    d = diagnose(
        texts={"stderr.txt": p.stderr, "stdout.txt": p.stdout}, exit_code=p.returncode, command="python probe.py"
    )
    assert d.profile.type == "backend"
    assert any(c.rule == "cuda.err.driver_older_than_runtime" for c in d.root_causes)
    assert "environment" in [c.category for c in d.root_causes[:3]]


CASES = {
    # NCCL's own output (libnccl 2.32.3, no GPU): a CUDA failure inside ncclCommInitRank
    "nccl_unhandled_cuda_error_local": ["nccl.result.unhandled_cuda", "nccl.warn.cuda_failure"],
    # ncclGroupEnd() without ncclGroupStart(): ncclInvalidUsage = API misuse by the application
    "nccl_group_end_invalid_usage_local": ["nccl.result.invalid_usage"],
    # a too-small /dev/shm (documentation excerpt)
    "nccl_shm_segment_docs": ["nccl.warn.shm_segment"],
    # ibv_reg_mr ENOMEM fixed by the memlock limit (NVIDIA/nccl-tests#206)
    "nccl_ibv_reg_mr_memlock": ["nccl.warn.ibv_memlock"],
    # Xid 79 in the kernel log
    "xid79_fallen_off_bus": ["cuda.xid.device_lost"],
    # cuDNN has no kernel for a large conv2d (pytorch/pytorch#11065)
    "cudnn_not_supported_conv2d": ["cudnn.status.not_supported"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_it_diagnoses_the_real_log_with_the_catalogued_meaning(name):
    log = DATA / f"{name}.log"
    label = json.loads(log.with_suffix(".json").read_text())
    for exit_code in (label.get("exit_code"), None):
        d = diagnose([str(log)], exit_code=exit_code)
        cats = [c.category for c in d.root_causes]
        assert d.profile.type == label["type"], (d.profile.type, cats)
        fired = {c.rule for c in d.root_causes}
        for rule in CASES[name]:
            assert rule in fired, (rule, fired)
        assert label["category"] in cats[:3], cats


def test_a_specific_nccl_warning_silences_the_generic_result_code():
    """NCCL_SOCKET_IFNAME naming no interface: NCCL returns ncclInvalidUsage, but the WARN line says why; the
    generic 'API misuse' reading of the result code must give way to the interface diagnosis."""
    log = DATA / "nccl_bootstrap_no_interface_local.log"
    d = diagnose([str(log)], exit_code=1)
    fired = {c.rule for c in d.root_causes}
    assert "dist.socket_ifname" in fired
    assert "nccl.result.invalid_usage" not in fired
    assert d.root_causes[0].category == "environment"


def test_it_tells_application_xids_from_hardware_xids():
    """The Xid catalogue: 13/31/43 are application faults, 48/94/95 memory hardware, 45 follows another error."""
    app = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "NVRM: Xid (PCI:0000:db:00): 31, pid=13641, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS "
        "GPCCLIENT_T1_10 faulted @ 0x7fd7_90743000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
    )
    d = diagnose(texts={"stderr.txt": app}, exit_code=1)
    assert d.root_causes[0].category == "operator"
    assert any(c.rule == "cuda.xid.app_fault" for c in d.root_causes)
    hw = "NVRM: Xid (PCI:0000:65:00): 95, pid=12345, Uncontained: ECC error\n"
    d = diagnose(texts={"stderr.txt": hw}, exit_code=1)
    assert d.root_causes[0].category == "hardware"
    assert any(c.rule == "cuda.xid.memory_fatal" for c in d.root_causes)
