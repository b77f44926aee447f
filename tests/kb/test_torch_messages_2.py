"""The 13-torch-messages-2 pack: PyTorch's own error messages (second harvest), each produced for real by a small
PyTorch-on-CPU program run in a child process, and diagnosed from the stderr it printed and its exit status."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb.kb_helpers import pack_rules, run_failing, top3

PACK = "13-torch-messages-2.toml"


def test_the_pack_loads_without_a_warning():
    mine = pack_rules(PACK)
    assert len(mine) >= 30
    for r in mine:
        assert r.keywords and r.causes, r.id
        assert all(len(k) >= 12 for k in r.keywords), r.id  # specific message text, never a common word


torch = pytest.importorskip("torch")

# (rule id, expected category among the top 3 (first if marked with "!"), expected type, expected stage or
# None, program)
CASES = [
    (
        "torch.msg2.ragged_sequence_to_tensor",
        "!dataset",
        "runtime_error",
        "data",
        """
        import torch

        class Tokens(torch.utils.data.Dataset):
            def __init__(self):
                self.ids = [[5, 8, 2], [7, 1]]
            def __len__(self):
                return 2
            def __getitem__(self, i):
                return torch.tensor(self.ids[i])

        def collate(batch):
            return torch.tensor([b.tolist() for b in batch])

        for batch in torch.utils.data.DataLoader(Tokens(), batch_size=2, collate_fn=collate):
            pass
    """,
    ),
    (
        "torch.msg2.non_numeric_to_tensor",
        "!dataset",
        "runtime_error",
        None,
        """
        import torch
        rows = [{"text": "a cat", "label": "cat"}, {"text": "a dog", "label": "dog"}]
        labels = torch.tensor([r["label"] for r in rows])
    """,
    ),
    (
        "torch.msg2.random_split_lengths",
        "!config",
        "runtime_error",
        "data",
        """
        import torch
        ds = torch.utils.data.TensorDataset(torch.randn(101, 3))
        n = len(ds)
        train, val = torch.utils.data.random_split(ds, [int(0.8 * n), int(0.2 * n)])
    """,
    ),
    (
        "torch.msg2.multinomial_zero_weights",
        "dataset",
        "runtime_error",
        None,
        """
        import torch
        labels = [0, 0, 1, 1]
        counts = {0: 2, 1: 2, 2: 0}
        weights = [0.0 if counts[2] == 0 else 1.0 for y in labels]
        sampler = torch.utils.data.WeightedRandomSampler(weights, num_samples=4)
        for batch in torch.utils.data.DataLoader(list(range(4)), sampler=sampler):
            pass
    """,
    ),
    (
        "torch.msg2.ce_target_layout",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        tagger = torch.nn.Sequential(torch.nn.Embedding(50, 16), torch.nn.Linear(16, 10))
        tokens = torch.randint(0, 50, (4, 7))
        tags = torch.randint(0, 10, (4, 7))
        torch.nn.functional.cross_entropy(tagger(tokens), tags)
    """,
    ),
    (
        "torch.msg2.spatial_target_dims",
        "dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        seg = torch.nn.Conv2d(3, 5, 1)
        images = torch.randn(2, 3, 8, 8)
        masks = torch.randint(0, 5, (2, 1, 8, 8))
        torch.nn.CrossEntropyLoss()(seg(images), masks)
    """,
    ),
    (
        "torch.msg2.bce_target_shape",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        head = torch.nn.Linear(8, 1)
        torch.nn.BCEWithLogitsLoss()(head(torch.randn(16, 8)), torch.randint(0, 2, (16,)).float())
    """,
    ),
    (
        "torch.msg2.padding_arguments",
        "config",
        "runtime_error",
        None,
        """
        import torch
        vocab_size, pad_id = 100, 100
        torch.nn.Embedding(vocab_size, 16, padding_idx=pad_id)
    """,
    ),
    (
        "torch.msg2.topk_k_too_large",
        "!config",
        "runtime_error",
        None,
        """
        import torch
        logits = torch.randn(8, 3)
        _, top5 = logits.topk(5, dim=1)
    """,
    ),
    (
        "torch.msg2.negative_dimension",
        "config",
        "runtime_error",
        None,
        """
        import torch
        cfg = {"hidden": 32, "num_labels": -1}
        torch.nn.Linear(cfg["hidden"], cfg["num_labels"])
    """,
    ),
    (
        "torch.msg2.tensor_to_python_scalar",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch
        loss = torch.nn.functional.mse_loss(torch.randn(4), torch.randn(4), reduction="none")
        print(loss.item())
    """,
    ),
    (
        "torch.msg2.empty_tensor_list",
        "dataset",
        "runtime_error",
        None,
        """
        import torch
        ds = torch.utils.data.TensorDataset(torch.randn(3, 2))
        outputs = [x for (x,) in torch.utils.data.DataLoader(ds, batch_size=4, drop_last=True)]
        torch.cat(outputs)
    """,
    ),
    (
        "torch.msg2.dataloader_iterator_in_child",
        "library",
        "runtime_error",
        None,
        """
        import os, torch

        if __name__ == "__main__":
            it = iter(torch.utils.data.DataLoader(list(range(100)), num_workers=1))
            next(it)
            pid = os.fork()
            if pid == 0:  # the child's copy of the iterator is cleaned up here
                del it
                os._exit(0)
            os.waitpid(pid, 0)
            raise SystemExit(1)
    """,
    ),
    (
        "torch.msg2.module_definition",
        "!model",
        "runtime_error",
        None,
        """
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 2)
            def foward(self, x):
                return self.fc(x)

        Net()(torch.randn(1, 4))
    """,
    ),
    (
        "torch.msg2.optimizer_construction",
        "!model",
        "runtime_error",
        "startup",
        """
        import torch
        w = torch.randn(3, requires_grad=True)
        torch.optim.SGD(w, lr=0.1)
    """,
    ),
    (
        "torch.msg2.sparse_gradients_dense_optimizer",
        "model",
        "runtime_error",
        "runtime",
        """
        import torch
        emb = torch.nn.Embedding(10, 3, sparse=True)
        opt = torch.optim.Adam(emb.parameters())
        emb(torch.tensor([1, 2])).sum().backward()
        opt.step()
    """,
    ),
    (
        "torch.msg2.onecycle_total_steps",
        "!config",
        "runtime_error",
        "runtime",
        """
        import torch
        w = torch.nn.Parameter(torch.randn(2))
        opt = torch.optim.SGD([w], lr=0.1)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=2, steps_per_epoch=3)
        for epoch in range(3):
            for step in range(3):
                opt.step()
                sched.step()
    """,
    ),
    (
        "torch.msg2.requires_grad_misuse",
        "!model",
        "runtime_error",
        None,
        """
        import torch
        token_ids = torch.zeros(3, dtype=torch.long, requires_grad=True)
    """,
    ),
    (
        "torch.msg2.view_inplace",
        "!model",
        "runtime_error",
        None,
        """
        import torch
        x = torch.randn(2, 3, requires_grad=True).clone()
        a, b = x.unbind(0)
        a.mul_(2)
    """,
    ),
    (
        "torch.msg2.grad_output_shape",
        "!model",
        "runtime_error",
        None,
        """
        import torch
        x = torch.randn(3, requires_grad=True)
        (x * 2).backward(torch.ones(4))
    """,
    ),
    (
        "torch.msg2.checkpoint_inputs_without_grad",
        "config",
        "runtime_error",
        None,
        """
        import torch, torch.utils.checkpoint as cp
        embeddings = torch.nn.Embedding(10, 4).requires_grad_(False)
        block = torch.nn.Linear(4, 4)
        hidden = embeddings(torch.tensor([1, 2]))
        cp.checkpoint(block, hidden, use_reentrant=True).sum().backward()
    """,
    ),
    (
        "torch.msg2.checkpoint_recompute_mismatch",
        "!model",
        "runtime_error",
        "runtime",
        """
        import torch, torch.utils.checkpoint as cp
        calls = {"n": 2}

        def block(x):
            calls["n"] += 1  # state changed inside the checkpointed function
            z = x[: calls["n"]]
            return (z * z).sum()

        x = torch.randn(6, 4, requires_grad=True)
        cp.checkpoint(block, x, use_reentrant=False).backward()
    """,
    ),
    (
        "torch.msg2.save_parent_missing",
        "!config",
        "runtime_error",
        "checkpoint",
        """
        import torch
        torch.save(torch.nn.Linear(2, 2).state_dict(), "runs/exp1/epoch_1.pt")
    """,
    ),
    (
        "torch.msg2.save_write_failed",
        "!resource",
        "runtime_error",
        "checkpoint",
        """
        import torch
        # /dev/full accepts the open and fails every write with ENOSPC, as a full disk does
        torch.save({"w": torch.randn(1000)}, "/dev/full")
    """,
    ),
    (
        "torch.msg2.load_record_size",
        "!checkpoint",
        "runtime_error",
        "checkpoint",
        """
        import zipfile, torch
        torch.save(torch.randn(100), "full.pt")
        # a copy cut short: the tensor's data record loses its tail
        with zipfile.ZipFile("full.pt") as src, zipfile.ZipFile("cut.pt", "w", zipfile.ZIP_STORED) as dst:
            for name in src.namelist():
                data = src.read(name)
                dst.writestr(name, data[:100] if name.endswith("/data/0") else data)
        torch.load("cut.pt")
    """,
    ),
    (
        "torch.msg2.state_dict_used_as_module",
        "checkpoint",
        "runtime_error",
        "checkpoint",
        """
        import torch
        torch.save(torch.nn.Linear(2, 2).state_dict(), "model.pt")
        model = torch.load("model.pt")
        model.eval()
    """,
    ),
    (
        "torch.msg2.ddp_models_differ",
        "model",
        "runtime_error",
        "startup",
        """
        import os, torch, torch.distributed as dist, torch.multiprocessing as mp

        def run(rank):
            dist.init_process_group("gloo", init_method="file://" + os.path.abspath("pg"), rank=rank, world_size=2)
            layers = 2 if rank == 0 else 3
            model = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(layers)])
            torch.nn.parallel.DistributedDataParallel(model)

        if __name__ == "__main__":
            mp.spawn(run, nprocs=2)
    """,
    ),
    (
        "torch.msg2.ddp_static_graph_changed",
        "!config",
        "runtime_error",
        "runtime",
        """
        import os, torch, torch.distributed as dist
        dist.init_process_group("gloo", init_method="file://" + os.path.abspath("pg"), rank=0, world_size=1)

        class EarlyExit(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b, self.step = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), 0
            def forward(self, x):
                self.step += 1
                return self.a(x) if self.step > 1 else self.b(self.a(x))

        model = torch.nn.parallel.DistributedDataParallel(EarlyExit(), static_graph=True)
        for _ in range(3):
            model(torch.randn(1, 2)).sum().backward()
    """,
    ),
    (
        "torch.msg2.fsdp_no_accelerator",
        "environment",
        "runtime_error",
        "startup",
        """
        import os, torch, torch.distributed as dist
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        dist.init_process_group("gloo", init_method="file://" + os.path.abspath("pg"), rank=0, world_size=1)
        FSDP(torch.nn.Linear(2, 2))
    """,
    ),
    (
        "torch.msg2.store_connect_timeout",
        "!config",
        "communication",
        "startup",
        """
        import datetime, torch.distributed as dist
        # rank 1 of 2: nothing listens on the master's port
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:9", rank=1, world_size=2,
                                timeout=datetime.timedelta(seconds=3))
    """,
    ),
    (
        "torch.msg2.fx_trace_control_flow",
        "!model",
        "runtime_error",
        "compile",
        """
        import torch

        class Gate(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x
                return -x

        torch.fx.symbolic_trace(Gate())
    """,
    ),
    (
        "torch.msg2.torchscript_types",
        "!model",
        "runtime_error",
        "compile",
        """
        import torch

        class Scaled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.cfg = {"scale": object()}
            def forward(self, x):
                return x * self.cfg["scale"]

        torch.jit.script(Scaled())
    """,
    ),
    (
        "torch.msg2.torchscript_types",
        "!model",
        "runtime_error",
        "compile",
        """
        import torch

        @torch.jit.script
        def scale(x, factor=2):
            return x * factor
    """,
    ),
    (
        "torch.msg2.jit_trace_values",
        "!model",
        "runtime_error",
        "compile",
        """
        import torch

        class Detector(torch.nn.Module):
            def forward(self, x):
                return {"boxes": x, "meta": [x, 1]}

        torch.jit.trace(Detector(), torch.randn(2))
    """,
    ),
    (
        "torch.msg2.dynamo_user_error",
        "!model",
        "runtime_error",
        "compile",
        """
        import torch
        torch.export.export(torch.nn.Linear(2, 2), torch.randn(2))
    """,
    ),
    (
        "torch.msg2.quantized_float_mixup",
        "!model",
        "runtime_error",
        None,
        """
        import torch

        class Residual(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = torch.ao.quantization.QuantStub()
                self.conv = torch.nn.Conv2d(3, 3, 1)
                self.dequant = torch.ao.quantization.DeQuantStub()
            def forward(self, x):
                x = self.quant(x)
                return self.dequant(self.conv(x) + x)

        m = Residual().eval()
        m.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm")
        torch.ao.quantization.prepare(m, inplace=True)
        m(torch.randn(1, 3, 4, 4))
        torch.ao.quantization.convert(m, inplace=True)
        m(torch.randn(1, 3, 4, 4))
    """,
    ),
    (
        "torch.msg2.quantized_engine",
        "environment",
        "runtime_error",
        None,
        """
        import torch
        torch.backends.quantized.engine = "none"
    """,
    ),
    (
        "torch.msg2.nested_tensor_sizes",
        "model",
        "runtime_error",
        None,
        """
        import torch
        batch = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
        print(batch.size())
    """,
    ),
    (
        "torch.msg2.sparse_no_strides",
        "!model",
        "runtime_error",
        None,
        """
        import torch
        adj = torch.randn(3, 3).to_sparse_csr()
        adj.stride()
    """,
    ),
]


def _run(tmp_path: Path, body: str, timeout: float = 240):
    return run_failing(tmp_path, body, as_file=True, timeout=timeout)


@pytest.mark.parametrize("rule,category,type_,stage,body", CASES, ids=[c[0].removeprefix("torch.msg2.") for c in CASES])
def test_it_diagnoses_a_real_pytorch_error(tmp_path, rule, category, type_, stage, body):
    d, stderr = _run(tmp_path, body)
    fired = [c.rule for c in d.root_causes]
    assert rule in fired, (fired, stderr[-1500:])
    causes = [(c.rule, c.id, c.category) for c in d.root_causes[:4]]
    if category.startswith("!"):
        assert top3(d)[0] == category[1:], causes
    else:
        assert category[0:] in top3(d), causes
    assert d.profile.type == type_
    if stage:
        assert d.profile.stage == stage
