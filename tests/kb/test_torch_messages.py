"""The 12-torch-messages pack: PyTorch's own error messages, each produced for real by a small PyTorch-on-CPU
program in a child process and diagnosed from the stderr it printed and its exit status."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.kb.kb_helpers import pack_rules, run_failing

PACK = "12-torch-messages.toml"


def test_the_pack_loads_without_a_warning():
    mine = pack_rules(PACK)
    assert len(mine) >= 25
    for r in mine:
        assert r.keywords and r.causes, r.id
        assert all(len(k) >= 12 for k in r.keywords), r.id  # specific message text, never a common word


torch = pytest.importorskip("torch")

# (rule id, expected category among the top 3, expected type, expected stage or None, program)
CASES = [
    (
        "torch.msg.view_stride",
        "model",
        "runtime_error",
        "runtime",
        """
        import torch
        torch.randn(4, 6).t().view(24)
    """,
    ),
    (
        "torch.msg.input_too_small",
        "model",
        "runtime_error",
        "runtime",
        """
        import torch
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 5))
        net(torch.randn(2, 3, 8, 8))
    """,
    ),
    (
        "torch.msg.batchnorm_single_value",
        "config",
        "runtime_error",
        "runtime",
        """
        import torch
        net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8))
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(9, 4)), batch_size=4)
        for (x,) in loader:
            net(x)
    """,
    ),
    (
        "torch.msg.bce_target_range",
        "dataset",
        "runtime_error",
        "runtime",
        """
        import torch
        probs = torch.sigmoid(torch.randn(4, 1, 8, 8))
        masks = torch.randint(0, 2, (4, 1, 8, 8)).float() * 255
        torch.nn.BCELoss()(probs, masks)
    """,
    ),
    (
        "torch.msg.index_dtype",
        "model",
        "runtime_error",
        "runtime",
        """
        import torch
        emb = torch.nn.Embedding(100, 16)
        emb(torch.Tensor([[1, 2, 3]]))
    """,
    ),
    (
        "torch.msg.inference_tensor",
        "model",
        "runtime_error",
        "runtime",
        """
        import torch
        layer = torch.nn.Linear(4, 4)
        with torch.inference_mode():
            cached = torch.randn(2, 4)
        layer(cached).sum().backward()
    """,
    ),
    (
        "torch.msg.meta_tensor_copy",
        "model",
        "runtime_error",
        None,
        """
        import torch
        with torch.device("meta"):
            net = torch.nn.Linear(8, 8)
        net.to("cpu")
    """,
    ),
    (
        "torch.msg.optimizer_state_mismatch",
        "checkpoint",
        "runtime_error",
        "checkpoint",
        """
        import torch
        old = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
        torch.save({"optim": torch.optim.AdamW(old.parameters()).state_dict()}, "ckpt.pt")
        new = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
        torch.optim.AdamW(new.parameters()).load_state_dict(torch.load("ckpt.pt")["optim"])
    """,
    ),
    (
        "torch.msg.grad_scaler_usage",
        "model",
        "runtime_error",
        "runtime",
        """
        import torch
        net = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        loss = net(torch.randn(8, 4)).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        scaler.unscale_(opt)
    """,
    ),
    (
        "torch.msg.dataloader_arguments",
        "config",
        "runtime_error",
        "data",
        """
        import torch
        ds = torch.utils.data.TensorDataset(torch.randn(8, 2))
        torch.utils.data.DataLoader(ds, shuffle=True, sampler=torch.utils.data.RandomSampler(ds))
    """,
    ),
    (
        "torch.msg.collate_type",
        "dataset",
        "runtime_error",
        "data",
        """
        import torch

        class Images(torch.utils.data.Dataset):
            def __len__(self):
                return 4
            def __getitem__(self, i):
                return None if i == 2 else torch.zeros(3)

        for batch in torch.utils.data.DataLoader(Images(), batch_size=4):
            pass
    """,
    ),
    (
        "torch.msg.unpicklable_worker_state",
        "model",
        "runtime_error",
        None,
        """
        import torch

        class Shapes(torch.utils.data.Dataset):
            def __init__(self):
                self.transform = lambda x: x * 2
            def __len__(self):
                return 4
            def __getitem__(self, i):
                return self.transform(torch.tensor(float(i)))

        if __name__ == "__main__":
            list(torch.utils.data.DataLoader(Shapes(), num_workers=1, multiprocessing_context="spawn"))
    """,
    ),
    (
        "torch.msg.not_a_checkpoint_file",
        "checkpoint",
        "runtime_error",
        "checkpoint",
        """
        import torch
        with open("model.pt", "w") as f:
            f.write("version https://git-lfs.github.com/spec/v1\\noid sha256:" + "0" * 64 + "\\nsize 4096\\n")
        torch.load("model.pt")
    """,
    ),
    (
        "torch.msg.load_device_unavailable",
        "checkpoint",
        "runtime_error",
        "checkpoint",
        """
        # a checkpoint written on a GPU machine: the storages carry the location tag 'cuda:0'
        import io, zipfile, torch
        torch.save({"w": torch.randn(3)}, "gpu.pt")
        src, out = zipfile.ZipFile("gpu.pt"), io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                data = src.read(info.filename)
                if info.filename.endswith("data.pkl"):
                    data = data.replace(b"X\\x03\\x00\\x00\\x00cpu", b"X\\x06\\x00\\x00\\x00cuda:0")
                dst.writestr(info, data)
        open("gpu.pt", "wb").write(out.getvalue())
        torch.load("gpu.pt")
    """,
    ),
    (
        "torch.msg.hub_hash_mismatch",
        "checkpoint",
        "runtime_error",
        "checkpoint",
        """
        import pathlib, torch
        src = pathlib.Path("resnet-1234abcd.pth").resolve()
        src.write_bytes(b"partial download")
        torch.hub.download_url_to_file(src.as_uri(), "copy.pth", hash_prefix="1234abcd", progress=False)
    """,
    ),
    (
        "torch.msg.ddp_unused_parameters",
        "config",
        "runtime_error",
        "runtime",
        """
        import os, torch, torch.distributed as dist
        dist.init_process_group("gloo", init_method="file://" + os.path.abspath("pg"), rank=0, world_size=1)

        class TwoHeads(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = torch.nn.Linear(4, 4)
                self.aux_head = torch.nn.Linear(4, 2)
            def forward(self, x):
                return self.body(x)

        model = torch.nn.parallel.DistributedDataParallel(TwoHeads())
        for _ in range(2):
            model(torch.randn(2, 4)).sum().backward()
    """,
    ),
    (
        "torch.msg.data_dependent_guard",
        "model",
        "runtime_error",
        "compile",
        """
        import torch

        class Gate(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x

        torch.export.export(Gate(), (torch.randn(3),))
    """,
    ),
]


def _run(tmp_path: Path, body: str, timeout: float = 240):
    return run_failing(tmp_path, body, as_file=False, timeout=timeout)


@pytest.mark.parametrize("rule,category,type_,stage,body", CASES, ids=[c[0].removeprefix("torch.msg.") for c in CASES])
def test_it_diagnoses_a_real_pytorch_error(tmp_path, rule, category, type_, stage, body):
    d, stderr = _run(tmp_path, body)
    fired = [c.rule for c in d.root_causes]
    assert rule in fired, (fired, stderr[-1500:])
    assert category in [c.category for c in d.root_causes[:3]], [(c.rule, c.id, c.category) for c in d.root_causes]
    assert d.profile.type == type_
    if stage:
        assert d.profile.stage == stage


def test_a_worker_that_cannot_import_an_interactive_main_is_a_start_method_problem(tmp_path):
    """Classes defined in `python -c` (or a notebook) do not exist in a spawned DataLoader worker."""
    d, stderr = _run(
        tmp_path,
        """
        import torch, torch.multiprocessing as mp
        mp.set_start_method("spawn", force=True)

        class Numbers(torch.utils.data.Dataset):
            def __len__(self):
                return 4
            def __getitem__(self, i):
                return i

        list(torch.utils.data.DataLoader(Numbers(), num_workers=1))
    """,
    )
    fired = {c.rule for c in d.root_causes}
    assert {"torch.msg.spawn_main_unimportable", "torch.msg.dataloader_worker_exit_code"} & fired, stderr[-1500:]
    assert "model" in [c.category for c in d.root_causes[:3]]
    assert d.profile.stage == "data"


def test_a_missing_numpy_is_an_environment_problem(tmp_path):
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("NumPy is installed here: torch can convert tensors")
    d, _ = _run(
        tmp_path,
        """
        import torch
        torch.randn(3).numpy()
    """,
    )
    assert d.root_causes[0].rule == "torch.msg.numpy_unavailable"
    assert d.root_causes[0].category == "environment"


def test_a_torch_build_without_nccl_is_an_environment_problem(tmp_path):
    import torch.distributed as dist

    if not dist.is_available() or dist.is_nccl_available():
        pytest.skip("this torch build has NCCL")
    d, _ = _run(
        tmp_path,
        """
        import os, torch.distributed as dist
        dist.init_process_group("nccl", init_method="file://" + os.path.abspath("pg"), rank=0, world_size=1)
    """,
    )
    assert any(c.rule == "torch.msg.dist_backend_missing" for c in d.root_causes)
    assert d.root_causes[0].category == "environment"
    assert d.profile.stage == "startup"


def test_a_torchscript_program_loaded_without_its_custom_op_s_package_is_that_import(tmp_path):
    # a child registers an operator in Python (torch.library), scripts a module that calls it and saves it; a
    # second process loads the file without registering the operator: TorchScript finds no such op
    save = """
        import torch

        @torch.library.custom_op("faildiag_demo::scale", mutates_args=())
        def scale(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        class M(torch.nn.Module):
            def forward(self, x):
                return torch.ops.faildiag_demo.scale(x)

        torch.jit.save(torch.jit.script(M()), "m.pt")
    """
    (tmp_path / "save.py").write_text(textwrap.dedent(save))
    subprocess.run([sys.executable, "save.py"], cwd=tmp_path, check=True, capture_output=True, timeout=240)
    diag, err = run_failing(tmp_path, 'import torch\ntorch.jit.load("m.pt")\n')
    assert "Unknown builtin op: faildiag_demo::scale" in err
    first = diag.root_causes[0]
    assert (first.rule, first.category) == ("torch.msg.torchscript_custom_op_unregistered", "model")
    assert diag.profile.type == "unsupported_op"


def test_a_pytorch_call_torchscript_does_not_bind_is_torchscript_s_coverage(tmp_path):
    # the legacy torch.Tensor() constructor runs eagerly; TorchScript has no builtin for it (it suggests
    # aten::tensor). Scripting needs the source, so the program runs from a file.
    body = """
        import torch

        def make(x):
            return torch.Tensor()

        torch.jit.script(make)
    """
    diag, err = run_failing(tmp_path, body, as_file=True)
    assert "Unknown builtin op: aten::Tensor" in err
    assert diag.root_causes[0].rule == "torch.msg.torchscript_builtin_unbound"
    assert {c.category for c in diag.root_causes[:2]} == {"library", "model"}
    assert (diag.profile.type, diag.profile.stage) == ("unsupported_op", "compile")
