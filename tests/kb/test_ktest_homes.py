"""Test code and resource homes that need no signature (05-reasoning.toml, "test code and resource homes (ktest)").

Each test shows the reasoning on a real log with the rules that explain it left out (as
``bench/confusion.py --without-rules`` reads it), or on output produced here by the real tool:

* Hypothesis's own errors (Flaky, DeadlineExceeded, …) are its verdict on the test's settings and strategies:
  the tests' own code, and a sign that tests ran;
* pytest's ConftestImportFailure: the tests' set-up failed to import, pytest's frames only re-raised it;
* shared memory (/dev/shm) and disk space that ran out, read in the log's error lines too, and NCCL's
  failed system call: the machine's resources or the container that sized them.
"""

from __future__ import annotations

import textwrap
import warnings

from bench.ablate_rules import dropping
from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import fact_statuses, run_failing, top3, train_log_path


def _without(name: str, rules: set[str]):
    with warnings.catch_warnings(), dropping(rules):
        warnings.simplefilter("ignore")
        return diagnose([str(train_log_path(name))])


# --- Hypothesis's verdicts on the test ------------------------------------------------------------------


def test_a_real_hypothesis_deadline_is_the_tests_own_setting(pytester):
    # hypothesis/core.py raises DeadlineExceeded when one example runs past @settings(deadline=...)
    pytester.makepyfile(
        test_prop=textwrap.dedent(
            """
            import time
            from datetime import timedelta

            from hypothesis import given, settings, strategies as st


            @settings(deadline=timedelta(milliseconds=5), max_examples=3, derandomize=True, database=None)
            @given(st.integers())
            def test_slow_property(x):
                time.sleep(0.05)
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    out = "\n".join(result.outlines)
    assert "DeadlineExceeded" in out and "the deadline of" in out, out[-2000:]
    diag = diagnose(texts={"stdout.txt": out}, exit_code=int(result.ret), command="pytest")
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]
    assert "passed" in fact_statuses(diag).get("cue:hypothesis_test", set())


def test_hypothesis_unreliable_timings_without_the_rule_is_the_test():
    # a paste of Hypothesis's Flaky report alone (no pytest header): a Hypothesis error says a test ran
    diag = _without("pytest_python/py_hypothesis_flaky_unreliable_timings_deadline_too_tight", {"hypothesis.flaky"})
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]
    checks = fact_statuses(diag)
    assert "run:no_tests" not in checks
    assert "passed" in checks.get("cue:hypothesis_test", set())


def test_a_test_expecting_a_hypothesis_error_is_the_test():
    # pytest.raises(DeadlineExceeded) that did not raise: the test checks Hypothesis's own behaviour
    diag = _without(
        "pytest_python/py_hypothesis_test_did_not_raise_deadline_exceeded_flaky_test", {"pytest.did_not_raise_timeout"}
    )
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]


def test_a_plain_failed_assertion_is_not_read_as_hypothesis(tmp_path):
    diag, err = run_failing(tmp_path, "assert 1 + 1 == 3, 'sum differs from the expected value'\n")
    assert "AssertionError" in err
    assert "cue:hypothesis_test" not in fact_statuses(diag)


# --- a conftest that failed to import -------------------------------------------------------------------


def test_conftest_import_failure_keeps_the_tests_setup_among_the_three():
    diag = _without(
        "pytest_python/py_collection_conftest_import_failure_style_refactor_broke_import", {"pytest.collection_error"}
    )
    checks = fact_statuses(diag)
    assert "passed" in checks.get("cue:conftest_import", set())
    # pytest's frames re-raised the conftest's error: they do not say that only libraries raised
    assert "raiser:library_only" not in checks
    assert "test_code" in top3(diag)[:2], top3(diag)


# --- shared memory, disk space, NCCL's system call ------------------------------------------------------


def test_nccl_shared_memory_segment_without_the_rules_is_the_resource():
    diag = _without(
        "distributed/dist_vllm_nccl_system_error_shm_segment_docker_shm_too_small",
        {"nccl.error", "nccl.warn.shm_segment"},
    )
    assert top3(diag)[0] == "resource", [(c.category, c.rule) for c in diag.root_causes]
    assert "passed" in fact_statuses(diag).get("cue:shared_memory", set())


def test_a_sigbus_in_a_container_without_the_rules_is_the_resource():
    diag = _without(
        "distributed/dist_nccl_sigbus_bus_error_docker_default_shm_64m",
        {"elastic.child_failed", "proc.sigbus", "torch.dataloader.bus_error"},
    )
    assert top3(diag)[0] == "resource", [(c.category, c.rule) for c in diag.root_causes]


def test_dataloader_workers_short_of_shared_memory_are_read_in_the_error_lines():
    # the exception is "unable to write to file </torch_…>"; the words that name /dev/shm are in the workers'
    # ERROR lines above it
    diag = _without(
        "pytorch/pt_dataloader_worker_bus_error_hub_container_small_dev_shm",
        {"container.small_dev_shm", "torch.dataloader.bus_error"},
    )
    assert "passed" in fact_statuses(diag).get("cue:shared_memory", set())
    assert {"resource", "harness"} & set(top3(diag)[:2]), top3(diag)


def test_nccl_posix_fallocate_on_a_full_shm_keeps_the_resource_among_the_three():
    diag = _without(
        "distributed/dist_xgboost_mgpu_tests_nccl_shm_posix_fallocate_docker_64m_shm", {"nccl.warn", "py.disk_full"}
    )
    assert "resource" in top3(diag), top3(diag)


def test_a_real_enospc_is_the_resource(tmp_path):
    # /dev/full answers every write with ENOSPC, as a full disk does
    diag, err = run_failing(tmp_path, "with open('/dev/full', 'w') as f:\n    f.write('x' * 10)\n")
    assert "[Errno 28] No space left on device" in err
    assert top3(diag)[0] == "resource", [(c.category, c.rule) for c in diag.root_causes]
    assert "passed" in fact_statuses(diag).get("cue:disk_full", set())


def test_enospc_in_ci_without_the_rule_is_the_resource():
    diag = _without("pytest_python/py_pytest_ci_tests_error_enospc_runner_disk_full", {"py.disk_full"})
    assert top3(diag)[0] == "resource", [(c.category, c.rule) for c in diag.root_causes]


def test_nccl_unhandled_system_error_without_the_rule_offers_the_resource():
    diag = _without("distributed/nccl_tests_docker_ipc_unhandled_system", {"nccl.result.system_error"})
    assert "passed" in fact_statuses(diag).get("cue:nccl_system", set())
    assert "resource" in top3(diag), top3(diag)
