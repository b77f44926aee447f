"""The installed releases shown changing under a call that no longer fits (issue 13, kowner).

A failure that says an installed package's API does not fit the call (a name missing, a keyword or an argument
count the installed signature does not take, a removed or renamed name) and a log that shows a package installer
putting releases in place before it (pip's "Successfully installed x-2.0", conda's "The following packages will be
UPDATED:", mamba's "Changing a-1 ==> a-2", uv's "Installed N packages in …", pip's resolver report "… requires b<2,
but you have b 2.0 which is incompatible."): the log itself shows the installed versions changing under the calling
code, so ``env:installed_in_run`` lifts the installation, whoever's code made the call. An installer's lines beside a
failure that says nothing of an API, and an API mismatch without them, are not read.

The train logs are diagnosed as ``bench/confusion.py --without-rules`` does (the rules that explained them left
out) and with every rule. The real runs use the installed pip on a wheel built here (no network) and plain Python.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import context_facts, top3, train_log_with_rules, train_log_without_rules

FACT = "env:installed_in_run"
HINT = "reason.installer_changed"

# ---------------------------------------------------------------------------------------------------------------
# train logs
# ---------------------------------------------------------------------------------------------------------------


def test_train_log_conda_updates_blackjax_then_pymc_call_misses_an_argument() -> None:
    """PyMC's CI: the environment update links blackjax 1.0.0 (mamba's "Linking …", "Changing jax-0.4.13 ==>
    jax-0.4.16"), then PyMC's call ``window_adaptation(algorithm=…, logprob_fn=…)`` misses the argument blackjax
    1.0 requires. Before, the program's code led (a TypeError of a call) and the installed versions were second."""
    diag, label = train_log_without_rules("jax/pymc_blackjax10_window_adaptation_signature_changed")
    assert label["category"] == "environment"
    assert FACT in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)
    diag, _ = train_log_with_rules("jax/pymc_blackjax10_window_adaptation_signature_changed")
    assert top3(diag)[0] == "environment", top3(diag)


def test_train_log_pip_installs_numpy2_before_an_acl_error_is_not_an_api_mismatch() -> None:
    """pip's "Successfully installed numpy-2.0.2 torch-npu-…" heads the paste, but the failure is CANN's ACL
    error code, not a call that does not fit an API: the installer's line alone is not read."""
    diag, _ = train_log_without_rules("ascend/pta_set_device_acl_500001_numpy2_with_cann")
    assert FACT not in context_facts(diag), context_facts(diag)


# ---------------------------------------------------------------------------------------------------------------
# real runs: the installed pip on a wheel built here, and the program that calls it
# ---------------------------------------------------------------------------------------------------------------

_PKG = '''
def load(path, *, mmap=False):
    """fakepkg 2.0: the ``legacy`` keyword of 1.x is gone."""
    return path
'''


def _wheel(tmp_path: Path, name: str = "fakepkg", version: str = "2.0", requires: str = "") -> Path:
    """A pure-Python wheel of ``name`` (its ``__init__`` is ``_PKG``), built by hand: pip installs it offline."""
    whl = tmp_path / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + (
        f"Requires-Dist: {requires}\n" if requires else ""
    )
    files = {
        f"{name}/__init__.py": textwrap.dedent(_PKG),
        f"{info}/METADATA": meta,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: kowner-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(whl, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return whl


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180)


def _program(tmp_path: Path, call: str) -> str:
    """Run a program that imports the installed ``fakepkg`` and makes ``call``; its stderr (it must fail)."""
    code = f"import sys\nsys.path.insert(0, {str(tmp_path / 'site')!r})\nimport fakepkg\n{call}\n"
    (tmp_path / "prog.py").write_text(code)
    p = subprocess.run([sys.executable, "prog.py"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode != 0, p.stdout + p.stderr
    return p.stderr


def _install_fakepkg(tmp_path: Path) -> str:
    whl = _wheel(tmp_path)
    p = _pip("install", "--no-index", "--no-deps", "--no-cache-dir", "--target", str(tmp_path / "site"), str(whl))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Successfully installed fakepkg-2.0" in p.stdout, p.stdout
    return p.stdout


def test_real_pip_install_then_a_removed_keyword(tmp_path: Path) -> None:
    """A CI job's log: pip installs fakepkg 2.0, then the program calls ``load(…, legacy=True)``, a keyword the
    new release dropped (CPython: "load() got an unexpected keyword argument 'legacy'")."""
    pip_out = _install_fakepkg(tmp_path)
    err = _program(tmp_path, "fakepkg.load('weights.bin', legacy=True)")
    assert "unexpected keyword argument 'legacy'" in err, err
    diag = diagnose(texts={"job.log": pip_out + err}, exit_code=1)
    assert FACT in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)
    alone = diagnose(texts={"job.log": err}, exit_code=1)  # the traceback without the installer's lines
    assert FACT not in context_facts(alone), context_facts(alone)


def test_real_pip_install_then_a_failure_that_is_no_api_mismatch(tmp_path: Path) -> None:
    """The same installation followed by the program's own ZeroDivisionError: nothing says an API changed."""
    pip_out = _install_fakepkg(tmp_path)
    err = _program(tmp_path, "fakepkg.load('weights.bin')\nprint(1 / 0)")
    diag = diagnose(texts={"job.log": pip_out + err}, exit_code=1)
    assert any(f.rule.id == HINT for f in _findings(pip_out + err)), "the installer's line was not kept"
    assert FACT not in context_facts(diag), context_facts(diag)


def test_real_pip_resolver_conflict_then_a_missing_name(tmp_path: Path) -> None:
    """pip's own report of a declared requirement the installed set breaks ("app 1.0 requires fakepkg<2, but you
    have fakepkg 2.0 which is incompatible.", commands/install.py), then the program asks the new fakepkg for a
    name 1.x had: ``module 'fakepkg' has no attribute 'load_legacy'``."""
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    py = env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "fakepkg", "1.0")
    _wheel(wheels, "fakepkg", "2.0")
    _wheel(wheels, "app", "1.0", requires="fakepkg<2")
    base = ["--python", str(py), "install", "--no-index", "--no-cache-dir", "--find-links", str(wheels)]
    first = _pip(*base, "app")
    assert first.returncode == 0, first.stdout + first.stderr
    second = _pip(*base, "fakepkg==2.0")
    out = second.stdout + second.stderr
    assert "which is incompatible." in out, out
    p = subprocess.run(
        [str(py), "-c", "import fakepkg\nfakepkg.load_legacy('weights.bin')"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "has no attribute 'load_legacy'" in p.stderr, p.stderr
    diag = diagnose(texts={"job.log": out + p.stderr}, exit_code=p.returncode)
    assert FACT in context_facts(diag), context_facts(diag)
    assert top3(diag)[0] == "environment", top3(diag)


def _findings(text: str) -> list:
    from pytest_faildiag.parse.scan import ScanResult, scan_text
    from pytest_faildiag.rules import load_ruleset

    scan = ScanResult()
    scan_text(text, "job.log", load_ruleset(), scan)
    return scan.findings
