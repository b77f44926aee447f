"""The 14-torch-binary-catalogue pack: PyTorch's own message families harvested from the torch 2.13 binaries and
torch/*.py, each produced for real by a small PyTorch-on-CPU program. The programs run as files in one child
interpreter (one torch import for all of them, each program started by runpy as `python prog.py` would be); each
one's uncaught exception is printed by Python's traceback module in the interpreter's format (runpy's frames on
top) and diagnosed with the exit status 1 a failed Python program has."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, ids_in_other_packs, pack_rules, top3, train_log_led_by

PACK = "14-torch-binary-catalogue.toml"
PACK_PATH = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / PACK


def test_the_pack_loads_without_a_warning_and_its_keywords_are_specific():
    mine = pack_rules(PACK)
    assert 20 <= len(mine) <= 40
    for r in mine:
        assert r.id.startswith("torch.bin."), r.id
        assert r.keywords and r.causes, r.id
        assert all(len(k) >= 12 for k in r.keywords), r.id  # message text, never a common word
        assert len({c.category for c in r.causes}) >= 1, r.id
    assert not {r.id for r in mine} & ids_in_other_packs(PACK_PATH)


torch = pytest.importorskip("torch")

# (case, rule id, expected category among the top 3 ("!": first), expected type, expected stage or None, program)
CASES = [
    (
        "softmax_dim",
        "torch.bin.dim_out_of_range",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        logits = torch.randn(10)          # one sample, no batch dimension
        probs = logits.softmax(dim=1)
    """,
    ),
    (
        "bmm_rank",
        "torch.bin.operand_rank",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        q = torch.randn(4, 8)
        k = torch.randn(4, 8)
        scores = torch.bmm(q, k.transpose(-1, -2))
    """,
    ),
    (
        "cat_rank",
        "torch.bin.operand_rank",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        feats = torch.randn(2, 16)
        extra = torch.randn(2, 16, 1)
        torch.cat([feats, extra], dim=1)
    """,
    ),
    (
        "interpolate_rank",
        "torch.bin.operand_rank",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        img = torch.randn(32, 32)         # no batch and channel axes
        torch.nn.functional.interpolate(img, scale_factor=2, mode="bilinear")
    """,
    ),
    (
        "lstm_rank",
        "torch.bin.operand_rank",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        lstm = torch.nn.LSTM(4, 3)
        lstm(torch.randn(5, 1, 2, 4))
    """,
    ),
    (
        "expand_fewer_sizes",
        "torch.bin.operand_rank",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        bias = torch.randn(2, 3)
        bias.expand(3)
    """,
    ),
    (
        "lstm_output_tuple",
        "torch.bin.argument_not_tensor",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        lstm = torch.nn.LSTM(2, 3)
        head = torch.nn.Linear(3, 1)
        out = lstm(torch.randn(4, 1, 2))      # (output, (h, c))
        head(out)
    """,
    ),
    (
        "conv_list_input",
        "torch.bin.argument_not_tensor",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        weight = torch.randn(1, 1, 1, 1)
        torch.nn.functional.conv2d([[1.0, 2.0]], weight)
    """,
    ),
    (
        "sdpa_long_mask",
        "torch.bin.index_dtype",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        q = torch.randn(1, 2, 4, 8)
        mask = torch.ones(4, 4, dtype=torch.long)
        torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    """,
    ),
    (
        "iterate_scalar_loss",
        "torch.bin.operand_rank",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        loss = torch.tensor(0.7)
        for part in loss:
            print(part)
    """,
    ),
    (
        "maxpool_flat_input",
        "torch.bin.operand_rank",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.nn.functional.max_pool2d(torch.randn(5), 2)
    """,
    ),
    (
        "inplace_on_expanded",
        "torch.bin.inplace_memory_overlap",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        bias = torch.zeros(1, 3).expand(4, 3)
        bias.add_(1)
    """,
    ),
    (
        "view_made_under_no_grad",
        "torch.bin.view_grad_mode",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        w = torch.randn(4, requires_grad=True)
        y = w * 1
        with torch.no_grad():
            head = y[:2]
        head.mul_(2)
    """,
    ),
    (
        "torch_classes_path",
        "torch.bin.classes_path_probe",
        "library",
        "runtime_error",
        "runtime",
        """
        import torch
        for mod in [torch.classes]:          # what a module watcher does with every imported module
            list(mod.__path__._path)
    """,
    ),
    (
        "unflatten_heads",
        "torch.bin.size_arithmetic",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        hidden, heads = 12, 5
        x = torch.randn(2, hidden)
        x.unflatten(1, (heads, hidden // heads))
    """,
    ),
    (
        "split_sizes",
        "torch.bin.size_arithmetic",
        "config",
        "runtime_error",
        "runtime",
        """
        import torch
        x = torch.randn(10)
        train, val = x.split([8, 3])
    """,
    ),
    (
        "batchnorm_width",
        "torch.bin.batchnorm_features",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 12, 3), torch.nn.BatchNorm2d(10))
        net(torch.randn(4, 3, 8, 8))
    """,
    ),
    (
        "argmax_empty",
        "torch.bin.empty_tensor",
        "dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        scores = torch.randn(0)            # no detections in this image
        best = scores.argmax()
    """,
    ),
    (
        "instance_norm_1x1",
        "torch.bin.instance_norm_spatial",
        "dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        norm = torch.nn.InstanceNorm2d(8)
        norm.train()
        norm(torch.randn(2, 8, 1, 1))
    """,
    ),
    (
        "mha_heads",
        "torch.bin.attention_heads",
        "!config",
        "runtime_error",
        None,
        """
        import torch
        attn = torch.nn.MultiheadAttention(embed_dim=100, num_heads=8)
    """,
    ),
    (
        "conv_bias_double",
        "torch.bin.bias_dtype",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        conv = torch.nn.Conv2d(1, 1, 1)
        torch.nn.functional.conv2d(torch.randn(1, 1, 2, 2), conv.weight, conv.bias.double())
    """,
    ),
    (
        "nll_float_target",
        "torch.bin.loss_target_dtype",
        "dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        labels = torch.tensor([0.0, 1.0, 2.0, 0.0])     # class ids read as floats
        torch.nn.functional.nll_loss(torch.randn(4, 3).log_softmax(1), labels)
    """,
    ),
    (
        "index_select_float",
        "torch.bin.index_dtype",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        x = torch.randn(6, 4)
        idx = torch.arange(0, 6) / 2
        x.index_select(0, idx)
    """,
    ),
    (
        "float_index",
        "torch.bin.index_dtype",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        x = torch.randn(3)
        x[torch.tensor([0.0, 1.0])]
    """,
    ),
    (
        "masked_fill_int_mask",
        "torch.bin.index_dtype",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        scores = torch.randn(2, 3)
        mask = torch.tensor([[1, 0, 1], [0, 1, 1]])
        scores.masked_fill_(mask, 0.0)
    """,
    ),
    (
        "one_hot_float",
        "torch.bin.index_dtype",
        "dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.nn.functional.one_hot(torch.tensor([0.0, 1.0]), num_classes=3)
    """,
    ),
    (
        "mask_fill_fp16",
        "torch.bin.value_overflow",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        scores = torch.randn(2, 3).half()
        pad = torch.tensor([[False, True, True], [False, False, True]])
        scores.masked_fill(pad, -1e9)
    """,
    ),
    (
        "mean_of_long",
        "torch.bin.integer_input_to_float_op",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        counts = torch.tensor([1, 2, 3])
        counts.mean()
    """,
    ),
    (
        "std_of_long",
        "torch.bin.integer_input_to_float_op",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.tensor([1, 2, 3]).std()
    """,
    ),
    (
        "bool_minus",
        "torch.bin.bool_arithmetic",
        "environment",
        "runtime_error",
        "runtime",
        """
        import torch
        mask = torch.tensor([True, False])
        inverted = 1 - mask
    """,
    ),
    (
        "bool_negate",
        "torch.bin.bool_arithmetic",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        mask = torch.tensor([True, False])
        -mask
    """,
    ),
    (
        "embedding_vocab",
        "torch.bin.embedding_index",
        "config",
        "runtime_error",
        "runtime",
        """
        import torch
        emb = torch.nn.Embedding(100, 8)         # vocab_size too small for the tokenizer
        ids = torch.tensor([[5, 42, 130]])
        emb(ids)
    """,
    ),
    (
        "one_hot_classes",
        "torch.bin.one_hot_classes",
        "!dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        labels = torch.tensor([1, 2, 3])          # 1-based labels
        torch.nn.functional.one_hot(labels, num_classes=3)
    """,
    ),
    (
        "mask_length",
        "torch.bin.index_shape",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        x = torch.randn(3, 4)
        keep = torch.tensor([True, False])
        x[keep]
    """,
    ),
    (
        "too_many_indices",
        "torch.bin.index_shape",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        out = torch.randn(3)
        out[0, 1]
    """,
    ),
    (
        "normal_negative_std",
        "torch.bin.normal_std",
        "config",
        "runtime_error",
        "runtime",
        """
        import torch
        mean = torch.zeros(3)
        std = torch.tensor([0.1, -0.2, 0.3])       # a policy head without softplus
        torch.normal(mean, std)
    """,
    ),
    (
        "multinomial_too_many",
        "torch.bin.sampling_arguments",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        probs = torch.tensor([0.5, 0.5])
        torch.multinomial(probs, 3)
    """,
    ),
    (
        "randint_bounds",
        "torch.bin.sampling_arguments",
        "config",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.randint(5, 2, (3,))
    """,
    ),
    (
        "custom_backward_shape",
        "torch.bin.custom_function_backward",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch

        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return torch.ones(5)

        x = torch.randn(3, requires_grad=True)
        Double.apply(x).sum().backward()
    """,
    ),
    (
        "custom_backward_count",
        "torch.bin.custom_function_backward",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch

        class Mul(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, grad):
                return grad

        x = torch.randn(3, requires_grad=True)
        Mul.apply(x, x).sum().backward()
    """,
    ),
    (
        "igamma_grad",
        "torch.bin.derivative_not_implemented",
        "operator",
        "unsupported_op",
        "runtime",
        """
        import torch
        a = torch.rand(3, requires_grad=True) + 0.5
        x = torch.rand(3) + 0.5
        torch.igamma(a, x).sum().backward()
    """,
    ),
    (
        "complex_loss",
        "torch.bin.complex_backward",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        x = torch.randn(3, dtype=torch.cfloat, requires_grad=True)
        (x * 2).sum().backward()
    """,
    ),
    (
        "detach_view",
        "torch.bin.detach_view_inplace",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        w = torch.randn(4, requires_grad=True)
        y = w * 1
        y[:2].detach_()
    """,
    ),
    (
        "legacy_function",
        "torch.bin.legacy_autograd_function",
        "!environment",
        "runtime_error",
        "runtime",
        """
        import torch

        class Clip(torch.autograd.Function):
            def forward(self, x):
                return x.clamp(0, 1)

            def backward(self, g):
                return g

        Clip()(torch.randn(3))
    """,
    ),
    (
        "vmap_item",
        "torch.bin.vmap_data_dependent",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.func.vmap(lambda x: x.sum().item())(torch.randn(3, 2))
    """,
    ),
    (
        "vmap_nonzero",
        "torch.bin.vmap_data_dependent",
        "operator",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.func.vmap(lambda x: x.nonzero())(torch.randn(3, 3))
    """,
    ),
    (
        "vmap_out",
        "torch.bin.vmap_no_batching_rule",
        "!operator",
        "unsupported_op",
        "runtime",
        """
        import torch
        torch.func.vmap(lambda x: torch.add(x, 1, out=torch.empty(4)))(torch.randn(3, 4))
    """,
    ),
    (
        "pack_lengths_2d",
        "torch.bin.pack_lengths_tensor",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        from torch.nn.utils.rnn import pack_padded_sequence
        batch = torch.randn(3, 5, 2)
        lengths = torch.tensor([[5, 3, 2]])
        pack_padded_sequence(batch, lengths, batch_first=True)
    """,
    ),
    (
        "pack_unsorted",
        "torch.bin.pack_lengths_unsorted",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        from torch.nn.utils.rnn import pack_padded_sequence
        pack_padded_sequence(torch.randn(3, 5, 2), torch.tensor([2, 5, 3]), batch_first=True)
    """,
    ),
    (
        "pack_empty",
        "torch.bin.pack_empty_sequence",
        "!dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        from torch.nn.utils.rnn import pack_padded_sequence
        pack_padded_sequence(torch.randn(3, 5, 2), torch.tensor([5, 3, 0]), batch_first=True)
    """,
    ),
    (
        "worker_unequal_samples",
        "torch.bin.collate_storage_resize",
        "!dataset",
        "runtime_error",
        "data",
        """
        import torch

        class Clips(torch.utils.data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return torch.zeros(5 if i == 0 else 3)

        if __name__ == "__main__":
            for batch in torch.utils.data.DataLoader(Clips(), batch_size=2, num_workers=1):
                pass
    """,
    ),
    (
        "cholesky_not_pd",
        "torch.bin.linalg_failure",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        cov = -torch.eye(3)
        torch.linalg.cholesky(cov)
    """,
    ),
    (
        "eigh_nan",
        "torch.bin.linalg_failure",
        "dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.linalg.eigh(torch.full((3, 3), float("nan")))
    """,
    ),
    (
        "deterministic_put",
        "torch.bin.deterministic_algorithms",
        "!config",
        "unsupported_op",
        "runtime",
        """
        import torch
        torch.use_deterministic_algorithms(True)
        torch.zeros(3).put_(torch.tensor([0, 0]), torch.ones(2), accumulate=False)
    """,
    ),
    (
        "onnx_opset",
        "torch.bin.onnx_unsupported_operator",
        "!operator",
        "unsupported_op",
        "compile",
        """
        import io
        import torch

        class Spectrum(torch.nn.Module):
            def forward(self, x):
                return torch.linalg.eigh(x)[0]

        torch.onnx.export(Spectrum(), (torch.randn(3, 3),), io.BytesIO(), dynamo=False, opset_version=9)
    """,
    ),
    (
        "assert_close_values",
        "torch.bin.testing_mismatch",
        "operator",
        "runtime_error",
        None,
        """
        import torch
        torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]))
    """,
    ),
    (
        "assert_close_dtype",
        "torch.bin.testing_mismatch",
        "!model",
        "runtime_error",
        None,
        """
        import torch
        torch.testing.assert_close(torch.zeros(2), torch.zeros(2, dtype=torch.float64))
    """,
    ),
    (
        "flip_by_slicing",
        "torch.bin.negative_slice_step",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        wave = torch.arange(5)
        reversed_wave = wave[::-1]
    """,
    ),
    (
        "rnn_hidden_device",
        "torch.bin.rnn_device",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        gru = torch.nn.GRU(2, 3)
        h0 = torch.zeros(1, 1, 3, device="meta")   # not on the input's device
        gru(torch.randn(4, 1, 2), h0)
    """,
    ),
    (
        "complex_nan_to_num",
        "torch.bin.complex_autograd_unsupported",
        "!operator",
        "unsupported_op",
        "runtime",
        """
        import torch
        z = torch.randn(4, dtype=torch.cfloat, requires_grad=True)
        torch.nan_to_num(z)               # no complex derivative listed for nan_to_num in torch 2.13
    """,
    ),
]

RUNNER = r"""
import os, runpy, sys, traceback
folder = sys.argv[1]
for name in sys.argv[2:]:
    with open(os.path.join(folder, name + ".err"), "w") as err:
        sys.stderr = err
        try:
            runpy.run_path(os.path.join(folder, name + ".py"), run_name="__main__")
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr = sys.__stderr__
"""


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    """Run every program as a file in one child interpreter and keep what each printed on stderr."""
    folder = tmp_path_factory.mktemp("torch_binary")
    for name, *_, body in CASES:
        (folder / f"{name}.py").write_text(textwrap.dedent(body))
    names = [c[0] for c in CASES]
    subprocess.run([sys.executable, "-c", RUNNER, str(folder), *names], cwd=folder, timeout=600, check=True)
    return {n: (folder / f"{n}.err").read_text() for n in names}


def test_every_rule_of_the_pack_has_a_real_case():
    assert {r.id for r in pack_rules(PACK)} == {c[1] for c in CASES}


@pytest.mark.parametrize(("name", "rule", "category", "type_", "stage", "body"), CASES, ids=[c[0] for c in CASES])
def test_the_family_is_read_from_real_torch_output(outputs, name, rule, category, type_, stage, body):
    text = outputs[name]
    assert "Traceback (most recent call last)" in text, text[-2000:]
    diag = diagnose(texts={"stderr": text}, exit_code=1)
    causes = [(c.rule, c.category, round(c.confidence, 2)) for c in diag.root_causes]
    assert fired(diag, rule), (text.strip().splitlines()[-1], causes)
    want = category.lstrip("!")
    if category.startswith("!"):
        assert top3(diag)[0] == want, causes
    else:
        assert want in top3(diag), causes
    assert diag.profile.type == type_, (diag.profile.type, causes)
    if stage is not None:
        assert diag.profile.stage == stage, (diag.profile.stage, causes)


@pytest.mark.parametrize(
    "name",
    [
        "pytorch/pytorch_complex_cumprod_no_autograd_support_complex_dtype",
        "pytorch/pytorch_complex_sigmoid_no_autograd_support_complex_dtype",
    ],
)
def test_a_missing_complex_derivative_is_the_operator_on_train_logs(name):
    diag, label = train_log_led_by(name, "torch.bin.complex_autograd_unsupported")
    assert label["category"] == "operator"
    assert diag.profile.type == "unsupported_op"
