"""Where a JAX failure's cause lives: whose code the traceback shows (engine/reason.py), and JAX's plugins.

* JAX's tracer errors (jax.errors) are raised inside JAX for the code that converted the traced value: the
  raiser is the innermost frame outside JAX and NumPy (a downstream library -> library, the program -> model;
  only JAX's and NumPy's frames -> not shown).
* A name jax/jaxlib no longer has, asked for by a JAX-based library's code, is that library's release (library;
  the program's own call stays the version mismatch, environment); jax._src.deprecations' ``getattr`` raises
  for its caller. The rule jax.removed_name (70-jax.toml) names the removed name and its replacements.
* JAX's filtered re-raise (``UnfilteredStackTrace`` chained to the filtered traceback) is one exception: the
  frames the original lost are read from the filtered one.
* A PJRT plugin that cannot be initialised is a broken installation (jax.cat2.plugin_init_failed).

Real logs: produced here with jax 0.10.2 (tests/data/kb/jax_homes/labels.json keeps each program) and train
logs of the thread corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fired, run_failing, top3, train_log_path

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "jax_homes"
LABELS = json.loads((DATA / "labels.json").read_text())["logs"]


def _facts(diag) -> set[str]:
    """The reasoning's facts that moved a cause (reported as ``context:<fact>`` validation checks)."""
    return {c.name.removeprefix("context:") for rc in diag.root_causes for c in rc.validation_checks}


def _diagnose(path: Path, exit_code: int | None = None):
    return diagnose([str(path)], exit_code=exit_code)


@pytest.mark.parametrize("label", LABELS, ids=lambda lab: lab["log"][:-4])
def test_the_home_of_a_real_jax_failure(label):
    diag = _diagnose(DATA / label["log"], label["exit_code"])
    assert top3(diag)[0] == label["category"], [(rc.category, rc.rule, rc.confidence) for rc in diag.root_causes]
    if label["fact"]:
        assert label["fact"] in _facts(diag), _facts(diag)


def test_a_tracer_error_seen_only_in_numpy_and_jax_frames_shows_no_raiser():
    # numpy.stack -> Tracer.__array__: NumPy only passed the value on; the code that handed it a traced value
    # is not in the excerpt, so "every frame is a library's" must not lift the library
    diag = _diagnose(train_log_path("jax/jax_tracer_array_conversion_params_dict_passed_to_emulator"))
    facts = _facts(diag)
    assert "raiser:library_only" not in facts and "raiser:unseen" in facts, facts
    assert top3(diag)[0] == "model"


def test_a_tracer_conversion_in_the_programs_frame_keeps_the_library_hypothesis_second():
    diag = _diagnose(DATA / "user_numpy.log", 1)
    assert top3(diag)[:2] == ["model", "library"]
    assert fired(diag, "jax.err.tracer_array_conversion")


def test_a_leaked_tracer_is_not_read_at_the_frame_that_used_it():
    # UnexpectedTracerError is detected where the leaked value is used (here inside a library's function), not
    # where the program stored it: the library is not made the converter
    diag = _diagnose(DATA / "leak_user.log", 1)
    assert "raiser:trace_library" not in _facts(diag)
    assert top3(diag)[0] == "model" and fired(diag, "jax.err.unexpected_tracer")


def test_a_broken_plugin_logged_before_another_failure_does_not_take_its_place():
    # JAX logs the plugin's configuration error and goes on on the CPU: the program's own failure leads, the
    # installation stays a hypothesis
    for name, home in (("leak_user_plugin.log", "model"), ("lib_numpy_plugin.log", "library")):
        diag = _diagnose(DATA / name, 1)
        assert top3(diag)[:2] == [home, "environment"], name
        assert fired(diag, "jax.cat2.plugin_init_failed")


def test_the_removed_name_rule_says_which_name_and_who_asked():
    lib = _diagnose(DATA / "lib_removed.log", 1)
    top = lib.root_causes[0]
    assert (top.rule, top.category) == ("jax.removed_name", "library"), top
    assert "jax.tree_map" in top.summary
    own = _diagnose(DATA / "user_removed.log", 1)
    assert [rc.rule for rc in own.root_causes[:2]] == ["jax.removed_name"] * 2
    assert top3(own)[:2] == ["environment", "model"]
    assert "jax.tree_map" in own.root_causes[1].summary


def test_a_removed_jax_name_asked_by_a_library_through_jax_deprecation_getattr():
    # ott/utils.py -> jax/_src/deprecations.py getattr: the raiser is ott, not jax asking itself
    diag = _diagnose(train_log_path("jax/jax_pr6_ott_import_prngkeyarray_removed_jax0424_fixed_ott045"))
    facts = _facts(diag)
    assert "api:jax_removed_in_library" in facts and "api:own_library" not in facts, facts
    assert top3(diag)[:2] == ["library", "environment"]


def test_a_removed_jaxlib_name_asked_by_a_library():
    diag = _diagnose(train_log_path("jax/jax_chacha_import_register_cpu_custom_call_target_removed_jax_0_4_24"))
    assert "api:jax_removed_in_library" in _facts(diag)
    assert top3(diag)[:2] == ["library", "environment"]


def test_the_filtered_traceback_gives_the_frames_the_unfiltered_one_lost():
    # "UnfilteredStackTrace: AttributeError: module 'jax.ops' has no attribute 'index_update'" was cut to its
    # exception line; the filtered traceback chained after it shows the program's frame that asked for the name
    # (the program's own call of a removed name: the convention's version mismatch, the program's code second)
    diag = _diagnose(train_log_path("jax/jax_index_update_removed_code_uses_old_jax_api"))
    facts = _facts(diag)
    assert "raiser:user" in facts and "raiser:unseen" not in facts, facts
    assert "api:jax_removed_in_library" not in facts
    assert top3(diag)[:2] == ["environment", "model"]


def test_the_unfiltered_block_alone_is_read_as_the_exception_it_wraps(tmp_path):
    # a notebook's UnfilteredStackTrace block as a thread may paste it (cut at the chain's header): IPython
    # names the wrapper in its header and before the wrapped line; the failure is the TypeError
    text = train_log_path("jax/jax_colabfold_take_list_arg_rejected_new_jax").read_text()
    cut = tmp_path / "unfiltered.log"
    cut.write_text(text[: text.index("The above exception was the direct cause")])
    diag = _diagnose(cut)
    details = [c.detail for rc in diag.root_causes for c in rc.validation_checks if c.name.startswith("context:raiser")]
    assert details and all("TypeError raised" in d for d in details), details
    assert fired(diag, "jax.cat2.non_array_input")


def test_a_reraise_of_the_same_class_and_message_is_not_merged_into_the_original(tmp_path):
    # outside JAX, the program catching a library's ValueError and raising ValueError(str(e)) from it prints two
    # tracebacks of one class and message: the original keeps its own frames (the library raised)
    lib = tmp_path / "site-packages" / "tinylib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("def check(x):\n    if x < 0:\n        raise ValueError('x must be >= 0')\n")
    diag, err = run_failing(
        tmp_path,
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path / "site-packages")!r})
        import tinylib
        try:
            tinylib.check(-1)
        except ValueError as e:
            raise ValueError(str(e)) from e
        """,
    )
    assert "direct cause" in err
    facts = _facts(diag)
    assert "raiser:library_entry" in facts or "raiser:library" in facts, facts
    assert "raiser:user" not in facts, facts


def test_a_missing_jax_submodule_stays_an_installation():
    # "No module named 'jax.numpy'" raised in chex: no removed name, a broken or stale jax install
    diag = _diagnose(train_log_path("environment/env_pr6_import_chex_no_module_jax_numpy_stale_conda_jax"))
    assert "api:jax_removed_in_library" not in _facts(diag)
    assert not fired(diag, "jax.removed_name")
    assert top3(diag)[0] == "environment"


def test_a_plugin_that_cannot_initialise_is_the_installation():
    diag = _diagnose(DATA / "gpu_platforms_cuda.log", 1)
    top = diag.root_causes[0]
    assert (top.rule, top.category) == ("jax.cat2.plugin_init_failed", "environment"), top
    assert "jax_plugins.xla_cuda12" in top.summary
    assert diag.profile.type == "backend" and diag.profile.stage == "startup"


def test_a_removed_jax_name_imported_by_a_library_is_read_by_the_removed_name_rule():
    # lib_import_removed.log, produced here with jax 0.10.2: a package ``jaxcb`` in site-packages whose
    # __init__ does ``from jax.experimental import host_callback`` (removed in JAX 0.4.35), imported by the
    # program (``import jaxcb``). The ImportError form of a removed name is read by jax.removed_name, which
    # names the name and who asked (py.import_error stands aside), not by the generic version mismatch.
    diag = _diagnose(DATA / "lib_import_removed.log", 1)
    assert "py.import_error" not in {rc.rule for rc in diag.root_causes}
    assert [rc.rule for rc in diag.root_causes[:2]] == ["jax.removed_name"] * 2
    assert set(top3(diag)[:2]) == {"environment", "library"}
    assert "jax.experimental.host_callback" in diag.root_causes[0].summary
    assert "api:jax_removed_in_library" in _facts(diag)
