"""A saved graph holding tf.py_function / tf.numpy_function's ops (EagerPyFunc, PyFunc, PyFuncStateless) loaded
where no Python process defines their body (``tf.py_func_in_saved_graph``): TensorFlow's API docs say that body is
not serialized with the graph, so the op registry of TF Serving or the C++ runtime says the op is not
registered; the model's code has to change, not the installed op libraries (``tf.op_not_registered``'s
reading of an unregistered op, which it silences). A train log of TF Serving loading such a model."""

from __future__ import annotations

from .kb_helpers import fired, top3, train_log_with_rules


def test_a_python_function_op_in_a_served_model_is_the_models_code() -> None:
    diag, label = train_log_with_rules("environment/savedmodel_uses_pyfunc_op_unsupported_by_model_server")
    assert fired(diag, "tf.py_func_in_saved_graph")
    assert not fired(diag, "tf.op_not_registered")
    assert diag.profile.type == "unsupported_op"
    assert top3(diag)[0] == "model" == label["category"]
