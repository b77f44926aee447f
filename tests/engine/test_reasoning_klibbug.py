"""A library's own exception class raised by its own code (issue 13, klibbug).

Python's convention for a call's bad input is a TypeError or a ValueError (or a class the library names for the
input: ``ValidationError``, ``MisconfigurationException``). A class of a library's own package that names neither
(TFLite's ``ConverterError``, Flax NNX's ``TraceContextError``, datasets' ``ExpectedMoreSplits``), raised by a
``raise`` statement of that library's own code with its frames shown, is the library reporting that its own
operation failed: ``raiser:library_own_error`` lifts the library a little. Not read: Python's built-in classes, the
classes the [[exception]] catalogue names, a class named for its input, another package's class.

Each train log is diagnosed as ``bench/confusion.py --without-rules`` does (the rules that explained it left out)
and with every rule. Real runs raise from a package installed under a ``site-packages`` folder here.
"""

from __future__ import annotations

import pytest

from tests.kb.kb_helpers import (
    context_facts,
    run_fake_library_call,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

FACT = "raiser:library_own_error"

# ---------------------------------------------------------------------------------------------------------------
# train logs
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        # TFLite's TOCO converter raising its ConverterError ("See console for info."): model, env, library tied before
        "pytest_python/tflite_toco_converter_error_keras_lstm_tf20",
        # Flax NNX's TraceContextError raised under keras_hub's layers (pasted as ``.../flax/…``): tied before
        "jax/keras_nnx_t5backbone_tracecontexterror",
        # datasets 2.19's split verification raising ExpectedMoreSplits for a data_dir load: environment tied before
        "pytest_python/py_hf_datasets_expected_more_splits_data_dir_regression_2_19",
    ],
)
def test_train_log_a_library_raising_its_own_class_without_the_rules(name: str) -> None:
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert FACT in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "library", top3(diag)


@pytest.mark.parametrize(
    "name",
    ["pytest_python/tflite_toco_converter_error_keras_lstm_tf20", "jax/keras_nnx_t5backbone_tracecontexterror"],
)
def test_train_log_a_library_raising_its_own_class_with_the_rules(name: str) -> None:
    diag, _ = train_log_with_rules(name)
    assert top3(diag)[0] == "library", top3(diag)


def test_train_log_a_compiler_class_keeps_the_operator() -> None:
    """Triton-Ascend's MLIRCompilationError for a 310P target it lacks: the fact holds, the lowering words keep the
    operator first (kept as it was)."""
    diag, label = train_log_without_rules("ascend/vllm_ascend_310p3_triton_bishengir_target_unsupported")
    assert label["category"] == "operator"
    assert FACT in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "operator", top3(diag)


def test_train_log_a_named_input_class_is_not_read() -> None:
    """pip's DistributionNotFound names what it could not find (its input), not a failure of its own operation."""
    diag, _ = train_log_without_rules("environment/pip_conf_stale_index_url_no_matching_distribution")
    assert FACT not in context_facts(diag), context_facts(diag)


# ---------------------------------------------------------------------------------------------------------------
# real runs
# ---------------------------------------------------------------------------------------------------------------

_LIB = '''
import json


class ConverterError(Exception):
    """The library's own failure of its conversion."""


class ConfigValidationError(Exception):
    """A class named for the input it refuses."""


def _lower(graph):
    if "lstm" in graph:
        raise ConverterError("could not lower the graph: see the converter's output above")
    return graph


def convert(graph):
    return _lower(graph)


def validate(conf):
    raise ConfigValidationError("key 'layers' must be a list")


def check(value):
    if value < 0:
        raise ValueError("value must be positive")
'''


def test_real_own_class_raised_by_the_library(tmp_path) -> None:
    diag, err = run_fake_library_call(tmp_path, _LIB, "fakelib.convert('lstm-graph')")
    assert "fakelib.ConverterError: could not lower the graph" in err
    assert FACT in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "library", top3(diag)


@pytest.mark.parametrize(
    ("call", "printed"),
    [
        ("fakelib.validate({})", "fakelib.ConfigValidationError:"),  # named for its input
        ("fakelib.check(-1)", "ValueError: value must be positive"),  # Python's class for a bad argument
        ("raise fakelib.ConverterError('the program raised it')", "fakelib.ConverterError:"),  # the program's raise
    ],
)
def test_real_input_classes_and_other_raisers_are_not_read(tmp_path, call: str, printed: str) -> None:
    diag, err = run_fake_library_call(tmp_path, _LIB, call)
    assert printed in err
    assert FACT not in context_facts(diag), context_facts(diag)


def test_real_another_package_class_is_not_the_library_own(tmp_path) -> None:
    """fakelib raising a class of another package (Python prints the class's module: ``otherlib.errors``) is not its
    own statement of its operation."""
    body = (
        _LIB
        + """

class ForeignError(Exception):
    pass


ForeignError.__module__ = "otherlib.errors"


def relay():
    raise ForeignError("the other package's failure")
"""
    )
    diag, err = run_fake_library_call(tmp_path, body, "fakelib.relay()")
    assert "otherlib.errors.ForeignError: the other package's failure" in err
    assert FACT not in context_facts(diag), context_facts(diag)
