"""107002 ACL_ERROR_RT_CONTEXT_NULL ("The context is empty. Check whether acl.rt.set_context or acl.rt.set_device
is called."): the runtime keeps the current device per thread, so the code that started a thread or process
and touched the NPU there without selecting the device is where the fix goes: the program's code or the
framework's that starts the worker, not a setting (#13). Shown on a train log from a public thread (a serving
framework's spawned worker)."""

from __future__ import annotations

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, top3, train_log_path


def test_an_empty_context_is_the_code_that_started_the_worker():
    text = train_log_path("ascend/fastchat_npu_worker_subprocess_context_empty_107002").read_text()
    diag = diagnose(texts={"train.log": text})
    assert fired(diag, "cann.rt.107002")
    homes = top3(diag)
    assert {"model", "library"} <= set(homes)
    assert "config" not in homes  # the device selection is code, not a setting
    assert not fired(diag, "ascend.rt_param")  # the code's own rule says more than the 107xxx family
