"""Names that libraries deprecated for removal and then removed (issue 13, kremoved).

``rules/42-removed-apis.toml`` holds one rule per library whose patterns list only the names the library's own
deprecation text announced for removal (harvested from the release before the removal: pandas 0.25.3/1.5.3,
pytorch-lightning 1.3.8/1.9.5, huggingface_hub 0.25.2, transformers 4.46.3, diffusers 0.27.2, scikit-learn
1.1.3/1.5.2, networkx 2.8.8, SQLAlchemy 1.4.54, matplotlib 3.8.4, Werkzeug 2.3.8, MarkupSafe 2.0.1). The fact: the
installed release is newer than the code that calls the name, so the installed versions lead and the library whose
release still calls it and the program's own code are the differential. ``cue:removed_api`` (05-reasoning.toml,
``# --- kremoved ---``) reads the same catalogue's object-attribute forms ("'DataFrame' object has no attribute
'append'") that no other cue reads, so the reasoning alone puts the installed versions first there.

The fixtures under ``tests/data/kb/kremoved/`` are real output produced here: each program was run with the newer
release installed (``pip install --target`` of pandas 3.1, SQLAlchemy 2.1, matplotlib 3.11, huggingface_hub 2.4,
Werkzeug 3.1, MarkupSafe 3.0, scikit-learn 1.9, pytorch-lightning 2.6, transformers 5.24 and diffusers 0.42, and the
venv's networkx 3.6); the target folder is written as a ``site-packages`` folder and the machine's paths are
redacted (``/home/user/...``). ``pandas_typo.log`` is the control: the same pandas AttributeError for a name pandas
never had.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from bench.ablate_rules import dropping
from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    context_facts,
    fired,
    pack_rules,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

PACK = "42-removed-apis.toml"
CUE = "cue:removed_api"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kremoved"


def _diagnose(name: str, *, without_pack: bool = False):
    log = DATA / f"{name}.log"
    drop = {r.id for r in pack_rules(PACK)} if without_pack else set()
    with warnings.catch_warnings(), dropping(drop):
        warnings.simplefilter("ignore")
        return diagnose([str(log)], exit_code=1)


def test_pack_rules_lead_with_the_installed_versions() -> None:
    """Every rule: the installed release newer than the code first, a library's release and the program's code
    as the differential."""
    rules = pack_rules(PACK)
    assert len(rules) == 10, [r.id for r in rules]
    for r in rules:
        cats = {c.category: c.confidence for c in r.causes}
        assert set(cats) == {"environment", "library", "model"}, (r.id, cats)
        assert cats["environment"] > max(cats["library"], cats["model"]), (r.id, cats)


# (fixture, rule, the cue reads its object-attribute form)
REAL_RUNS = [
    ("pandas_append", "removed.pandas", True),
    ("lightning_accelerator_backend", "removed.lightning", True),
    ("lightning_gpus", "removed.lightning", False),
    ("hub_cached_download", "removed.huggingface_hub", False),
    ("transformers_adamw", "removed.transformers", False),
    ("transformers_use_auth_token", "removed.transformers", False),
    ("transformers_trainer_tokenizer", "removed.transformers", False),
    ("diffusers_unet_module", "removed.diffusers", False),
    ("sklearn_get_feature_names", "removed.sklearn", True),
    ("sklearn_plot_confusion", "removed.sklearn", False),
    ("sklearn_normalize", "removed.sklearn", False),
    ("networkx_from_numpy_matrix", "removed.networkx", False),
    ("sqlalchemy_engine_execute", "removed.sqlalchemy", True),
    ("sqlalchemy_string", "removed.sqlalchemy", False),
    ("mpl_get_cmap", "removed.matplotlib", False),
    ("mpl_legend", "removed.matplotlib", True),
    ("mpl_tostring_rgb", "removed.matplotlib", True),
    ("werkzeug_url_quote", "removed.pallets", False),
    ("markupsafe_soft_unicode", "removed.pallets", False),
]


@pytest.mark.parametrize(("name", "rule", "cued"), REAL_RUNS, ids=[r[0] for r in REAL_RUNS])
def test_real_run_of_a_removed_name(name: str, rule: str, cued: bool) -> None:
    """The newer release's own error for the removed name: the library's rule fires and the installed versions
    lead; the object-attribute forms are read by the reasoning alone too (the pack left out)."""
    diag = _diagnose(name)
    assert fired(diag, rule), [c.rule for c in diag.root_causes]
    assert top3(diag)[0] == "environment", top3(diag)
    without = _diagnose(name, without_pack=True)
    assert not any(c.rule.startswith("removed.") for c in without.root_causes)
    assert (CUE in context_facts(without)) is cued, context_facts(without)
    if cued:
        assert top3(without)[0] == "environment", top3(without)


def test_a_name_the_library_never_had_is_not_read_as_removed() -> None:
    """The control: pandas' AttributeError for a misspelt column accessor ('colums') is the program's slip: no
    rule of the pack, no cue, the program's code among the three."""
    diag = _diagnose("pandas_typo")
    assert not any(c.rule.startswith("removed.") for c in diag.root_causes), [c.rule for c in diag.root_causes]
    assert CUE not in context_facts(diag)
    assert "model" in top3(diag), top3(diag)


# ---------------------------------------------------------------------------------------------------------------
# train logs
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["pytest_python/py_cpm_pandas2_dataframe_append_removed", "pytorch/pt_cratpred_lightning_accelerator_backend_attr"],
)
def test_train_log_object_attribute_removed(name: str) -> None:
    """pandas 2.0.1's DataFrame.append and Lightning's Trainer.accelerator_backend, asked by the program's own
    code: before, the attribute family read the program's slip first (model) and the installed versions second."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == "environment"
    assert CUE in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)
    diag, _ = train_log_with_rules(name)
    assert fired(diag, "removed.pandas") or fired(diag, "removed.lightning")
    assert top3(diag)[0] == "environment", top3(diag)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("environment/env_diffusers_import_cached_download_removed_hf_hub_026", "removed.huggingface_hub"),
        (
            "pytorch/env_sentence_transformers_import_cached_download_removed_old_st_with_new_hf_hub",
            "removed.huggingface_hub",
        ),
        ("pytest_python/py_g8_flask_cli_importerror_url_quote_werkzeug3_unpinned", "removed.pallets"),
        ("pytest_python/py_markupsafe_soft_unicode_tox", "removed.pallets"),
    ],
)
def test_train_log_library_imports_a_removed_name(name: str, rule: str) -> None:
    """diffusers' and sentence-transformers' import of huggingface_hub's cached_download (removed in 0.26), Flask's
    of Werkzeug 3's url_quote, Jinja2's of MarkupSafe 2.1's soft_unicode: the installed versions first, the
    importing library second."""
    diag, label = train_log_with_rules(name)
    assert label["category"] == "environment"
    assert fired(diag, rule), [c.rule for c in diag.root_causes]
    assert top3(diag)[:2] == ["environment", "library"], top3(diag)


def test_train_log_sqlalchemy2_dialect_under_2_0() -> None:
    """sqlalchemy-ibmi's dialect passes a plain SQL string to execute() under SQLAlchemy 2.0, which its maintainer
    said the dialect does not support (use SQLAlchemy 1.4): the installed versions first."""
    diag, label = train_log_with_rules("pytest_python/py_sqlalchemy_ibmi_sqlalchemy2_not_executable")
    assert label["category"] == "environment"
    assert fired(diag, "removed.sqlalchemy")
    assert top3(diag)[0] == "environment", top3(diag)


def test_train_log_sqlalchemy2_plain_string() -> None:
    """estimagic's logging passes a plain SQL string to execute(), which SQLAlchemy 1.4 announced for removal and
    2.0 rejects ("Not an executable object"); the thread fixed estimagic (library): it is second, behind the
    installed versions (third before the rule)."""
    diag, label = train_log_with_rules("pytest_python/py_estimagic_sqlalchemy2_begin_deferred_string")
    assert label["category"] == "library"
    assert fired(diag, "removed.sqlalchemy")
    assert top3(diag)[:2] == ["environment", "library"], top3(diag)
