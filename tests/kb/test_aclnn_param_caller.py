"""An aclnn parameter check (161xxx, its EZ1001 detail) refuses the call's arguments: the caller is what to change.

CANN's aclnn return codes 161001/161002 are the operator API's checks of the arguments it was given; the operator
did what it documents. Which code made the call is what the frames say: the program's own function (the program's
code leads), an installed library's (that library leads), or no frame at all (the caller unknown: the operator
still not first). The message is torch_npu's, raised here by real processes from the program's or a
``site-packages`` library's code (no NPU on this machine), and a train log from a thread.
"""

from __future__ import annotations

from pathlib import Path

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, run_failing, run_fake_library_call, top3, train_log_path

# torch_npu's RuntimeError for aclnnRepeatInterleaveIntWithDim given float64 (the op's support list has no DT_DOUBLE)
MESSAGE = (
    "call aclnnRepeatInterleaveIntWithDim failed, detail:EZ1001: [PID: 4242] 2025-01-02-11:00:00.313.502 self not "
    "implemented for DT_DOUBLE, should be in dtype support list [DT_UINT8,DT_INT8,DT_INT16,DT_INT32,DT_INT64,"
    "DT_BOOL,DT_FLOAT16,DT_FLOAT,DT_BFLOAT16,]."
)
RULES = {"ascend.aclnn_param", "cann.aclnn.161002"}


def _fired_param_rule(diag) -> bool:
    return any(fired(diag, r) for r in RULES)


def test_the_program_s_own_call_puts_the_program_s_code_first(tmp_path: Path):
    body = f"def rope(x):\n    raise RuntimeError({MESSAGE!r})\n\nrope(1.0)\n"
    diag, err = run_failing(tmp_path, body, as_file=True)
    assert "DT_DOUBLE" in err
    assert _fired_param_rule(diag)
    assert not fired(diag, "ascend.code.operator")  # the EZ1001 detail is the check's echo, no second fault
    cats = top3(diag)
    assert cats[0] == "model"
    assert "operator" in cats and cats.index("operator") > cats.index("model")


def test_a_library_s_call_puts_that_library_first(tmp_path: Path):
    body = f"def rotary_embedding(x):\n    return _apply(x)\n\ndef _apply(x):\n    raise RuntimeError({MESSAGE!r})\n"
    diag, _ = run_fake_library_call(tmp_path, body, "fakelib.rotary_embedding(1.0)")
    assert _fired_param_rule(diag)
    assert top3(diag)[0] == "library"


def test_without_frames_the_operator_is_not_the_first_reading():
    # one line pasted from a thread (diffusers computing RoPE in float64 on an NPU; fixed in diffusers)
    diag = diagnose([str(train_log_path("ascend/npu_repeat_interleave_double_rope_diffusers"))])
    assert fired(diag, "ascend.aclnn_param")
    cats = top3(diag)
    assert cats[0] == "library" and "model" in cats and "operator" in cats
