"""A log that just stops (no error line, no exception, no exit status) reads as a run that stopped making
progress, unless its last lines say that something failed. A warning is such a statement: it is how a library
says that a part of it could not be set up (xFormers' "can't load C++/CUDA extensions", bitsandbytes'
"libcudart.so not found"); INFO and DEBUG lines are chatter a hung run prints too. Real interpreters' stderr and
train logs of the thread corpus, handed over as pasted text (no exit status)."""

from __future__ import annotations

import subprocess
import sys

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import train_log_with_rules


def _stderr(argv: list[str], *, fails: bool = False) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert (p.returncode != 0) == fails, p.stderr
    return p.stderr


def _python(code: str) -> str:
    return _stderr([sys.executable, "-W", "default", "-c", code])


def test_a_paste_that_ends_on_a_warning_of_a_part_that_could_not_load_is_a_failure_not_a_hang():
    err = _python("import warnings\nwarnings.warn('libcudart.so not found in any environmental path')\n")
    assert "UserWarning: libcudart.so not found" in err
    diag = diagnose(texts={"stderr": err})
    assert diag.profile.type == "runtime_error"


def test_a_log_whose_last_lines_are_info_chatter_still_reads_as_a_hang():
    code = (
        "import logging, sys\n"
        "logging.basicConfig(stream=sys.stderr, level=logging.INFO)\n"
        "log = logging.getLogger('train')\n"
        "log.info('rank 0: waiting for the other ranks at the barrier')\n"
        "log.info('rank 0: could not reach rank 1 yet, retrying')\n"
    )
    err = _python(code)
    assert "INFO:train:rank 0: could not reach rank 1 yet" in err
    assert diagnose(texts={"stderr": err}).profile.type == "hang"


def test_the_train_pastes_that_end_on_such_a_warning_read_as_the_failure_their_thread_confirmed():
    for name in (
        "environment/xformers_cuda_build_with_cpu_only_torch",
        "environment/bitsandbytes_pre_0_43_no_windows_cuda_support",
    ):
        diag, label = train_log_with_rules(name)
        assert label["type"] == "runtime_error" and label["exit_code"] is None
        assert diag.profile.type == "runtime_error", name


def test_a_real_hang_that_just_stops_keeps_its_reading():
    diag, label = train_log_with_rules("distributed/neuronsp_debug_barrier_hotpath_hang")
    assert label["type"] == diag.profile.type == "hang"


def test_a_shells_own_error_words_are_a_failure_not_a_hang():
    """POSIX shells word their errors without "error:" or an exception ("export: (HEAD: bad variable name",
    "Syntax error: "then" unexpected"): a build script's paste that ends on one states its failure."""
    for script in ("export '(HEAD'", "if then fi"):
        err = _stderr(["sh", "-c", script], fails=True)
        assert "bad variable name" in err or "yntax error" in err, err
        assert diagnose(texts={"stderr": err}).profile.type == "runtime_error", err
