"""Hugging Face Hub access and release skew (47-hf-dynamo-catalogue.toml, section "khub").

Each rule is shown on output produced for real by huggingface_hub 2.4 / transformers 5.24 / datasets 5.2 in a
scratch environment (tests/data/kb/hub_messages/labels.json keeps the code of each log and how the Hub's
answers were stood in for), and on the train logs of the thread corpus that carry the same messages.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import loaded_rule_ids
from tests.kb.kb_helpers import check_labelled_log, fired, ids_in_other_packs, top3, train_log_path

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "hub_messages"
PACK = Path(__file__).resolve().parents[2] / "pytest_faildiag" / "rules" / "47-hf-dynamo-catalogue.toml"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]
KHUB = {
    "hub.gated_repo",
    "hub.gated_repo_not_authenticated",
    "hub.gated_repo_access_not_granted",
    "hub.repository_not_found",
    "hf.config_load_wrapped_error",
    "hub.deprecated_download_argument_fatal",
    "hf.trainingargs_unknown_option",
    "datasets.fsspec_release_skew",
}

# train log, the rule that must fire, the category it must put first (None: among the first three), the stage
TRAIN = [
    # huggingface_hub 0.23's FutureWarning on resume_download, fatal under the datasets CI's filterwarnings
    (
        "pytorch/hf_hub_0230_resume_download_futurewarning_ci",
        "hub.deprecated_download_argument_fatal",
        "library",
        "runtime",
    ),
    # the same warning inside from_pretrained, which transformers wraps into "Can't load the configuration"
    (
        "pytorch/hf_hub_resume_download_futurewarning_oserror_pytest",
        "hf.config_load_wrapped_error",
        "library",
        "runtime",
    ),
    # the Hub's 401 sentence for an anonymous request to a gated repo
    (
        "environment/env_hf_gated_repo_401_flux_access_not_granted",
        "hub.gated_repo_not_authenticated",
        "environment",
        "checkpoint",
    ),
    ("environment/hf_gated_repo_not_logged_in", "hub.gated_repo_not_authenticated", "environment", None),
    # transformers' wrapper alone: no token and licence not accepted stay side by side
    ("pytorch/hf_hub_gated_repo_license_not_accepted", "hub.gated_repo", None, "checkpoint"),
    # a project pin older than the script's eval_strategy
    (
        "pytorch/hf_trainingargs_eval_strategy_old_transformers_pin",
        "hf.trainingargs_unknown_option",
        "environment",
        "startup",
    ),
    # datasets 2.14 with fsspec 2023.10
    (
        "pytorch/py_datasets_cached_localfilesystem_not_supported_fsspec_2023_10",
        "datasets.fsspec_release_skew",
        "library",
        "data",
    ),
]


def test_the_rules_load_and_each_has_a_real_log():
    in_pack = {r["id"] for r in tomllib.loads(PACK.read_text())["rule"]}
    assert KHUB <= in_pack
    assert KHUB <= loaded_rule_ids()
    shown = {lab["rule"] for lab in LABELS} | {rule for _, rule, _, _ in TRAIN}
    assert KHUB <= shown, KHUB - shown


def test_no_other_pack_has_the_same_ids():
    assert not KHUB & ids_in_other_packs(PACK)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_it_puts_the_message_where_the_library_says_it_belongs(label):
    diag = check_labelled_log(DATA, label)
    if "stage" in label:
        assert diag.profile.stage == label["stage"]


@pytest.mark.parametrize("name,rule,category,stage", TRAIN, ids=[t[0].split("/")[1][:60] for t in TRAIN])
def test_train_logs(name, rule, category, stage):
    diag = diagnose([str(train_log_path(name))])
    assert fired(diag, rule), [rc.rule for rc in diag.root_causes]
    assert diag.profile.type == "runtime_error"
    if category is None:
        assert {"environment", "config"} <= set(top3(diag)), top3(diag)
    else:
        assert diag.root_causes[0].category == category, [(rc.rule, rc.category) for rc in diag.root_causes[:4]]
    if stage is not None:
        assert diag.profile.stage == stage


def test_the_generic_access_rule_yields_to_the_hubs_own_answer():
    """45-ecosystem's hub.access_denied guessed a missing token first for every refusal; where the Hub's
    answer says more, the catalogue's reading stands alone."""
    for log in ("hub_repo_not_found_hf_hub_download.log", "hub_gated_not_authorized_hf_hub_download.log"):
        diag = diagnose([str(DATA / log)], exit_code=1)
        assert not fired(diag, "hub.access_denied")
        assert diag.root_causes[0].category == "config"


def test_a_printed_deprecation_that_did_not_end_the_run_is_not_read_as_the_failure():
    """The warning is printed (path:line: UserWarning: ...), the run then fails on a server error."""
    text = (DATA / "hub_resume_download_warning_not_fatal.log").read_text()
    assert "UserWarning: The `resume_download` argument is deprecated" in text
    diag = diagnose([str(DATA / "hub_resume_download_warning_not_fatal.log")], exit_code=1)
    assert not fired(diag, "hub.deprecated_download_argument_fatal")
    assert diag.root_causes[0].category == "environment"
