"""A summary's placeholder that the matching pattern did not fill leaves no trace in the prose a user reads.

A rule names groups that only some of its patterns capture (``{dev}{dev2} {idx}``, ``a collective ({op})``);
an unfilled one renders as nothing (docs/rules.md), and the parentheses, doubled spaces or dangling space before
a colon it leaves are taken out with it. Real train logs whose lines fill only some of the groups, and the
function that tidies the rendered text.
"""

from __future__ import annotations

import pytest

from pytest_faildiag.engine.rank import _EMPTY, _tidy
from tests.engine.corpus_logs import train_log


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        # torch.load's "Attempting to deserialize object on a CUDA device" names no device index
        (
            "pytorch/cuda_visible_devices_hardcoded_gpu1_torch_load_cuda_deserialize",
            "torch.msg.load_device_unavailable",
        ),
        # the watchdog's line without the collective's name in the form the pattern reads it
        ("distributed/nccl_allreduce_watchdog_timeout_broken_uv_env", "nccl.watchdog_timeout"),
    ],
)
def test_an_unfilled_placeholder_leaves_no_empty_parentheses_or_doubled_spaces(name: str, rule: str):
    diag, _ = train_log(name)
    summaries = [c.summary for c in diag.root_causes if c.rule == rule]
    assert summaries, [c.rule for c in diag.root_causes]
    for s in summaries:
        assert "()" not in s and "  " not in s and " :" not in s and "( vs )" not in s, s


@pytest.mark.parametrize(
    ("rendered", "tidy"),
    [
        (f"the operator {_EMPTY} has no kernel", "the operator has no kernel"),
        (f"a collective ({_EMPTY}) did not complete", "a collective did not complete"),
        (f"shapes ({_EMPTY} vs {_EMPTY}) and", "shapes and"),
        (f"no axis {_EMPTY} to map (rank {_EMPTY}), or", "no axis to map, or"),
        (f"saved on CUDA{_EMPTY} {_EMPTY} and", "saved on CUDA and"),
        (f"memory left on {_EMPTY}: the batch", "memory left on: the batch"),
        (f"on cuda:0{_EMPTY} and", "on cuda:0 and"),  # the alternative's group filled, the other not
        (f"call torch.no_grad() ({_EMPTY})", "call torch.no_grad()"),  # the template's own parentheses stay
        (f"{_EMPTY} is not installed", "is not installed"),  # no space left at the start
        (f"a tensor (shape {_EMPTY}, dtype float32)", "a tensor (shape, dtype float32)"),  # more than one word: kept
    ],
)
def test_the_words_an_empty_placeholder_leaves_are_tidied(rendered: str, tidy: str):
    assert _tidy(rendered) == tidy
