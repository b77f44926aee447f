"""ktorch7: PyTorch's own Python-side messages that the earlier packs did not know (16-torch-messages-3), each
produced for real by a small PyTorch-on-CPU program run in a child process; and the reasoning's contexts for
PyTorch's state-dict report, its Windows DLL loader and cpp_extension's toolkit check, shown on train logs with
the rules that explained them left out."""

from __future__ import annotations

import pytest

from tests.kb.kb_helpers import (
    context_checks,
    fired,
    pack_rules,
    run_failing,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

PACK = "16-torch-messages-3.toml"


def test_the_pack_loads_without_a_warning():
    mine = pack_rules(PACK)
    assert len(mine) >= 12
    for r in mine:
        assert r.keywords and r.causes, r.id
        assert all(len(k) >= 20 for k in r.keywords), r.id


# --- the reasoning's contexts (05-reasoning.toml, ktorch7), on train logs without their rules ---


@pytest.mark.parametrize(
    "name",
    [
        "pytorch/deepthinking_state_dict_dataparallel_module_prefix",
        "pytorch/pt_gi4_enet_load_state_dict_size_mismatch_test_script_wrong_num_classes",
    ],
)
def test_state_dict_report_names_the_model_and_the_checkpoint(name):
    diag, label = train_log_without_rules(name)
    assert label["category"] == "model"
    assert context_checks(diag, "model").get("context:cue:state_dict_sides") == "passed"
    assert "model" in top3(diag) and "checkpoint" in top3(diag), top3(diag)


@pytest.mark.parametrize(
    "name", ["environment/torch_win_fbgemm_dll_libomp_missing", "environment/pt_win_fbgemm_dll_torch240_regression"]
)
def test_a_wheel_dll_dependency_not_found_keeps_the_release(name):
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert context_checks(diag, "library").get("context:cue:wheel_dll_dependency") == "passed"
    assert top3(diag)[:2] in (["environment", "library"], ["library", "environment"]), top3(diag)
    assert "resource" not in top3(diag)[:2]


def test_cuda_home_unset_is_the_runs_setting():
    diag, label = train_log_without_rules("environment/torch_cpp_extension_cuda_home_unset")
    assert label["category"] == "config"
    assert context_checks(diag, "config").get("context:cue:toolkit_home_unset") == "passed"
    assert "config" in top3(diag), top3(diag)
    diag, _ = train_log_with_rules("environment/torch_cpp_extension_cuda_home_unset")
    assert "config" in top3(diag), top3(diag)


def test_paging_file_too_small_is_not_read_as_a_missing_dependency():
    # WinError 1455 (the paging file) is a resource that ran out, not a DLL not found (WinError 126)
    from pytest_faildiag.engine.api import diagnose

    msg = (
        "Traceback (most recent call last):\n"
        '  File "C:\\Users\\user\\train.py", line 1, in <module>\n'
        "    import torch\n"
        "OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
        '"C:\\Users\\user\\venv\\Lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.\n'
    )
    diag = diagnose(texts={"stderr": msg}, exit_code=1)
    assert "context:cue:wheel_dll_dependency" not in context_checks(diag, "library")


# --- the pack, on real runs of torch on the CPU ---

torch = pytest.importorskip("torch")

# one scaled backward and optimizer step (the program then misuses the scaler)
SCALED_STEP = """
import torch
m = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
loss = m(torch.ones(3, 2)).sum()
scaler.scale(loss).backward()
scaler.step(opt)
"""

# (rule id, expected category among the top 3 (first if marked with "!"), program)
CASES = [
    # a GradScaler asked to step, or to unscale, an optimizer it already stepped this iteration
    *(
        ("torch.py.grad_scaler_order", "!model", SCALED_STEP + again)
        for again in ("scaler.step(opt)\n", "scaler.unscale_(opt)\n")
    ),
    (
        "torch.py.grad_scaler_closure",
        "!model",
        """
        import torch
        m = torch.nn.Linear(2, 1)
        opt = torch.optim.LBFGS(m.parameters())
        scaler = torch.amp.GradScaler("cpu")
        def closure():
            opt.zero_grad()
            loss = m(torch.ones(3, 2)).sum()
            scaler.scale(loss).backward()
            return loss
        scaler.step(opt, closure=closure)
        """,
    ),
    (
        "torch.py.grad_scaler_empty_state",
        "!checkpoint",
        """
        import torch
        saved = torch.amp.GradScaler("cpu", enabled=False).state_dict()
        torch.amp.GradScaler("cpu").load_state_dict(saved)
        """,
    ),
    (
        "torch.py.dataset_getitem_missing",
        "!model",
        """
        import torch
        class Pairs(torch.utils.data.Dataset):
            def __len__(self):
                return 4
            def get_item(self, i):
                return i
        for batch in torch.utils.data.DataLoader(Pairs(), batch_size=2):
            pass
        """,
    ),
    (
        "torch.py.tensordataset_size_mismatch",
        "!dataset",
        """
        import torch
        x = torch.zeros(10, 3)
        y = torch.zeros(9)
        ds = torch.utils.data.TensorDataset(x, y)
        """,
    ),
    (
        "torch.py.optimizer_params_set",
        "!model",
        """
        import torch
        m = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD([{"params": set(m.parameters())}], lr=0.1)
        """,
    ),
    (
        "torch.py.fused_optimizer_params",
        "config",
        """
        import torch
        p = torch.nn.Parameter(torch.ones(2, device="meta"))
        p.grad = torch.ones(2, device="meta")
        opt = torch.optim.Adam([p], fused=True)
        opt.step()
        """,
    ),
    (
        "torch.py.weights_only_format",
        "checkpoint",
        """
        import torch
        scripted = torch.jit.script(torch.nn.Linear(2, 1))
        torch.jit.save(scripted, "m.pt")
        torch.load("m.pt", weights_only=True)
        """,
    ),
]


@pytest.mark.parametrize(("rule", "category", "body"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_it_diagnoses_a_real_pytorch_error(tmp_path, rule, category, body):
    d, stderr = run_failing(tmp_path, body)
    assert fired(d, rule), ([c.rule for c in d.root_causes], stderr[-1500:])
    causes = [(c.rule, c.id, c.category) for c in d.root_causes[:4]]
    if category.startswith("!"):
        assert top3(d)[0] == category[1:], causes
    else:
        assert category in top3(d), causes
