"""torch_npu's error codes beyond those kpta covered (#13): ERR**006 "memory error" and ERR99999.

torch_npu/utils/error_code.py formats "[ERROR] <time> (PID:n, Device:n, RankID:n) ERR<SS><CCC> <SUB> <kind>";
its exit hook prints ERR99999 "UNKNOWN application exception" only for an exception whose text holds no
torch_npu code, and the project's error-code page says such an exception comes from the application or a
third-party library. torch_npu does not install on this machine, so the ERR lines are written in that format
around a real Python failure produced here (the exception torch_npu would have seen)."""

from __future__ import annotations

import subprocess
import sys

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, pack_rules, top3

HOOK_LINE = "[ERROR] 2025-03-01-10:00:00 (PID:4242, Device:0, RankID:-1) ERR99999 UNKNOWN application exception"


def _real_keyerror() -> str:
    # a program's own KeyError, as the interpreter prints it
    code = "weights = {'w': 1}\ndef load(name):\n    return weights[name]\nload('weight_scale_inv')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "KeyError: 'weight_scale_inv'" in proc.stderr
    return proc.stderr


def test_err99999_is_a_stack_hint_not_a_runtime_failure():
    rule = {r.id: r for r in pack_rules("50-ascend.toml")}["pta.err.application_exception"]
    assert rule.noise and not rule.causes
    plain = diagnose(texts={"train.log": _real_keyerror()})
    diag = diagnose(texts={"train.log": _real_keyerror() + HOOK_LINE + "\n"})
    assert plain.profile.stack != "pta"
    assert diag.profile.stack == "pta"  # the line only says where the run was
    assert not fired(diag, "pta.downstream")  # it was read as a failed ACL call
    assert top3(diag)[0] == top3(plain)[0]
    assert diag.root_causes[0].category != "backend"
    assert "backend.npu_runtime" not in [c.id for c in diag.root_causes[:3]]


def test_a_failed_acl_call_is_still_read_as_the_runtime():
    # the neighbour that stays: ERR00100 follows an ACL call's failure (torch_npu's own code)
    text = (
        "RuntimeError: synchronize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:467 NPU function error: "
        "AclrtSynchronizeStream, error code is 507035\n"
        "[ERROR] 2025-03-01-10:00:00 (PID:4242, Device:0, RankID:-1) ERR00100 PTA call acl api failed\n"
    )
    assert fired(diagnose(texts={"train.log": text}), "pta.downstream")


def test_err006_memory_error_is_device_memory():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/site-packages/torch_npu/distributed/symm_mem.py", line 88, in empty\n'
        "    return _allocate(size)\n"
        "RuntimeError: shmem_malloc return nullptr with size 1073741824\n"
        "[ERROR] 2025-03-01-10:00:00 (PID:4242, Device:0, RankID:0) ERR02006 DIST memory error\n"
    )
    diag = diagnose(texts={"train.log": text})
    assert fired(diag, "pta.err.memory")
    assert "resource" in top3(diag)
