"""Catalogue facts from older train misses (#13, 37th pass): absl's flags read before they are parsed, Keras's
unique layer names, pytest 7's warning for ``pytest.warns(None)`` (the removal pytest 8 made an error) and pytest
5.4's lower-case wording of a node constructed directly. Each is shown on a train log of the thread corpus (a
user's paste, its cause confirmed in the thread); each test fails on the rules from before the commit."""

from __future__ import annotations

import pytest

from tests.kb.kb_helpers import train_log_led_by


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("jax/functa_jaxline_script_flags_not_parsed_unparsed_flag_access_config", "absl.unparsed_flag_access"),
        ("pytest_python/keras_model_duplicate_layer_name_vgg16_backbone", "keras.duplicate_layer_name"),
        (
            "pytest_python/project_sailor_pytest7_warns_none_removedin8_warning_as_error",
            "pytest.removed_api_called",
        ),
        (
            "pytest_python/pytest_asyncio_010_direct_function_construction_deprecated_pytest54",
            "pytest.node_direct_construction",
        ),
    ],
)
def test_a_train_log_reads_as_the_catalogue_says(name: str, rule: str) -> None:
    diag, label = train_log_led_by(name, rule)
    assert diag.profile.type == label["type"], (diag.profile.type, label["type"])
