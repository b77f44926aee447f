"""The Python application libraries' catalogue (rules/31-python-apps-catalogue.toml, the kpyapps block).

Each family is shown by a real run kept as a fixture in tests/data/kb/kpyapps/ (Flask 3.1, Jinja2 3.1, Werkzeug
3.1, PyYAML 6.0, SQLAlchemy 2.1, Django 5.2 with pytest-django 4.14, urllib3 2.8, httpx 0.28, Typer 0.9 under
click 8.5, importlib_metadata 8, pydantic 2.14 and 1.10, PyJWT 2.15 and marshmallow 4.4 in a scratch virtual
environment; paths redacted), by the train logs that show a family (pydantic, marshmallow), and, where this
environment has the library (pydantic, Jinja2), by a live run. Controls: a name the library never had, a dialect
other than 'postgres', urllib3's warning for a non-OpenSSL build.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import (
    check_labelled_log,
    check_pack_rules,
    fired,
    ids_in_other_packs,
    pack_rules,
    rules_dir,
    run_failing,
    top3,
    train_log_with_rules,
)

PACK = "31-python-apps-catalogue.toml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kpyapps"
LABELS = json.loads((DATA / "labels.json").read_text())


def _diag(name: str):
    return diagnose([str(DATA / f"{name}.log")], exit_code=1)


def test_pack_shape_and_own_ids() -> None:
    rules = pack_rules(PACK)
    assert len(rules) == 20
    check_pack_rules(rules)
    assert not {r.id for r in rules} & ids_in_other_packs(rules_dir() / PACK)


@pytest.mark.parametrize("name", sorted(LABELS))
def test_real_run(name: str) -> None:
    """Each family's real run: its rule's cause first, in the home its wording documents."""
    check_labelled_log(DATA, LABELS[name])


def test_removed_name_frames_order_the_differential() -> None:
    """PyYAML 6's required Loader: the installed release leads either way; the program's own call puts the
    program's code second, a library's call (an installed package's frame) puts the library second."""
    own = _diag("yaml_loader")
    lib = _diag("yaml_loader_in_library")
    assert top3(own)[0] == top3(lib)[0] == "environment"
    assert top3(own).index("model") < top3(own).index("library")
    assert top3(lib).index("library") < top3(lib).index("model")


def test_controls_are_not_read_as_the_family() -> None:
    """A name Flask never had is not a removal; a dialect other than 'postgres' is a missing dialect package,
    not the renamed alias; urllib3's warning for a LibreSSL build is not its ImportError."""
    typo = _diag("flask_import_typo")
    assert not fired(typo, "pallets.flask_jinja_werkzeug_removed")
    snow = _diag("sqlalchemy_dialect_missing")
    assert not fired(snow, "sqlalchemy.postgres_scheme")
    pg = _diag("sqlalchemy_postgres_scheme")
    assert not fired(pg, "sqlalchemy.dialect_not_installed")
    libre = _diag("urllib3_libressl_warning")
    assert not fired(libre, "urllib3.v2_old_openssl")


def test_train_log_pydantic_validator_field_config() -> None:
    """A pydantic 1 @validator(field, config) under pydantic 2 (train): the installed release first, stage start-up."""
    diag, label = train_log_with_rules("pytest_python/mtga_draft_pydantic2_validator_field_config")
    assert fired(diag, "pydantic.v1_model_forms_on_v2")
    assert diag.root_causes[0].category == label["category"] == "environment"
    assert diag.profile.stage == label["stage"] == "startup"


def test_train_log_marshmallow4_field_default() -> None:
    """Schemas passing default= to marshmallow 4's fields, failing at collection (train): the installed release
    first."""
    diag, label = train_log_with_rules("pytest_python/py_marshmallow4_removed_field_kwargs_collection_errors")
    assert fired(diag, "marshmallow.removed_field_arguments")
    assert diag.root_causes[0].category == label["category"] == "environment"


PYDANTIC_V1_FORMS = {
    "root_validator": """
        from pydantic import BaseModel, root_validator
        class Window(BaseModel):
            start: int
            @root_validator
            def check(cls, values):
                return values
    """,
    "config_and_model_config": """
        from pydantic import BaseModel, ConfigDict
        class Item(BaseModel):
            model_config = ConfigDict(extra="forbid")
            name: str
            class Config:
                extra = "forbid"
    """,
}


@pytest.mark.skipif(importlib.util.find_spec("pydantic") is None, reason="pydantic is not installed")
@pytest.mark.parametrize("form", sorted(PYDANTIC_V1_FORMS))
def test_live_pydantic_v1_forms(tmp_path: Path, form: str) -> None:
    import pydantic

    if int(pydantic.VERSION.split(".")[0]) < 2:
        pytest.skip("pydantic 1 accepts these forms")
    diag, err = run_failing(tmp_path, PYDANTIC_V1_FORMS[form])
    assert "PydanticUserError" in err
    assert diag.root_causes[0].rule == "pydantic.v1_model_forms_on_v2"
    assert diag.root_causes[0].category == "environment"


@pytest.mark.skipif(importlib.util.find_spec("jinja2") is None, reason="Jinja2 is not installed")
def test_live_jinja_removed_decorator(tmp_path: Path) -> None:
    import jinja2

    if hasattr(jinja2, "contextfunction"):
        pytest.skip("this Jinja2 still has contextfunction")
    diag, _ = run_failing(tmp_path, "from jinja2 import Environment, contextfunction\n")
    assert diag.root_causes[0].rule == "pallets.flask_jinja_werkzeug_removed"
    assert diag.root_causes[0].category == "environment"
