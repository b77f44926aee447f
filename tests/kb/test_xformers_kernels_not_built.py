"""xFormers' dispatcher listing why each attention kernel refused the inputs (``xformers.kernels_not_built``):
"xFormers wasn't build with CUDA support" and "operator wasn't built - see `python -m xformers.info`" say the
installed xFormers has no compiled kernels for this torch, whatever the inputs, so the installed versions come
first and the dispatcher's generic not-implemented reading (an operator's missing coverage) stays silent. A
train log of a CPU-only xFormers build under a CUDA torch."""

from __future__ import annotations

from .kb_helpers import fired, top3, train_log_with_rules


def test_an_xformers_without_kernels_is_the_installed_build() -> None:
    diag, label = train_log_with_rules("environment/xformers_no_operator_not_built_with_cuda_rtx5090")
    assert fired(diag, "xformers.kernels_not_built")
    assert not fired(diag, "torch.not_implemented_for_device")
    assert diag.profile.type == "unsupported_op"
    assert top3(diag)[0] == "environment" == label["category"]
    assert any("xformers.info" in hint for hint in diag.root_causes[0].fix_hints)
