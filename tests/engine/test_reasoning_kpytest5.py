"""pytest's own reports read without a signature (engine/reason.py and 05-reasoning.toml, "kpytest5").

Each test shows the reasoning on a train log with the rules that explain it left out (as
``bench/confusion.py --without-rules`` reads it), or on output produced here by the real tool (pytest run in a
child interpreter):

* pytest's import-mismatch report names two files: two of the tests sharing a basename is the tests' layout
  (``pytest:mismatch_basename``); an installed file (site-packages) imported where pytest collects a source tree's
  copy is the run's set-up (``pytest:mismatch_installed``), not a test's code;
* pytest's ``INTERNALERROR>`` report is an exception that escaped its session loop: pytest's own code or a hook
  implementation (a plugin's), never a test's (``pytest:internalerror``);
* a Cython frame (``mtrand.pyx``, function ``numpy.random.mtrand.RandomState.seed``) of a well-known library's
  extension is that library's code, not the program's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

from bench.ablate_rules import OWN, dropping
from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.engine.reason import frame_owner
from pytest_faildiag.parse.scan import Frame
from pytest_faildiag.rules import load_ruleset
from tests.kb.kb_helpers import fact_statuses, top3, train_log_with_rules, train_log_without_rules


def _without(rules: set[str], **kw):
    with warnings.catch_warnings(), dropping(rules):
        warnings.simplefilter("ignore")
        return diagnose(**kw)


def _pytest(cwd: Path, *args: str, pythonpath: Path | None = None) -> tuple[str, int]:
    """Run the real pytest in a child interpreter (``-I``-like: the working folder is not put on sys.path, so
    only PYTHONPATH's folders and the venv are importable, as with the ``pytest`` console script)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    code = "import sys, pytest; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; sys.exit(pytest.main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "-p", "no:cacheprovider", "-p", "no:faildiag", "-p", "no:randomly", *args]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=240)
    return p.stdout + p.stderr, p.returncode


def _site(tmp_path: Path, files: dict[str, str]) -> Path:
    """A folder named like an install's site-packages holding these files."""
    site = tmp_path / "inst" / "lib" / "python3" / "site-packages"
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(textwrap.dedent(text))
    return site


_MISMATCH_RULES = {"pytest.import_mismatch", "pytest.collection_error"}


# --- pytest's import-mismatch report ---------------------------------------------------------------------------


def test_a_mismatch_report_cut_to_its_paths_is_the_tests_layout():
    # the paste kept only the lines below "import file mismatch:" (two test folders holding test_asvspoof.py):
    # no rule fires, the two paths are read
    name = "pytest_python/versa_duplicate_test_basenames_import_mismatch"
    diag, label = train_log_with_rules(name)
    assert label["category"] == "test_code"
    assert diag.profile.stage == "collection"
    assert "passed" in fact_statuses(diag).get("pytest:mismatch_basename", set())
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]


def test_a_basename_used_twice_leads_without_the_rules():
    name = "pytest_python/bmad_regression_test_duplicate_basename_test_lcavity"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "test_code"
    assert "passed" in fact_statuses(diag).get("pytest:mismatch_basename", set())
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]


def test_an_installed_copy_is_the_runs_set_up_not_the_tests():
    # Nix's build ran pytest in the unpacked source while the package was imported from its install
    name = "pytest_python/sopel_nix_pytest_source_tree_collects_installed_test_tools"
    for diag, label in (train_log_without_rules(name), train_log_with_rules(name)):
        assert label["category"] == "config"
        checks = fact_statuses(diag)
        assert "passed" in checks.get("pytest:mismatch_installed", set()), checks
        assert "pytest:mismatch_basename" not in checks
        assert "config" in top3(diag), [(c.category, c.rule) for c in diag.root_causes]
    # with every rule the basename rule's test_code cause is refuted in full (0.35), config now among the three
    test_code = next(c for c in diag.root_causes if c.rule == "pytest.import_mismatch")
    assert any(
        v.name == "context:pytest:mismatch_installed" and v.status == "failed" for v in test_code.validation_checks
    )


def test_a_real_basename_used_twice(tmp_path):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "test_same.py").write_text(f"def test_{sub}():\n    pass\n")
    out, rc = _pytest(tmp_path, "--import-mode=prepend")
    assert rc == 2 and "which is not the same as the test file we want to collect" in out, out[-2000:]
    diag = _without(_MISMATCH_RULES, texts={"out.txt": out}, exit_code=rc)
    assert "passed" in fact_statuses(diag).get("pytest:mismatch_basename", set())
    assert diag.profile.stage == "collection"
    assert top3(diag)[0] == "test_code", [(c.category, c.rule) for c in diag.root_causes]


def test_a_real_source_tree_collected_beside_its_install(tmp_path):
    # the package is installed (a plugin of it imports it first, as pytest11 entry points do) and pytest is pointed
    # at the source tree holding the same package: pytest's prepend mode resolves pkg.test_tools to the install
    site = _site(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/test_tools.py": "def test_t():\n    pass\n", "pkg_plugin.py": "import pkg\n"},
    )
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "test_tools.py").write_text("def test_t():\n    pass\n")
    out, rc = _pytest(src, "-p", "pkg_plugin", "pkg", pythonpath=site)
    assert rc == 2 and "import file mismatch" in out and "site-packages/pkg/test_tools.py" in out, out[-2000:]
    diag = _without(_MISMATCH_RULES, texts={"out.txt": out}, exit_code=rc)
    checks = fact_statuses(diag)
    assert "passed" in checks.get("pytest:mismatch_installed", set()), checks
    assert "pytest:mismatch_basename" not in checks
    cats = top3(diag)
    assert "config" in cats and cats.index("config") < (cats.index("test_code") if "test_code" in cats else 3), cats


# --- pytest's INTERNALERROR report -----------------------------------------------------------------------------


def test_an_internalerror_is_a_plugins_or_pytests_code():
    # pytest 3.6 read a plugin module's variable named pytest_config as a hook (a pytest regression)
    name = "pytest_python/pt_unknown_hook_pytest_config_variable"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    assert "passed" in fact_statuses(diag).get("pytest:internalerror", set())
    assert top3(diag)[0] == "library", [(c.category, c.rule) for c in diag.root_causes]


def test_a_real_plugin_hook_raising_is_an_internalerror(tmp_path):
    site = _site(
        tmp_path,
        {
            "pytest_seedy.py": """
                def pytest_collection_modifyitems(session, config, items):
                    _reseed(2**40)


                def _reseed(seed):
                    if not 0 <= seed < 2**32:
                        raise ValueError("Seed must be between 0 and 2**32 - 1")
            """
        },
    )
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    out, rc = _pytest(tmp_path / "t", "-p", "pytest_seedy", pythonpath=site)
    assert rc == 3 and "INTERNALERROR> ValueError: Seed must be between" in out, out[-2000:]
    rules: set[str] = set()
    diag = diagnose(texts={"out.txt": out}, exit_code=rc)
    while more := {c.rule for c in diag.root_causes if not c.rule.startswith(OWN)} - rules:
        rules |= more  # every rule that explains it left out, also those a dropped rule had outranked
        diag = _without(rules, texts={"out.txt": out}, exit_code=rc)
    checks = fact_statuses(diag)
    assert "passed" in checks.get("pytest:internalerror", set()), checks
    assert top3(diag)[0] == "library", [(c.category, c.rule) for c in diag.root_causes]


def test_a_tests_own_exception_is_no_internalerror(tmp_path):
    # the same ValueError raised by a test is pytest's report of that test's failure, not an INTERNALERROR
    (tmp_path / "test_v.py").write_text("def test_v():\n    raise ValueError('Seed must be between 0 and 2**32 - 1')\n")
    out, rc = _pytest(tmp_path)
    assert rc == 1 and "INTERNALERROR" not in out, out[-2000:]
    diag = diagnose(texts={"out.txt": out}, exit_code=rc)
    assert "pytest:internalerror" not in fact_statuses(diag)


# --- Cython frames ---------------------------------------------------------------------------------------------


def test_a_cython_frame_of_a_known_library_is_that_library():
    libs = load_ruleset().reasoning.libraries
    assert frame_owner(Frame("mtrand.pyx", 243, "numpy.random.mtrand.RandomState.seed"), libs) == ("library", "numpy")
    assert (
        frame_owner(Frame("_mt19937.pyx", 180, "numpy.random._mt19937.MT19937._legacy_seeding"), libs)[0] == "library"
    )
    # a project's own Cython module stays the program's
    assert frame_owner(Frame("pyserver.pyx", 184, "pyserver.server"), libs) == ("user", None)
    # an ordinary file is unchanged
    assert frame_owner(Frame("train.py", 3, "numpy_like.run"), libs) == ("user", None)


def test_numpys_seed_check_called_by_a_plugin_is_not_the_programs():
    # pytest-randomly handed numpy's legacy seeding an unclamped seed (INTERNALERROR; numpy's Cython frames)
    name = "pytest_python/pytest_randomly_unclamped_seed_numpy_reseed"
    diag, label = train_log_without_rules(name)
    assert label["category"] == "library"
    checks = fact_statuses(diag)
    assert "raiser:user" not in checks, checks
    assert top3(diag)[0] == "library", [(c.category, c.rule) for c in diag.root_causes]
