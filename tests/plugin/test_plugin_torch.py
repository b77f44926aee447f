"""Real PyTorch failures on the CPU, diagnosed through the plugin."""

from __future__ import annotations

import importlib.util

import pytest

from .conftest import entry_for, session_index

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("isolated")]


def test_torch_failures_get_their_own_causes_and_point_at_the_model_code(pytester: pytest.Pytester) -> None:
    # Looked up, not imported: pytester drops the modules imported while it runs, and torch's C extension
    # cannot be imported a second time in one process (a later `import torch` in this worker would then
    # fail with "bad call flags" or crash it). The session below runs in its own process for the same reason.
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    pytester.makepyfile(
        model="""
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self, hidden=32):
                super().__init__()
                self.fc1 = nn.Linear(16, hidden)
                self.fc2 = nn.Linear(hidden, 1)

            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x)))
    """,
        test_train="""
        import torch
        from model import Net

        def test_wrong_input_width():
            Net()(torch.randn(4, 20))

        def test_resume_from_a_bigger_model(tmp_path):
            torch.save(Net(hidden=64).state_dict(), tmp_path / "ckpt.pt")
            Net().load_state_dict(torch.load(tmp_path / "ckpt.pt"))
    """,
    )
    result = pytester.runpytest_subprocess("--faildiag", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    index = session_index(pytester.path)
    shape = entry_for(index, "test_wrong_input_width")
    assert shape["category"] == "model" and shape["cause_id"] == "model.shape_mismatch"
    assert (shape["file"], shape["line"]) == ("model.py", 11)  # the forward() line, not torch internals
    ckpt = entry_for(index, "test_resume_from_a_bigger_model")
    assert ckpt["category"] == "checkpoint", ckpt
    result.stdout.fnmatch_lines(["2 failures, 2 causes:"])
