"""Hugging Face libraries' own raise messages, khf2 round (43-hf-catalogue.toml).

Each rule is shown on output produced for real by transformers 5.24 / datasets 5.2 / safetensors 0.8 /
tokenizers 0.23 on a CPU-only machine (offline; small models built from configs, tokenizers from an in-memory
vocabulary), plus transformers 4.40 reading Llama 3.1's config and datasets 3.6 reading a folder saved by datasets
5.2. The code that produced each log is kept beside it in tests/data/kb/hf_catalogue/labels.json; only the
environments' directories were renamed.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids
from tests.kb.kb_helpers import check_labelled_log, check_text_alone, fired, ids_in_other_packs

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "hf_catalogue"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "43-hf-catalogue.toml"
DOC = json.loads((DATA / "labels.json").read_text())
LABELS = DOC["logs"]
MERGED = DOC["merged"]
RULES = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}


def test_every_rule_loads_and_has_a_real_log():
    assert RULES <= loaded_rule_ids()
    assert {lab["rule"] for lab in LABELS + MERGED} == RULES


def test_no_other_pack_has_the_same_ids():
    assert not RULES & ids_in_other_packs(PACK)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_puts_the_message_where_the_library_says_it_belongs(label):
    check_labelled_log(DATA, label)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_reads_the_log_from_its_text_alone(label):
    diag = check_text_alone(DATA, label)
    assert diag.root_causes[0].category == label["category"]


@pytest.mark.parametrize("label", MERGED, ids=lambda lab: lab["log"][:-4])
def test_a_rule_that_merges_with_the_chained_one(label):
    # the whole log: the chained exception's rule carries the same cause, first
    diag = diagnose([str(DATA / label["log"])], exit_code=label["exit_code"])
    assert (diag.root_causes[0].rule, diag.root_causes[0].category) == (label["merged_into"], label["category"])
    # the last exception alone, as an excerpt shows it: this rule
    text = (DATA / label["log"]).read_text()
    last = [ln for ln in text.splitlines() if ln and not ln.startswith(" ")][-1]
    alone = _diag(last + "\n")
    assert (alone.root_causes[0].rule, alone.root_causes[0].category) == (label["rule"], label["category"])


def _diag(text: str):
    return diagnose(texts={"stderr": text}, exit_code=1)


def test_older_release_wordings_of_the_same_checks():
    # transformers 4.3x's Trainer said it with args.max_steps; 4.3x's Llama config had "with with"
    old_steps = (
        "ValueError: args.max_steps must be set to a positive value if dataloader does not have a length, was -1\n"
    )
    assert fired(_diag(old_steps), "hf.trainer_unsized_dataset_needs_max_steps")
    typo = "ValueError: `rope_scaling` must be a dictionary with with two fields, `type` and `factor`, got {'rope_type': 'llama3'}\n"
    diag = _diag(typo)
    assert fired(diag, "hf.rope_scaling_newer_format")
    assert diag.root_causes[0].category == "environment"


def test_lookalikes_stay_out():
    # Python's json says "Expecting value"; only serde_json's lower-case wording is the tokenizers file's
    py_json = "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
    assert not fired(_diag(py_json), "tokenizers.file_not_json")
    # pydantic-core also parses with serde's words, inside its own validation report
    pyd = "  Invalid JSON: expected value at line 1 column 1 [type=json_invalid, input_value='x', input_type=str]\n"
    assert not fired(_diag(pyd), "tokenizers.file_not_json")
    # TensorRT's builder names its IBuilderConfig, not a datasets configuration
    trt = "[TRT] [BuilderConfig] Try decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().\n"
    assert not fired(_diag(trt), "datasets.config_name_required")
    # another ArrowInvalid about a column is not a row-count mismatch
    arrow = "pyarrow.lib.ArrowInvalid: Column 1: In chunk 0: Invalid: Length spanned by list offsets (4) larger than values array\n"
    assert not fired(_diag(arrow), "datasets.map_batched_row_count")


def test_the_auto_config_table_only_at_its_lookup():
    # from_pretrained's own frame in configuration_auto.py is every AutoConfig failure's; only the table's
    # __getitem__ frame says the model type was looked up and missing
    other = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/env/lib/python3.11/site-packages/transformers/models/auto/configuration_auto.py", line 957, in from_pretrained\n'
        "    config_dict, unused_kwargs = PretrainedConfig.get_config_dict(pretrained_model_name_or_path, **kwargs)\n"
        "OSError: Incorrect path_or_model_id: './missing'. Please provide either the path to a local folder or the repo_id of a model on the Hub.\n"
    )
    assert not fired(_diag(other), "hf.auto_config_keyerror")
    # "not a string" inside another message is not sentencepiece's bare TypeError
    assert not fired(
        _diag("TypeError: expected str, bytes or os.PathLike object, not a string subclass\n"),
        "sentencepiece.model_file_missing",
    )
