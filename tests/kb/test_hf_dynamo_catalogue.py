"""Pack 47 (Dynamo's graph-break catalogue, recompile limits, Hugging Face messages): each rule is shown on
output produced for real. The logs under tests/data/kb/hf_dynamo_catalogue/ were printed by child processes:
dynamo_* by torch 2.13 on the CPU (torch.compile), hf_*/datasets_* by transformers 5.24 / datasets 5.2 in a
separate environment without torch or pillow (offline, local files only); only the install and project
paths were replaced. One test runs a failing compile here with the installed torch, so a change of Dynamo's
wording shows up."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids
from tests.kb.test_hub_messages import KHUB

LOGS = Path(__file__).resolve().parents[1] / "data" / "kb" / "hf_dynamo_catalogue"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "47-hf-dynamo-catalogue.toml"


def test_the_pack_loads_without_warnings():
    assert {"dynamo.gb.fundamental", "dynamo.recompile_limit_failure"} <= loaded_rule_ids()


# log, the rule that must fire, the category the catalogue puts first
CASES = [
    # FUNDAMENTAL hint: a Python branch on a tensor's value -> the user's code
    ("dynamo_data_dependent_branch", "dynamo.gb.fundamental", "model"),
    # USER_ERROR hint (the code raises a TypeError of its own) -> the user's code, not Dynamo
    ("dynamo_user_code_typeerror", "dynamo.gb.user_error", "model"),
    # a C extension function Dynamo cannot see into -> the library side
    ("dynamo_untraceable_c_builtin", "dynamo.gb.untraceable_builtin", "library"),
    # SUPPORTABLE hint only (a class statement in the compiled region) -> a construct Dynamo does not support
    ("dynamo_class_definition_in_graph", "dynamo.gb.supportable", "library"),
    # torch._dynamo.graph_break() in a fullgraph=True function -> the code asks for the break
    ("dynamo_graph_break_call", "dynamo.gb.user_directed", "model"),
    # fail_on_recompile_limit_hit with a Python int that changes every call -> the code recompiles per call
    ("dynamo_recompile_limit_hard_failure", "dynamo.recompile_limit_failure", "model"),
]


@pytest.mark.parametrize(("name", "rule", "category"), CASES, ids=[c[0] for c in CASES])
def test_it_places_the_graph_break_where_the_catalogue_puts_it(name, rule, category):
    d = diagnose([str(LOGS / f"{name}.log")])
    cats = [c.category for c in d.root_causes]
    assert (d.profile.type, d.profile.stage) == ("runtime_error", "compile"), cats
    assert any(c.rule == rule for c in d.root_causes), [c.rule for c in d.root_causes]
    assert cats[0] == category, cats
    # the specific reading replaces the generic library-first torch.compile rule (its suppressed_by list)
    assert not any(c.rule == "torch.compile.error" for c in d.root_causes)


def test_a_graph_break_error_also_names_fullgraph_as_a_competing_cause():
    d = diagnose([str(LOGS / "dynamo_data_dependent_branch.log")])
    assert "config" in [c.category for c in d.root_causes[:3]]


def test_the_recompile_warning_does_not_take_over_a_failure_it_did_not_cause():
    """The limit warning only says the function now runs eagerly; the shape error after it is the failure."""
    d = diagnose([str(LOGS / "dynamo_recompile_warning_then_shape_error.log")])
    assert d.root_causes[0].rule == "torch.shape_mismatch"
    assert d.profile.stage == "runtime"
    warned = [c for c in d.root_causes if c.rule == "dynamo.recompile_limit_warning"]
    assert warned and warned[0].confidence < d.root_causes[0].confidence


def test_the_builtin_warning_of_a_run_without_fullgraph_is_not_a_failure():
    """Dynamo also warns (warn_once) about an untraceable builtin when it just falls back to eager: only the
    error form ('Explanation: ...') counts."""
    d = diagnose([str(LOGS / "dynamo_builtin_warning_then_shape_error.log")])
    assert not any(c.rule and c.rule.startswith("dynamo.") for c in d.root_causes)
    assert d.root_causes[0].rule == "torch.shape_mismatch"


def test_it_reads_a_data_dependent_branch_from_the_installed_torch(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "branchy.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch

            def relu_or_not(x):
                if x.mean() > 0:
                    return torch.relu(x)
                return x

            torch.compile(relu_or_not, fullgraph=True, backend="eager")(torch.randn(8))
            """
        )
    )
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode != 0, p.stdout + p.stderr
    d = diagnose(texts={"stderr.txt": p.stderr}, exit_code=p.returncode, command=f"python {script.name}")
    assert any(c.rule == "dynamo.gb.fundamental" for c in d.root_causes), p.stderr[-2000:]
    assert d.root_causes[0].category == "model"


def test_the_pack_carries_no_rule_without_a_test_here():
    """Every rule id of the pack is exercised above (or in the HF cases), so none rests on belief alone."""
    import tomllib

    ids = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}
    tested = {rule for _, rule, _ in CASES} | {"dynamo.recompile_limit_warning"} | set(HF_RULES)
    tested |= {"dynamo.unsupported_interpreter"}  # tests/kb/test_dynamo_interpreter.py
    tested |= {"dynamo.graph_break_handled"}  # tests/kb/test_kfp.py
    # round 2 (Hugging Face libraries' own checks) is exercised in tests/kb/test_hf_messages.py
    round2 = json.loads((LOGS.parent / "hf_messages" / "labels.json").read_text())["logs"]
    tested |= {lab["rule"] for lab in round2}
    # khub (Hub access, release skew) is exercised in tests/kb/test_hub_messages.py
    tested |= KHUB
    assert ids <= tested, ids - tested


HF_CASES = [
    # transformers' BACKENDS_MAPPING: an optional backend missing (pillow, torchvision, torch) -> environment
    ("hf_image_processor_without_pillow", "hf.requires_backend", "environment", "startup"),
    ("hf_model_without_torch", "hf.requires_backend", "environment", "startup"),
    # transformers 5 load report: a head of another size in the checkpoint, ignore_mismatched_sizes=False
    ("hf_head_size_mismatch_load_report", "hf.load_report_mismatch", "checkpoint", "checkpoint"),
    # datasets verification: the files hold other split sizes than the recorded dataset_info
    ("datasets_split_sizes_do_not_match", "datasets.verification_failed", "dataset", "data"),
    # transformers 5 wording of the custom-code refusal (35-system-catalogue's hub.trust_remote_code)
    ("hf_custom_code_without_trust_remote_code", "hub.trust_remote_code", "config", "startup"),
    # peft's NoMatchingPeftModuleError: Llama-style names on a BERT model -> the adapter configuration
    ("peft_target_modules_not_in_model", "peft.no_matching_target_modules", "config", "startup"),
    # a GPT-2 classification head, batch of 4, no pad_token_id in the config
    ("hf_batch_without_pad_token", "hf.no_pad_token_batch", "config", "runtime"),
    # Trainer on a dataset whose label column is named `target`: dropped as unused, no loss comes back
    ("hf_trainer_no_labels", "hf.trainer_no_loss", "dataset", "runtime"),
    # a batch of two sentences of different lengths, return_tensors='pt' without padding
    ("hf_tokenizer_ragged_batch", "hf.tokenizer_ragged_tensor", "config", "data"),
]
HF_RULES = [c[1] for c in HF_CASES] + ["datasets.no_data_files"]


def test_an_empty_data_directory_is_read_as_a_path_or_data_question():
    """An empty directory handed to load_dataset: the path (config) and the data's absence (dataset) are the
    two readings the message allows; both lead, nothing else."""
    d = diagnose([str(LOGS / "datasets_no_data_files.log")])
    assert (d.profile.type, d.profile.stage) == ("runtime_error", "data")
    assert d.root_causes[0].rule == "datasets.no_data_files"
    assert {c.category for c in d.root_causes[:2]} == {"config", "dataset"}


@pytest.mark.parametrize(("name", "rule", "category", "stage"), HF_CASES, ids=[c[0] for c in HF_CASES])
def test_it_reads_the_hugging_face_message_by_its_catalogue(name, rule, category, stage):
    d = diagnose([str(LOGS / f"{name}.log")])
    cats = [c.category for c in d.root_causes]
    assert (d.profile.type, d.profile.stage) == ("runtime_error", stage), cats
    assert d.root_causes[0].rule == rule, [c.rule for c in d.root_causes]
    assert cats[0] == category, cats


def test_the_newly_initialized_weights_report_is_not_the_failure():
    """The load report's MISSING rows (newly initialised head; 'Some weights ... were not initialized' before
    transformers 5) are a warning: the failure is the refused size mismatch that follows."""
    log = LOGS / "hf_head_size_mismatch_load_report.log"
    text = log.read_text()
    assert "newly initialized" in text
    d = diagnose([str(log)])
    top = d.root_causes[0]
    assert top.rule == "hf.load_report_mismatch"
    assert all("newly initialized" not in e.excerpt for e in top.evidence)


def test_the_missing_backend_summary_names_the_class_and_the_library():
    d = diagnose([str(LOGS / "hf_image_processor_without_pillow.log")])
    top = d.root_causes[0]
    assert "ViTImageProcessor needs" in top.summary
