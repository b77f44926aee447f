"""Reasoning without signatures: who raised, which stage the frames show, the differential, calibration.

Every traceback here comes from a real Python process run by the test (a real package installed under a
``site-packages`` folder, a real torch DataLoader), never from a canned string.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import calibrate, diversify, frame_owner
from pytest_faildiag.model import RootCause
from pytest_faildiag.parse.scan import Frame
from pytest_faildiag.rules import load_ruleset

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "gpu"
LIBS = load_ruleset().reasoning.libraries


def _run(tmp_path: Path, code: str, env_path: Path | None = None) -> tuple[str, int]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(code))
    env = None
    if env_path is not None:
        import os

        env = {**os.environ, "PYTHONPATH": str(env_path)}
    p = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


@pytest.mark.parametrize(
    ("path", "owner"),
    [
        ("/home/u/proj/train.py", ("user", None)),
        ("/home/u/proj/tests/test_model.py", ("test", None)),
        ("/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", ("library", "torch")),
        ("/usr/lib/python3/dist-packages/numpy/core/_methods.py", ("library", "numpy")),
        ("/usr/lib/python3.11/json/decoder.py", ("stdlib", None)),
        ("C:\\Users\\u\\AppData\\Local\\Programs\\Python\\Python310\\lib\\asyncio\\base_events.py", ("stdlib", None)),
        ("C:\\Python312\\Lib\\site-packages\\torch\\serialization.py", ("library", "torch")),
        ("<frozen importlib._bootstrap>", ("stdlib", None)),
        ("/workspace/vllm/vllm/worker/model_runner.py", ("library", "vllm")),  # a source checkout is still the library
        ("/home/u/proj/datasets/my_data.py", ("user", None)),  # a user folder named like a library is not one
        ("<string>", ("user", None)),
    ],
)
def test_frame_owner_tells_the_programs_code_from_libraries(path, owner):
    assert frame_owner(Frame(path, 1, "f"), LIBS) == owner


def _fake_library(root: Path) -> Path:
    """A real third-party package, installed where pip would put it, with a bug of its own."""
    site = root / "venv" / "lib" / "python3.11" / "site-packages"
    pkg = site / "tinycache"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        class Cache:
            def __init__(self):
                self._store = None  # never initialised: the library's own bug

            def get(self, key):
                return self._store.get(key)
    """)
    )
    return site


def _causes(diag) -> dict[str, RootCause]:
    out: dict[str, RootCause] = {}
    for c in diag.root_causes:
        out.setdefault(c.category, c)
    return out


def test_the_raising_frame_moves_library_and_model_apart(tmp_path):
    site = _fake_library(tmp_path)
    lib_err, rc = _run(tmp_path, "import tinycache\ntinycache.Cache().get('k')\n", site)
    user_dir = tmp_path / "user"
    user_dir.mkdir()
    user_err, rc2 = _run(user_dir, "class Cfg:\n    pass\n\nprint(Cfg().learning_rate)\n")

    in_lib = diagnose(texts={"stderr": lib_err}, exit_code=rc)
    in_user = diagnose(texts={"stderr": user_err}, exit_code=rc2)

    assert in_lib.profile.type == in_user.profile.type == "runtime_error"
    lib_c, user_c = _causes(in_lib), _causes(in_user)
    # the same exception class, raised by a library's own code vs by the program's code
    assert lib_c["library"].confidence > user_c["library"].confidence
    assert user_c["model"].confidence > lib_c["model"].confidence
    # the program's code that raised keeps its place among the three (the attribute family's base rates, those of
    # public threads, put the installed versions and the library first)
    assert "model" in [c.category for c in in_user.root_causes[:3]]
    # the refuting fact is reported on the cause it moved down
    refuted = [v for v in user_c["library"].validation_checks if v.name == "context:raiser:user"]
    assert refuted and refuted[0].status == "failed"
    assert "train.py" in refuted[0].detail


def test_frames_of_a_dataset_put_the_failure_in_the_data_stage(tmp_path):
    err, rc = _run(
        tmp_path,
        """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Records(Dataset):
            def __init__(self):
                self.rows = [{"text": "a", "label": 1}, {"text": "b"}]

            def __len__(self):
                return len(self.rows)

            def __getitem__(self, i):
                row = self.rows[i]
                return torch.tensor([len(row["text"])]), row["label"]

        for batch in DataLoader(Records(), batch_size=1):
            pass
    """,
    )
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert diag.profile.stage == "data"
    assert diag.root_causes[0].category == "dataset"
    checks = {v.name: v for v in diag.root_causes[0].validation_checks}
    assert checks["context:stage:data"].status == "passed"
    assert "__getitem__" in checks["context:stage:data"].detail
    model = next(c for c in diag.root_causes if c.category == "model")
    assert [v.status for v in model.validation_checks if v.name == "context:stage:data"] == ["failed"]


def test_an_exception_line_without_its_traceback_still_names_the_family(tmp_path):
    err, rc = _run(tmp_path, "import definitely_not_installed_pkg\n")
    cut = "\n".join(line for line in err.splitlines() if line.startswith("ModuleNotFoundError"))  # a log cut short
    diag = diagnose(texts={"log": cut})
    assert diag.profile.type == "runtime_error"
    assert diag.profile.stage == "startup"
    assert diag.root_causes[0].category == "environment"


def test_an_oom_offers_distinct_hypotheses_across_categories():
    case = CORPUS / "cuda_oom_single"
    diag = diagnose([str(case / "stderr.txt"), str(case / "stdout.txt")], exit_code=1)
    top3 = [c.category for c in diag.root_causes[:3]]
    assert diag.profile.type == "oom"
    assert len(set(top3)) == 3, top3
    assert top3[0] == "resource"
    assert any(c.rule == "differential:oom" for c in diag.root_causes)


def test_diversify_keeps_the_best_of_each_category_first():
    def rc(cat, conf):
        return RootCause(f"{cat}.{conf}", cat, conf, "")

    ranked = [rc("resource", 0.9), rc("resource", 0.8), rc("resource", 0.7), rc("model", 0.3), rc("config", 0.2)]
    out = diversify(ranked)
    assert [c.category for c in out[:3]] == ["resource", "model", "config"]
    assert all(c.confidence <= 0.2 for c in out[3:])  # a variant never reads as likelier than the shown ones


def test_calibration_is_monotone_and_bounded():
    pts = [(0.0, 0.0), (0.3, 0.2), (0.6, 0.55), (0.9, 0.85), (1.0, 0.95)]
    xs = [i / 50 for i in range(51)]
    ys = [calibrate(x, pts) for x in xs]
    assert all(b >= a for a, b in zip(ys, ys[1:], strict=False))
    assert 0.0 <= min(ys) and max(ys) <= 0.95
    assert calibrate(0.45, []) == 0.45


def test_the_lock_comparison_moves_the_environment_hypothesis(tmp_path):
    """A differential check that really runs: the same import failure, once after the installed packages
    changed since the last green run and once with them unchanged."""
    import copy

    from pytest_faildiag.capture.envlock import build_lock

    err, rc = _run(tmp_path, "from json import loads_fast\n")  # a name this installation does not have
    now = build_lock()
    green_same = copy.deepcopy(now)
    green_other = copy.deepcopy(now)
    name = sorted(green_other["packages"])[0]
    green_other["packages"][name] = "0.0.1"

    def env_cause(green):
        diag = diagnose(texts={"stderr": err}, exit_code=rc, lock=now, context={"last_green_lock": green})
        return next(c for c in diag.root_causes if c.category == "environment")

    changed, unchanged = env_cause(green_other), env_cause(green_same)

    def lock_check(cause):
        return [v for v in cause.validation_checks if v.name == "lock-changed-since-green"]

    assert [v.status for v in lock_check(changed)] == ["passed"]
    assert name in lock_check(changed)[0].detail
    assert [v.status for v in lock_check(unchanged)] == ["failed"]
    assert changed.confidence > unchanged.confidence


def test_the_facts_come_from_the_first_failure_not_from_the_test_that_reported_it(pytester, tmp_path):
    """A test that runs a job and asserts its exit status: the job's own exception (its stderr, kept as
    evidence the way the faildiag_run fixture keeps it) is the failure; the test's AssertionError only
    reports it, so it must not make the cause the test's."""
    job, rc = _run(tmp_path, "open('/nonexistent/shards/train-00001.bin')\n")
    pytester.makepyfile(
        test_job=f"""
        def test_the_job_runs():
            returncode = {rc}
            assert returncode == 0, "the job failed"
    """
    )
    result = pytester.runpytest("-p", "no:faildiag", "--tb=native")
    report = "\n".join(result.outlines)
    assert "Traceback (most recent call last)" in report and "AssertionError" in report
    diag = diagnose(texts={"job.stderr": job, "pytest": report}, exit_code=int(result.ret), command="pytest")
    assert diag.profile.first_failure is not None and "FileNotFoundError" in diag.profile.first_failure.excerpt
    assert diag.root_causes[0].category == "config", [(c.category, c.rule) for c in diag.root_causes]


THREADS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "threads"


def _train_log(name: str):
    """A real log of the thread corpus's train split (dev logs are never fixtures)."""
    import json

    assert json.loads((THREADS / "split.json").read_text())["split"][name] == "train"
    return diagnose([str(THREADS / f"{name}.log")])


def _check(cause: RootCause, name: str) -> str | None:
    return next((v.status for v in cause.validation_checks if v.name == name), None)


def test_a_traceback_cut_before_its_exception_still_says_who_raised():
    """pytest's INTERNALERROR traceback, cut before its exception line: every frame is pytest's or a
    plugin's, so the failure is a library's, and a printed traceback is an error, not an unknown."""
    diag = _train_log("pytest_python/pt_cov_internalerror_malformed_data_file_coverage7")
    assert diag.profile.type == "runtime_error"
    top = diag.root_causes[0]
    assert top.category == "library"
    assert _check(top, "context:raiser:library_only") == "passed"


def test_a_systemexit_raised_by_a_library_is_the_librarys_exit():
    """SystemExit is not an interruption: whoever called sys.exit met the error. Raised inside a library
    with no program frame below it, the library is the first hypothesis, not the runner."""
    diag = _train_log("pytest_python/pt_django_db_setup_xdist2_systemexit")
    cats = [c.category for c in diag.root_causes]
    assert cats[0] == "library"
    assert diag.root_causes[0].rule == "differential:exit"


def test_the_words_of_the_message_imply_the_type_and_the_stage():
    # "Device target [CPU] is not supported": an unsupported operation, and "target" is not a data word
    diag = _train_log("mindspore/ms_cpu_pynative_op_unsupported")
    assert diag.profile.type == "unsupported_op"
    assert diag.root_causes[0].category == "operator"
    assert not any(v.name == "context:cue:data" for c in diag.root_causes for v in c.validation_checks)
    # "While rewriting computation … an HLO": XLA's compiler, so the compile stage
    xla = _train_log("jax/t5x_tpu_x64_rewrite_unimplemented_old_libtpu")
    assert (xla.profile.type, xla.profile.stage) == ("unsupported_op", "compile")


def test_a_log_that_stops_without_any_error_is_a_hang_of_a_single_process():
    """A pytest session that printed its header and nothing after it: no error, no exit status. The run
    stopped making progress; with no rank and no collective backend in sight, no peer can be the cause,
    so the program's own code is offered before a collective."""
    diag = _train_log("pytest_python/pt_hang_nondaemon_thread_before_pytest_main")
    assert (diag.profile.type, diag.profile.stage) == ("hang", "runtime")
    cats = [c.category for c in diag.root_causes]
    assert cats.index("model") < cats.index("communication")
    comm = next(c for c in diag.root_causes if c.category == "communication")
    assert _check(comm, "context:run:single_process") == "failed"


def test_a_missing_module_of_the_tests_own_package_is_the_test_suites_layout(pytester):
    """A real pytest run: a test module imports a helper from its own ``tests`` package, which is not
    importable (no ``__init__.py``). The module is the project's own, so no install fixes it: the
    environment reading of the rule is refuted in full, the stage is collection."""
    pytester.mkdir("tests")
    pytester.mkdir("tests/unit")
    (pytester.path / "tests" / "conftest.py").write_text("AMOUNT = 1\n")
    (pytester.path / "tests" / "unit" / "test_farm.py").write_text(
        "from tests.helpers import amount\n\n\ndef test_amount():\n    assert amount() == 1\n"
    )
    result = pytester.runpytest("-p", "no:faildiag", "--import-mode=importlib", "tests/unit")
    report = "\n".join(result.outlines)
    assert "ModuleNotFoundError" in report
    diag = diagnose(texts={"pytest": report}, exit_code=int(result.ret), command="pytest tests/unit")
    assert diag.profile.stage == "collection"
    assert diag.root_causes[0].category == "test_code", [(c.category, c.rule) for c in diag.root_causes]
    env = next(c for c in diag.root_causes if c.category == "environment")
    assert _check(env, "context:import:own_module") == "failed"


def test_a_collective_error_before_any_progress_is_a_start_up_failure():
    """NCCL creates its communicators at the first collective: an NCCL error with no step printed
    before it happened while setting the job up."""
    diag = _train_log("distributed/nccl_nvls_invalid_argument_fabricmanager")
    assert (diag.profile.type, diag.profile.stage) == ("communication", "startup")


def test_pytest_entries_cut_before_the_exception_still_give_a_ranking():
    """pytest entries on Windows (``..\\lib\\asyncio\\base_events.py:624: in run_until_complete``), cut
    before the ``E`` lines: the innermost frame is the standard library under a plugin's frame, no frame is
    the program's, so a library is the first hypothesis, and a printed traceback is a failure to rank."""
    diag = _train_log("pytest_python/pta_loop_closed_regression_0252")
    assert diag.profile.type == "runtime_error"
    assert diag.root_causes and diag.root_causes[0].category == "library"
    assert _check(diag.root_causes[0], "context:raiser:library_only") == "passed"


def test_an_internalerror_traceback_cut_before_its_exception_is_pytests_own_error():
    """xdist's INTERNALERROR block, cut after its first frame: the scanner strips the ``INTERNALERROR>``
    prefix from the traceback's lines, and the rule still knows the block for pytest's machinery."""
    diag = _train_log("pytest_python/xdist_internalerror_max_worker_restart")
    assert any(c.rule == "pytest.internalerror" for c in diag.root_causes)
    assert diag.root_causes[0].category == "library"


def test_two_ranks_on_one_gpu_fail_at_start_up():
    """NCCL finds the duplicate device while it creates the communicator: the job's set-up."""
    diag = _train_log("distributed/dfine_duplicate_gpu_hardcoded_device")
    assert (diag.profile.type, diag.profile.stage) == ("communication", "startup")
