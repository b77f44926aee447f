"""ktorch8: PyTorch's compiler and program-transform stack (18-torch-compile-catalogue): torch.func's vmap/grad
guards, gradcheck, inductor's C++ compiler check, an exported program's input guards, FX over torch.compile,
TorchScript's type inference, a custom autograd.Function under a transform and a sparse/dense mix. Each family is
produced for real by a small PyTorch-on-CPU program run in a child process, and must come out with its rule's cause
first in the home the message documents."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from tests.kb.kb_helpers import fired, ids_in_other_packs, pack_rules, run_failing, top3

PACK = "18-torch-compile-catalogue.toml"
PACK_PATH = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK

torch = pytest.importorskip("torch")


def test_the_pack_loads_without_a_warning_and_its_ids_are_its_own():
    mine = pack_rules(PACK)
    assert len(mine) >= 13
    for r in mine:
        assert r.keywords and r.causes, r.id
        assert r.id.startswith("torch.cc."), r.id
    assert not {r.id for r in mine} & ids_in_other_packs(PACK_PATH)


PROGRAMS = {
    "vmap_randomness": (
        "torch.func.vmap(lambda x: x + torch.rand_like(x))(torch.ones(3, 2))",
        "torch.cc.vmap_randomness",
        "config",
    ),
    "vmap_mapped_sizes": (
        "torch.func.vmap(lambda x, y: x + y)(torch.ones(3, 2), torch.ones(4, 2))",
        "torch.cc.vmap_arguments",
        "model",
    ),
    "vmap_in_dims": ("torch.func.vmap(lambda x: x, in_dims=(0, 0))(torch.ones(3))", "torch.cc.vmap_arguments", "model"),
    "vmap_non_tensor_out": ("torch.func.vmap(lambda x: 'a')(torch.ones(3))", "torch.cc.vmap_arguments", "model"),
    "grad_non_scalar": ("torch.func.grad(lambda x: x * 2)(torch.ones(3))", "torch.cc.func_grad_output", "model"),
    "requires_grad_in_vmap": (
        "torch.func.vmap(lambda x: x.requires_grad_())(torch.ones(3, 2))",
        "torch.cc.requires_grad_in_transform",
        "model",
    ),
    "saved_hooks_under_grad": (
        """
        def f(x):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                return x.sin().sum()
        torch.func.grad(f)(torch.ones(3))
        """,
        "torch.cc.func_saved_tensor_hooks",
        "library",
    ),
    "function_without_setup_context_under_vmap": (
        """
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2
            @staticmethod
            def backward(ctx, g):
                return g * 2
        torch.func.vmap(Double.apply)(torch.ones(3, 2))
        """,
        "torch.cc.function_under_func_transform",
        "model",
    ),
    "gradcheck_wrong_backward": (
        """
        class Triple(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3
            @staticmethod
            def backward(ctx, g):
                return g * 2
        x = torch.randn(3, dtype=torch.double, requires_grad=True)
        torch.autograd.gradcheck(Triple.apply, (x,))
        """,
        "torch.cc.gradcheck_mismatch",
        "model",
    ),
    "gradcheck_no_grad_input": (
        "torch.autograd.gradcheck(lambda x: x * 2, (torch.randn(3, dtype=torch.double),))",
        "torch.cc.gradcheck_no_grad_input",
        "model",
    ),
    "export_called_with_other_shape": (
        """
        class M(torch.nn.Module):
            def forward(self, x):
                return x * 2
        ep = torch.export.export(M(), (torch.ones(2, 3),))
        ep.module()(torch.ones(4, 3))
        """,
        "torch.cc.export_input_guard",
        "model",
    ),
    "fx_trace_of_compiled": (
        "torch.fx.symbolic_trace(torch.compile(lambda x: x + 1))",
        "torch.cc.fx_trace_compiled",
        "model",
    ),
    "script_default_type": (
        """
        def f(x, n: int = None):
            return x
        torch.jit.script(f)
        """,
        "torch.cc.torchscript_type_inference",
        "model",
    ),
    "script_two_return_types": (
        """
        def f(x: int):
            if x > 0:
                return 1
            return "a"
        torch.jit.script(f)
        """,
        "torch.cc.torchscript_type_inference",
        "model",
    ),
    "sparse_dense_stack": (
        "torch.stack([torch.eye(3).to_sparse(), torch.ones(3, 3)])",
        "torch.cc.sparse_dense_mix",
        "model",
    ),
}


@pytest.mark.parametrize("case", sorted(PROGRAMS))
def test_a_real_cpu_run_is_read_by_its_family(tmp_path, case):
    body, rule, category = PROGRAMS[case]
    # from a file: TorchScript reads the scripted function's source
    diag, stderr = run_failing(tmp_path, "import torch\n" + textwrap.dedent(body), as_file=True)
    assert fired(diag, rule), ([(c.rule, c.category) for c in diag.root_causes], stderr[-2000:])
    first = diag.root_causes[0]
    assert (first.rule, first.category) == (rule, category), [(c.rule, c.category) for c in diag.root_causes]
    assert first.fix_hints


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None, reason="inductor needs a compiler")
def test_inductor_without_a_working_cxx_compiler_is_the_installation(tmp_path):
    # the compiler inductor is pointed at does not exist: the same InvalidCxxCompiler a machine without g++ raises
    diag, stderr = run_failing(
        tmp_path,
        """
        import torch
        import torch._inductor.config as cfg
        cfg.cpp.cxx = ("no-such-cxx-compiler",)
        torch.compile(lambda x: x.sin() + 1)(torch.randn(8))
        """,
    )
    assert "No working C++ compiler found" in stderr
    first = diag.root_causes[0]
    assert (first.rule, first.category) == ("torch.cc.inductor_no_cxx", "environment"), top3(diag)
    assert "config" in top3(diag)
