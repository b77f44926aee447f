"""Reasoning for the failures no rule knows (issue 13, kwo2): who raised and what the message names, shown on train
logs diagnosed with the rules that explained them left out, and on output of real runs here.

- ``cue:changed_at_release``: the message names the release at which the raising library changed the behaviour the
  call relied on ("As of JAX v0.7, …", "Prior to JAX v0.5.0, …"): the calling code predates it.
- ``cue:thread_refused``: CPython's "can't start new thread" is pthread_create refused by the operating system (a
  task limit, a sandbox refusing the clone call): the environment or a resource, not the code that started it.
- Who owns a frame (``frame_owner``): a path whose leading folders a paste replaced by a placeholder
  (``<path>/pkg/mod.py``) is a file, not a pseudo-file such as ``<string>`` or ``<frozen os>``; code a library
  downloaded from a model hub and imported (transformers' ``transformers_modules``, torch.hub's repositories) is
  that model publisher's, not the program's.

Each train log is diagnosed twice, as ``bench/confusion.py --without-rules`` does: once with every rule, then with
the findings of the rules whose causes that diagnosis listed dropped between the scan and the analysis.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import frame_owner
from pytest_faildiag.parse.scan import Frame
from tests.kb.kb_helpers import (
    context_checks,
    context_facts,
    run_failing,
    run_fake_library_call,
    top3,
    train_log_with_rules,
    train_log_without_rules,
)

LIBRARIES = frozenset({"torch", "transformers", "jax"})


def _where(diag: Any) -> str:
    """The evidence line that says who raised (``… raised in the program's own code at …``)."""
    return " ".join(e.excerpt for c in diag.root_causes for e in c.evidence if " raised in " in e.excerpt)


# ---------------------------------------------------------------------------------------------------------------
# train logs, without the rules that explained them
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fact", "home", "moved_down"),
    [
        # "Prior to JAX v0.5.0, this would have been treated as a batched 1-dimensional solve": dynamax's example
        ("jax/dynamax_example_jax050_solve_batched_shapes", "cue:changed_at_release", "library", "config"),
        # an old Docker engine's seccomp profile refuses the clone3 call of a newer glibc: no thread starts
        ("environment/docker_old_engine_cant_start_new_thread", "cue:thread_refused", "environment", "model"),
    ],
)
def test_train_log_fact_puts_the_home_first_without_the_rules(
    name: str, fact: str, home: str, moved_down: str | None
) -> None:
    """Before these facts each log's home was second or third (bench/confusion.py --without-rules); now it leads,
    the fact a passed check on it and a failed one on the home it moved down."""
    diag, label = train_log_without_rules(name)
    assert label["category"] == home
    assert top3(diag)[0] == home, (name, top3(diag))
    assert context_checks(diag, home)[f"context:{fact}"] == "passed", name
    if moved_down is not None:
        assert context_checks(diag, moved_down)[f"context:{fact}"] == "failed", name


def test_train_log_thread_refused_offers_the_environment_with_the_rules() -> None:
    """With every rule the installed environment joins the three hypotheses (before: not among them)."""
    diag, label = train_log_with_rules("environment/docker_old_engine_cant_start_new_thread")
    assert label["category"] == "environment"
    assert "environment" in top3(diag), top3(diag)


def test_train_log_redacted_path_is_the_programs_frame() -> None:
    """``File "<path>/WavePlus_Bridge/waveplus_bridge.py"``: the paste hid the leading folders. The frame was read
    as a pseudo-file of the standard library (only libraries on the stack: a library first); it is the program's
    own module, whose KeyError is its own code's (the label's model), with the rules and without them."""
    name = "pytest_python/py_g8_waveplus_bridge_keyerror_retries_default_config_not_applied"
    for diag, label in (train_log_without_rules(name), train_log_with_rules(name)):
        assert label["category"] == "model"
        assert top3(diag)[0] == "model", top3(diag)
        assert "raiser:user" in context_facts(diag)
        assert "raiser:library_only" not in context_facts(diag)


def test_train_log_hub_model_code_is_not_the_program() -> None:
    """InternVL's chat model runs from transformers' ``transformers_modules`` (trust_remote_code): the code that
    put the tensors on two devices is the model publisher's and transformers' generation loop, not the program's;
    without the rules the library leads (before: the program's code)."""
    diag, label = train_log_without_rules("pytorch/internvl_chat_device_map_generate_tensors_on_two_devices")
    assert label["category"] == "library"
    assert top3(diag)[0] == "library", top3(diag)


# ---------------------------------------------------------------------------------------------------------------
# frame_owner
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "owner"),
    [
        ("<path>/WavePlus_Bridge/waveplus_bridge.py", ("user", None)),
        ("<redacted>/project/train.py", ("user", None)),
        ("<HOME>/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", ("library", "torch")),
        ("<frozen os>", ("stdlib", None)),
        ("<frozen importlib._bootstrap>", ("stdlib", None)),
        ("<string>", ("user", None)),
        (
            "/root/.cache/huggingface/modules/transformers_modules/checkpoint-200/modeling_internvl_chat.py",
            ("library", "checkpoint-200"),
        ),
        ("/home/user/.cache/torch/hub/bshall_knn-vc_master/matcher.py", ("library", "bshall_knn-vc_master")),
        ("/home/user/project/hub/model.py", ("user", None)),
    ],
)
def test_frame_owner(path: str, owner: tuple[str, str | None]) -> None:
    assert frame_owner(Frame(path, 1, "f"), LIBRARIES) == owner


# ---------------------------------------------------------------------------------------------------------------
# real runs
# ---------------------------------------------------------------------------------------------------------------


def test_real_behaviour_changed_at_a_release(tmp_path) -> None:
    body = (
        "def solve(a, b):\n"
        "    raise ValueError('Invalid shapes for solve. Prior to fakelib v0.5.0, this would have been treated as a "
        "batched solve.')\n"
    )
    diag, err = run_fake_library_call(tmp_path, body, "fakelib.solve(1, 2)")
    assert "Prior to fakelib v0.5.0," in err
    assert context_checks(diag, "library")["context:cue:changed_at_release"] == "passed"
    assert context_checks(diag, "config")["context:cue:changed_at_release"] == "failed"


def test_real_version_without_a_change_is_not_read(tmp_path) -> None:
    diag, err = run_failing(tmp_path, "raise ValueError('expected version 0.5.0, got 0.4.0')\n")
    assert "expected version" in err
    assert "cue:changed_at_release" not in context_facts(diag)


def test_real_redacted_paste_keeps_the_programs_frame(tmp_path) -> None:
    """A real traceback of the program's own module, pasted with its leading folders replaced by ``<path>``."""
    (tmp_path / "bridge.py").write_text("def load(cfg):\n    return cfg['retries']\n")
    diag, err = run_failing(tmp_path, "import sys\nsys.path.insert(0, '.')\nimport bridge\nbridge.load({})\n")
    pasted = err.replace(str(tmp_path.resolve()), "<path>").replace(str(tmp_path), "<path>")
    assert 'File "<path>/bridge.py"' in pasted, pasted
    diag = diagnose(texts={"stderr": pasted}, exit_code=1)
    assert "raiser:user" in context_facts(diag)
    assert "raiser:library_only" not in context_facts(diag)
    assert "program's own code at <path>/bridge.py" in _where(diag)
