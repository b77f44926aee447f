"""Version skew or the program's code: where the failing call was made (issue 13).

A name an installed package lacks, an API that was removed, a file of an installed package that cannot be
loaded, a requirement pip cannot meet: each reads as "the installed versions" or "a library" or "the
program", and the log tells them apart only by who made the call. ``engine/reason.py`` reads the frames:
a library's own code asking another installed package for a name is version skew between two installed
packages (``api:cross_library``), a library asking its own package is a broken install or release
(``api:own_library``), a file inside ``site-packages`` is the installation's (``path:installed``), and a
package installer's words mean no program code ran (``cue:install``).

Every test runs real Python (and real pip, offline) here, with packages laid out in a real
``site-packages`` folder of ``tmp_path``; the train logs are from the thread corpus's train split.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.engine.corpus_logs import all_checks, cats, context_checks
from tests.engine.corpus_logs import train_log as _train_log


def _site(tmp_path: Path, packages: dict[str, str]) -> Path:
    """A real ``site-packages`` folder holding ``packages`` ({"name/__init__.py": source})."""
    site = tmp_path / "lib" / "site-packages"
    for rel, src in packages.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(src))
    return site


def _run(tmp_path: Path, site: Path, code: str, name: str = "job.py") -> tuple[str, int]:
    """Run ``code`` as the program with ``site`` on its import path; it must fail."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": str(site)}
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr, p.returncode


# beta 2.x: ``convert`` is gone and ``helper(mode=…)`` was removed; alpha was written against beta 1.x
_BETA = """
    def helper(x, mode=None):
        if mode is not None:
            raise RuntimeError("helper(mode=...) was removed in beta 2.0; use helper2")
        return x
"""
_ALPHA = """
    import beta

    def run(x):
        return beta.convert(x)

    def run_mode(x):
        return beta.helper(x, mode="fast")
"""


def test_a_library_asking_another_package_for_a_missing_name_is_version_skew(tmp_path):
    """alpha's code asks beta for ``convert``, which the installed beta lacks: the two installed versions
    do not fit together, so the environment leads with alpha's release as the alternative, and the
    program's code (which made no such call) is moved down. The same missing name asked by the program
    itself is no evidence of skew between packages: the program's code stays a hypothesis."""
    site = _site(tmp_path, {"beta/__init__.py": _BETA, "alpha/__init__.py": _ALPHA})
    err, rc = _run(tmp_path, site, "import alpha\nalpha.run(1)\n")
    assert "module 'beta' has no attribute 'convert'" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert cats(diag, 1) == ["environment"]
    assert "library" in cats(diag)
    assert context_checks(diag, "environment")["context:api:cross_library"] == "passed"
    model = [c for c in diag.root_causes if c.category == "model"]
    assert not model or context_checks(diag, "model")["context:api:cross_library"] == "failed"

    # the same skew at import: alpha imports a submodule the installed beta lacks (Python names the first
    # part of a dotted import that fails, so beta itself imported)
    (site / "alpha" / "compat.py").write_text("from beta.compat import inf\n")
    err, rc = _run(tmp_path, site, "import alpha.compat\n", "compat.py")
    assert "No module named 'beta.compat'" in err
    skew = diagnose(texts={"stderr": err}, exit_code=rc)
    assert set(cats(skew, 2)) == {"environment", "library"}
    assert context_checks(skew, "library")["context:api:cross_library"] == "passed"

    err, rc = _run(tmp_path, site, "import beta\nbeta.convert(1)\n", "own.py")
    own = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:api:cross_library" not in all_checks(own)
    assert {"environment", "model"} <= set(cats(own))


def test_a_removed_api_called_by_another_library_is_skew_not_the_program(tmp_path):
    """beta raises that ``helper(mode=…)`` was removed: called from alpha's code, alpha and beta disagree
    (environment and library are the two hypotheses); called from the program's own code, the program
    uses an API its installed beta removed, and the program's code is among the hypotheses."""
    site = _site(tmp_path, {"beta/__init__.py": _BETA, "alpha/__init__.py": _ALPHA})
    err, rc = _run(tmp_path, site, "import alpha\nalpha.run_mode(1)\n")
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert set(cats(diag, 2)) == {"environment", "library"}
    assert context_checks(diag, "library")["context:api:cross_library"] == "passed"

    err, rc = _run(tmp_path, site, "import beta\nbeta.helper(1, mode='fast')\n", "own.py")
    own = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:api:cross_library" not in all_checks(own)
    assert "model" in cats(own)


def test_a_library_missing_a_name_of_its_own_package_is_its_install_or_release(tmp_path):
    """alpha's ``__init__`` imports ``run`` from its own ``alpha.core``, which this copy lacks (a partial or
    mixed install, or a broken release), or a package's own compiled extension is missing: the
    environment and the library are the two hypotheses, and the move is shown as
    ``context:api:own_library``."""
    site = _site(
        tmp_path, {"alpha/__init__.py": "from alpha.core import run\n", "alpha/core.py": "def start():\n    pass\n"}
    )
    err, rc = _run(tmp_path, site, "import alpha\nalpha.run()\n")
    assert "cannot import name 'run' from 'alpha.core'" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert set(cats(diag, 2)) == {"environment", "library"}
    assert context_checks(diag, "library")["context:api:own_library"] == "passed"

    # a package whose compiled extension is missing from this copy (imported by its own __init__)
    site = _site(tmp_path / "ext", {"epsilon/__init__.py": "from epsilon._C import ops\n"})
    err, rc = _run(tmp_path, site, "import epsilon\n", "ext.py")
    assert "No module named 'epsilon._C'" in err
    ext = diagnose(texts={"stderr": err}, exit_code=rc)
    assert set(cats(ext, 2)) == {"environment", "library"}
    assert context_checks(ext, "library")["context:api:own_library"] == "passed"


def test_a_shared_library_inside_an_installed_package_is_the_installation(tmp_path):
    """gamma loads its own shared library at import (through ctypes, the standard library, on gamma's
    behalf) and the file is not a valid one: the file lies inside an installed package, so the
    installation and the package's release are the hypotheses, not a configured path. The same broken
    file loaded by the program from its own folder is not read as the installation's file."""
    loader = """
        import ctypes
        import os

        _lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libgamma.so"))
    """
    site = _site(tmp_path, {"gamma/__init__.py": loader})
    (site / "gamma" / "libgamma.so").write_bytes(b"not an ELF object, cut short by a broken download\n" * 4)
    err, rc = _run(tmp_path, site, "import gamma\n")
    assert "libgamma.so" in err and "OSError" in err
    diag = diagnose(texts={"stderr": err}, exit_code=rc)
    assert cats(diag, 1) == ["environment"]
    assert "library" in cats(diag)
    checks = context_checks(diag, "library")
    assert checks["context:path:installed"] == "passed"
    assert checks.get("context:raiser:library") == "passed"  # ctypes raised on gamma's behalf, not the program's

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "libmine.so").write_bytes(b"not an ELF object\n" * 4)
    err, rc = _run(tmp_path, site, "import ctypes\nctypes.CDLL('mine/libmine.so')\n", "own.py")
    own = diagnose(texts={"stderr": err}, exit_code=rc)
    assert "context:path:installed" not in all_checks(own)


def test_a_requirement_pip_cannot_find_is_the_packages_not_the_program(tmp_path):
    """Real pip (offline, installing nothing) cannot find a pinned requirement of a requirements file: no
    program code ran, so the program's code is no hypothesis, and the packages' declared requirements
    (a library's packaging) join the installation and the pin."""
    (tmp_path / "requirements.txt").write_text("faildiag-no-such-package==1.0\n")
    cmd = [sys.executable, "-m", "pip", "install", "--isolated", "--no-index", "--disable-pip-version-check"]
    cmd += ["--dry-run", "--target", str(tmp_path / "target"), "-r", str(tmp_path / "requirements.txt")]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0 and "No matching distribution found" in p.stderr, p.stderr
    diag = diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)
    assert "library" in cats(diag)
    assert "model" not in cats(diag)
    assert context_checks(diag, "library")["context:cue:install"] == "passed"


def test_train_logs_where_the_log_cannot_tell_environment_from_library_offer_both():
    """Real train logs labelled ``library`` whose lines read as the installation: a project's pinned
    requirement pip cannot find, and a DLL shipped in torch's wheel that cannot be loaded (diagnosed
    without the pack that knows Windows' loader message). The log cannot tell which of the two it is; both
    are among the three hypotheses."""
    diag, label = _train_log("mindspore/ms_pip_no_mindspore_dist_requirements")
    assert label["category"] == "library"
    assert {"environment", "library"} <= set(cats(diag))

    diag, label = _train_log("environment/pt_win_fbgemm_dll_torch240_regression", "35-system-catalogue.toml")
    assert label["category"] == "library"
    assert not any(c.rule.startswith("loader.") for c in diag.root_causes)  # no rule explains it here
    assert {"environment", "library"} <= set(cats(diag))
