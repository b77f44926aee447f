"""kland5: ranking facts that tell two competing homes of one message apart.

Each fact is stated from the library's own source or documentation (see rules/81-ownership-facts.toml and the
comments beside the edited causes), shown on the train logs it moves and on real outputs produced here
(tests/data/kb/kland5/README.md says how):

* torch.load's weights_only refusal (torch >= 2.6) of a pickled class: torch's message puts the fix in the
  torch.load call, so the code that made it is a home: a library's loader leads (``caller:library``), the
  program's own call stays behind torch's changed default (``caller:user``).
* EMFILE ("Too many open files") off the DataLoader's sharing path: the per-process limit, reached by the
  program's own descriptors (a leak) before the limit itself; ENFILE ("... in system") is the machine's table.
* "a leaf Variable that requires grad is being used in an in-place operation" is raised on the line that does
  the in-place update: a library's line there makes the library a home.
* Gloo's "Unable to find address for: <host>": torch.distributed documents GLOO_SOCKET_IFNAME as the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose

from .kb_helpers import fired, first_cause, pack_rules, top3, train_diagnosis

DATA = Path(__file__).resolve().parents[1] / "data" / "kb" / "kland5"
THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _real(name: str):
    return diagnose([str(DATA / name)], exit_code=1)


def test_the_pack_loads_with_its_rules():
    assert {r.id for r in pack_rules("81-ownership-facts.toml")} == {"torch.autograd.leaf_inplace_line"}


# --- torch.load weights_only: the caller's code, then the installed torch --------------------------------------


def test_weights_only_program_call_offers_the_program_behind_the_changed_default():
    """The program's own torch.load call: torch's changed default first (the program worked before the upgrade),
    the program's call among the first three and ahead of a library's loader (caller:user)."""
    d = _real("own_load.log")
    assert first_cause(d) == ("environment", "torch.checkpoint.weights_only")
    cats = top3(d)
    assert "model" in cats, cats
    ids = [c.id for c in d.root_causes]
    assert ids.index("model.torch_load_caller") < ids.index("library.torch_load_caller"), ids


def test_weights_only_library_loader_puts_the_libraryfirst_cause():
    d = _real("lib_load.log")
    assert first_cause(d) == ("library", "torch.checkpoint.weights_only")
    assert d.root_causes[0].id == "library.torch_load_caller"
    assert "model" not in top3(d)[:2]


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("pytorch/openff_nagl_torch26_weights_only_unpickling", "library"),
    ],
)
def test_weights_only_train_logs_put_the_caller_ahead_of_the_torch_release(name, home):
    """No frame shows who called torch.load in these pastes: the caller's home joins the first three (it was
    third and fourth before, behind environment and checkpoint)."""
    cats = top3(train_diagnosis(name))
    assert home in cats, cats


# --- EMFILE: the program's descriptors before the limit --------------------------------------------------------


def test_emfile_real_leak_reads_as_the_programfirst_cause():
    d = _real("leak_files.log")
    assert first_cause(d) == ("model", "errno.too_many_open_files")
    assert top3(d)[1] == "resource"


@pytest.mark.parametrize(
    "name",
    [
        "pytest_python/pt_too_many_open_files_darshan_logs_not_closed",
        "pytest_python/pypuf_experimenter_too_many_open_files",
    ],
)
def test_emfile_train_logs_read_as_a_descriptor_leak(name):
    d = train_diagnosis(name)
    assert first_cause(d) == ("model", "errno.too_many_open_files")


def test_enfile_is_the_machines_table_not_the_process_limit():
    d = diagnose(texts={"stderr": "OSError: [Errno 23] Too many open files in system: 'data/part1.txt'\n"}, exit_code=1)
    assert fired(d, "errno.file_table_full")
    assert not fired(d, "errno.too_many_open_files")
    assert d.root_causes[0].category == "resource"


def test_dataloader_emfile_message_stays_the_sharing_path():
    text = (
        "RuntimeError: Too many open files. Communication with the workers is no longer possible. Please increase"
        " the limit using `ulimit -n` in the shell or change the sharing strategy by calling"
        " `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code\n"
    )
    d = diagnose(texts={"stderr": text}, exit_code=1)
    assert fired(d, "host.file_handles")
    assert not fired(d, "errno.too_many_open_files")
    assert d.root_causes[0].category == "resource"


# --- leaf in-place: the raising line is the one that does it ---------------------------------------------------


def test_leaf_inplace_in_a_library_layer_offers_the_library_second_not_third():
    d = _real("lib_leaf.log")
    assert fired(d, "torch.autograd.leaf_inplace_line")
    assert top3(d)[:2] == ["model", "library"], top3(d)
    lib = next(c for c in d.root_causes if c.rule == "torch.autograd.leaf_inplace_line")
    assert any(c.name == "context:raiser:library_op" and c.status == "passed" for c in lib.validation_checks)


def test_leaf_inplace_in_the_programs_own_line_keeps_the_program_far_ahead():
    d = _real("own_leaf.log")
    assert first_cause(d) == ("model", "torch.autograd_usage")
    lib = next(c for c in d.root_causes if c.rule == "torch.autograd.leaf_inplace_line")
    assert lib.confidence < 0.6 * d.root_causes[0].confidence


def test_leaf_inplace_train_log_of_a_library_layer_moves_up():
    cats = top3(train_diagnosis("pytorch/pyg_dimenet_bessel_leaf_inplace_reset"))
    assert cats[:2] == ["model", "library"], cats


# --- Gloo's host lookup: the documented setting ----------------------------------------------------------------


def test_gloo_unable_to_find_address_puts_the_settingfirst_cause():
    d = train_diagnosis("distributed/dist_gloo_unable_to_find_address_hostname_docker_net_host_socket_ifname")
    assert first_cause(d) == ("config", "dist.socket_ifname")
    assert top3(d)[1] == "environment"
