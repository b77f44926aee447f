"""torch.compile refuses an interpreter its release does not support (torch/__init__.py compile and
_dynamo/eval_frame.py name the newest Python each release supports), #13: the installed torch predates the
Python, an environment fact. Shown on a train log from a public thread (torch 2.3 on Python 3.12) and on the
wording torch 2.13 itself raises (read from its sources here)."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, top3, train_log_path


def test_a_thread_log_of_dynamo_on_a_too_new_python():
    text = train_log_path("pytorch/gc2_chattts_compile_dynamo_unsupported_python312_torch23").read_text()
    diag = diagnose(texts={"train.log": text})
    assert fired(diag, "dynamo.unsupported_interpreter")
    assert top3(diag)[0] == "environment"
    assert diag.profile.stage == "compile"


def test_the_installed_torchs_own_wording_is_read_the_same_way():
    source = (Path(torch.__file__).parent / "__init__.py").read_text()
    message = re.search(r'raise RuntimeError\("(torch\.compile is not supported on Python 3\.\d+\+)"\)', source)
    assert message, "torch's check_if_dynamo_supported wording moved"
    text = f'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nRuntimeError: {message.group(1)}\n'
    diag = diagnose(texts={"train.log": text})
    assert fired(diag, "dynamo.unsupported_interpreter")
    assert top3(diag)[0] == "environment"
