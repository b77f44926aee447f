"""A report hides secrets, not its own evidence: the sentences of the engine and its rules, and the symbol a
real loader error names, come out of redaction as they went in (each was masked in real reports before)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_faildiag.redact import MASK, redact_obj
from tests.kb.kb_helpers import run_failing

# a C++ symbol whose parts between underscores include a 40-character run of letters and digits
SYMBOL = "_ZN10tensorflow8OpKernel11TraceStringEPNS_15OpKernelContextEb"


def _shown(diag) -> str:
    return json.dumps(redact_obj(diag.to_dict()), ensure_ascii=False)


def test_the_differentials_sentence_survives_redaction(tmp_path: Path) -> None:
    diag, _ = run_failing(tmp_path, "def f(a):\n    return a\nf(1, 2)\n")
    shown = _shown(diag)
    assert "signature: one of its usual causes" in shown
    assert MASK not in shown


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build the extension")
def test_an_undefined_symbol_of_a_real_loader_error_stays_readable(tmp_path: Path) -> None:
    src = tmp_path / "ext.c"
    src.write_text(f'extern void missing(void) __asm__("{SYMBOL}");\nvoid call(void) {{ missing(); }}\n')
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "ext.so"), str(src)], check=True)
    diag, err = run_failing(tmp_path, "import ctypes\nctypes.CDLL('./ext.so')\n")
    assert f"undefined symbol: {SYMBOL}" in err
    shown = _shown(diag)
    assert SYMBOL in shown
    assert MASK not in shown
