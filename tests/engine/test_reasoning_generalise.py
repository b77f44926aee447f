"""Reasoning that generalises: distinct competing causes per symptom family, facts that refute a cause.

The failures come from real Python processes run here (a script, a pytest run) or from real logs of the
thread corpus's train split (never its dev split). Each test asserts a ranking that the reasoning tables
decide, so a change that makes a family offer three variants of one cause, or that stops a refuting fact
from moving its candidate down, fails here.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import frame_owner
from pytest_faildiag.parse.scan import Frame
from pytest_faildiag.rules import load_ruleset
from tests.engine.corpus_logs import run_failing as _run
from tests.engine.corpus_logs import train_log as _train_log

LIBS = load_ruleset().reasoning.libraries


def _check(cause, name: str) -> list[str]:
    return [v.status for v in cause.validation_checks if v.name == name]


def test_a_librarys_own_test_suite_run_from_its_install_is_test_code():
    """``numpy/core/tests/test_x.py`` under site-packages is a test, not numpy's library code; numpy's
    ``testing`` helpers stay the library's."""
    site = "/opt/py/lib/python3.11/site-packages/"
    assert frame_owner(Frame(site + "numpy/core/tests/test_multiarray.py", 1, "test_zeros"), LIBS) == ("test", None)
    assert frame_owner(Frame(site + "numpy/testing/_private/utils.py", 1, "assert_equal"), LIBS) == (
        "library",
        "numpy",
    )


def test_an_assert_in_a_script_is_not_the_tests_fault_but_in_a_test_it_is(tmp_path, pytester):
    """The refuting fact ``run:no_tests``: the same failed ``assert`` ranks test_code among the causes of a
    pytest run and moves it down, with a failed check saying why, when no test ran at all."""
    code = "def total(xs):\n    return sum(xs) + 1\n\n"
    err, rc = _run(tmp_path, code + "assert total([1, 2]) == 3, 'wrong total'\n")
    script = diagnose(texts={"stderr": err}, exit_code=rc)
    pytester.makepyfile(test_total=code + "def test_total():\n    assert total([1, 2]) == 3, 'wrong total'\n")
    res = pytester.runpytest("-p", "no:faildiag")
    in_pytest = diagnose(texts={"stdout": "\n".join(res.outlines)}, exit_code=int(res.ret))

    def test_code(diag):
        return next(c for c in diag.root_causes if c.category == "test_code")

    assert "test_code" in [c.category for c in in_pytest.root_causes[:2]]
    assert _check(test_code(script), "context:run:no_tests") == ["failed"]
    assert not _check(test_code(in_pytest), "context:run:no_tests")
    assert test_code(script).confidence < 0.5 * test_code(in_pytest).confidence
    assert "test_code" not in [c.category for c in script.root_causes[:2]]


def test_a_decode_error_in_the_programs_own_read_offers_the_code_beside_the_data(tmp_path):
    """Reading a file with the wrong codec: the data's format and the program's choice of codec are
    distinct hypotheses, both in the top 3 (not the data alone)."""
    (tmp_path / "notes.txt").write_bytes("naïve café ✓\n".encode())
    err, rc = _run(tmp_path, "text = open('notes.txt', encoding='ascii').read()\n")
    cats = [c.category for c in diagnose(texts={"stderr": err}, exit_code=rc).root_causes]
    assert "UnicodeDecodeError" in err
    assert {"dataset", "model"} <= set(cats[:3])
    assert len(set(cats[:3])) == 3


def test_a_message_about_the_data_puts_the_data_first_not_the_code():
    """A library's validation message that speaks of the dataset and its files (train log): the data is the
    first hypothesis, the code is moved down by a failed check."""
    diag, label = _train_log("mindspore/ms_cifar10dataset_no_valid_data_wrong_files")
    cats = [c.category for c in diag.root_causes]
    assert cats[0] == label["category"] == "dataset"
    model = next(c for c in diag.root_causes if c.category == "model")
    assert _check(model, "context:cue:data") == ["failed"]


def test_the_head_of_a_collective_librarys_error_cascade_names_the_failure():
    """No exception and no rule: HCCL's own error lines (the first of the cascade, not its last line) make
    it a communication failure with the connection as the first hypothesis."""
    diag, label = _train_log("ascend/pta_hccl_listen_port_conflict_pd_same_host")
    assert diag.profile.type == label["type"] == "communication"
    assert diag.root_causes[0].category == label["category"]


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("distributed/jotr_allgather_mismatch_incomplete_dataset", "dataset"),  # ranks diverged: their data
        ("pytest_python/py_numpy_memoryerror_win32_test_zeros_big", None),  # an OOM offers a test beside the rest
        ("environment/triton_ld_cannot_find_lcuda_regression", "library"),  # a linker input is no config path
    ],
)
def test_the_top_three_are_distinct_hypotheses_across_categories(name, want):
    diag, label = _train_log(name)
    cats = [c.category for c in diag.root_causes[:3]]
    assert len(set(cats)) == 3, cats
    if want is not None:
        assert want == label["category"] and want in cats, cats


def test_a_missing_header_is_the_installation_not_a_configured_path(tmp_path):
    """A C compiler that cannot find a header: the toolchain/installation first, a configured path after."""
    src = tmp_path / "ext.c"
    src.write_text("#include <faildiag_no_such_header_xyz.h>\nint main(void) { return 0; }\n")
    cc = next(
        (c for c in ("cc", "gcc", "clang") if subprocess.run(["which", c], capture_output=True).returncode == 0), None
    )
    if cc is None:
        pytest.skip("no C compiler on this machine")
    p = subprocess.run([cc, "-c", str(src), "-o", str(tmp_path / "ext.o")], capture_output=True, text=True)
    assert p.returncode != 0 and "No such file" in p.stderr, p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    cats = [c.category for c in diag.root_causes]
    assert cats[0] == "environment", cats
    if "config" in cats:
        assert cats.index("config") > cats.index("environment")


def test_an_exception_without_frames_does_not_default_to_the_programs_code():
    """Only the exception line (a settings error of a framework, train log): nothing shows the program's
    code, so the installation is the first hypothesis and the code is moved down by a failed check."""
    diag, label = _train_log("pytest_python/pt_django_improperlyconfigured_no_pytest_django")
    assert diag.root_causes[0].category == label["category"] == "environment"
    model = next(c for c in diag.root_causes if c.category == "model")
    assert _check(model, "context:raiser:unseen") == ["failed"]


def test_a_name_a_modules_getattr_refuses_is_the_callers_code(tmp_path):
    """A library's module ``__getattr__`` (PEP 562, as numpy does for the removed ``np.float``) raises for
    the name its caller asked for: the caller, the program's own frame, is the raiser, so the installed version
    leads and the program's code keeps its place among the three."""
    pkg = tmp_path / "lib" / "python3.11" / "site-packages" / "oldlib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "def __getattr__(name):\n    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')\n"
    )
    script = f"import sys\nsys.path.insert(0, {str(pkg.parent)!r})\nimport oldlib\n\nscale = oldlib.float(2.0)\n"
    err, rc = _run(tmp_path, script)
    assert "__getattr__" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    cats = [c.category for c in diag.root_causes]
    model = next(c for c in diag.root_causes if c.category == "model")
    library = next(c for c in diag.root_causes if c.category == "library")
    assert _check(model, "context:raiser:user") == ["passed"]
    assert _check(library, "context:raiser:user") == ["failed"]
    assert cats[0] == "environment" and "model" in cats[:3], cats  # the installed API, or the code that asked


def test_a_tokenizer_that_cannot_be_resolved_is_the_installation_or_the_name():
    """transformers' "Can't load tokenizer for" (train log): its message names the hub/installation and the
    name or local folder, not a library bug."""
    diag, label = _train_log("environment/hf_cant_load_tokenizer_hub_unreachable")
    cats = [c.category for c in diag.root_causes]
    assert cats[:2] == [label["category"], "config"] == ["environment", "config"]


def test_fp16_gradients_under_a_grad_scaler_offer_who_made_them_fp16(tmp_path):
    """torch's GradScaler refusing fp16 gradients (a real CPU run): the load configuration, the installed
    adapter library and the program's own cast are three distinct hypotheses, not three autograd variants."""
    pytest.importorskip("torch")
    err, rc = _run(
        tmp_path,
        """
        import torch
        net = torch.nn.Linear(4, 1).half()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")
        loss = net(torch.randn(8, 4).half()).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        """,
    )
    assert "Attempting to unscale FP16 gradients" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert {c.category for c in diag.root_causes[:3]} == {"config", "environment", "model"}
    assert diag.root_causes[0].rule == "torch.unscale_fp16_grads"


def test_too_many_open_files_offers_the_limit_and_a_leak(tmp_path):
    """EMFILE from a real process that opens files without closing them under a low descriptor limit: the
    limit (resource) and a leak in the program (model) are both offered, not the limit alone."""
    err, rc = _run(
        tmp_path,
        """
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        handles = [open(__file__) for _ in range(200)]
        """,
    )
    assert "Too many open files" in err
    cats = [c.category for c in diagnose(texts={"stderr": err}, exit_code=rc).root_causes]
    # both offered; the program's own descriptors (the leak it shows) ahead of the limit (kland5: EMFILE is the
    # per-process limit, and a program that keeps opening reaches any limit)
    assert cats[:2] == ["model", "resource"], cats


def test_an_unknown_choice_offers_the_installed_release_beside_a_typo(tmp_path):
    """argparse rejecting a choice (a real run): a wrong value (config) and a release of the program or its
    plugin that lacks the choice (environment) are distinct hypotheses in the top 3."""
    script = tmp_path / "serve.py"
    script.write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--quantization', choices=['awq', 'gptq'])\n"
        "p.parse_args()\n"
    )
    p = subprocess.run([sys.executable, str(script), "--quantization", "ascend"], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice" in p.stderr
    cats = [c.category for c in diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode).root_causes]
    assert cats[0] == "config", cats
    assert "environment" in cats[:3], cats
