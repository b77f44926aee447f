"""Who owns the code that raised, in the places a pytest or Python log shows it less plainly: a single-file
project module an ImportError names by its path, the file a SyntaxError names (pytest prints it in its
``E`` lines, Python before its caret lines), and the exception pytest's unraisable/thread warning stands
for. Every log here is a real failure: pytester runs and real ``python`` subprocesses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_faildiag.engine.api import diagnose
from pytest_faildiag.parse.scan import printed_frame


def _facts(diag) -> set[str]:
    """The context facts the diagnosis reports on its causes (``context:<fact>`` checks)."""
    return {v.name.removeprefix("context:") for c in diag.root_causes for v in c.validation_checks}


def _cats(diag) -> list[str]:
    return [c.category for c in diag.root_causes]


def _pytest(result):
    out, err = "\n".join(result.outlines), "\n".join(result.errlines)
    return diagnose(texts={"stdout.txt": out, "stderr.txt": err}, exit_code=int(result.ret), command="pytest")


def _python(tmp_path: Path, files: dict[str, str], script: str = "main.py"):
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body))
    p = subprocess.run([sys.executable, script], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode != 0, p.stdout + p.stderr
    diag = diagnose(
        texts={"stdout.txt": p.stdout, "stderr.txt": p.stderr}, exit_code=p.returncode, command=f"python {script}"
    )
    return diag, p.stderr


# --- 1. a single-file project module ------------------------------------------------------------------


def test_a_name_missing_from_a_module_beside_the_test_is_the_projects_layout(pytester):
    pytester.makepyfile(app="rate = 1\n", test_app="from app import missing\n\ndef test_x():\n    pass\n")
    diag = _pytest(pytester.runpytest("-p", "no:faildiag"))
    assert "import:own_module" in _facts(diag)
    cats = _cats(diag)
    # app.py sits beside the test: no install provides it; the test's import or app's code is wrong
    assert cats[0] == "test_code"
    assert "model" in cats[:3]
    assert cats.index("environment") > cats.index("model")


def test_a_name_missing_from_a_module_imported_in_a_test_body_is_not_the_installation(pytester):
    pytester.makepyfile(app="rate = 1\n", test_app="def test_x():\n    from app import missing\n")
    diag = _pytest(pytester.runpytest("-p", "no:faildiag"))
    assert "import:own_module" in _facts(diag)
    # the module is the project's own, so "an installed module lacks a name" does not read it
    assert "cue:installed_api" not in _facts(diag)
    assert _cats(diag)[0] in ("model", "test_code")
    assert {"model", "test_code"} <= set(_cats(diag)[:3])


def test_a_script_importing_a_missing_name_from_its_own_module_is_the_program(tmp_path):
    diag, err = _python(
        tmp_path, {"helpers.py": "y = 2\n", "app.py": "from helpers import nothing\n", "main.py": "import app\n"}
    )
    assert "helpers.py)" in err  # Python names the file it loaded the module from
    assert "import:own_module" in _facts(diag)
    assert _cats(diag)[0] == "model"


def test_a_project_file_named_like_a_library_shadows_it(tmp_path):
    # a local torch.py is imported instead of the installed torch: the project's file, not the install
    diag, err = _python(tmp_path, {"torch.py": "x = 1\n", "main.py": "from torch import nn\n"})
    assert "torch.py)" in err
    assert "import:own_module" in _facts(diag)
    assert _cats(diag)[0] == "model"


def test_a_librarys_package_folder_run_from_its_checkout_is_not_the_programs_module(tmp_path):
    # a torch/ folder with its __init__.py (a source checkout's root) stays a library that lacks a name
    diag, err = _python(tmp_path, {"torch/__init__.py": "x = 1\n", "main.py": "from torch import nn\n"})
    assert "__init__.py)" in err
    assert "import:own_module" not in _facts(diag)
    assert _cats(diag)[0] == "environment"


# --- 2. where a SyntaxError lives -----------------------------------------------------------------------


def test_printed_frame_reads_a_syntax_errors_location_and_a_formatted_frame():
    fr = printed_frame('  File "/src/app.py", line 7')
    assert fr is not None and (fr.file, fr.line, fr.func) == ("/src/app.py", 7, "")
    fr = printed_frame('  File "/src/conn.py", line 3, in __del__')
    assert fr is not None and fr.func == "__del__"
    assert printed_frame("  x = 'File \"a.py\" is gone'") is None


def test_a_syntax_error_in_a_test_module_is_the_tests_code(pytester):
    pytester.makepyfile(test_bad="def test_x(:\n    pass\n")
    diag = _pytest(pytester.runpytest("-p", "no:faildiag"))
    facts = _facts(diag)
    # pytest's entries end in ast.py (a library-only stack); the E line names the test module
    assert "raiser:library_only" not in facts
    assert {"raiser:test", "syntax:test_file"} <= facts
    assert _cats(diag)[0] == "test_code"


def test_a_syntax_error_in_the_application_a_test_imports_is_the_application(pytester):
    pytester.makepyfile(
        app="def price(:\n    return 1\n", test_app="from app import price\n\ndef test_p():\n    assert price() == 1\n"
    )
    diag = _pytest(pytester.runpytest("-p", "no:faildiag"))
    assert "syntax:own_file" in _facts(diag)
    cats = _cats(diag)
    # the collection error names the test module, but the file that does not parse is app.py
    assert cats[0] == "model"
    assert "test_code" in cats[:3]


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
def test_a_script_that_does_not_parse_is_the_program(tmp_path, monkeypatch, engine):
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    monkeypatch.setenv("FAILDIAG_SCAN_ENGINE", engine)
    # Python prints the SyntaxError without a traceback header: only its function-less frame
    diag, err = _python(tmp_path, {"main.py": "print('a'\nx = 1\n"})
    assert "Traceback" not in err
    facts = _facts(diag)
    assert "raiser:unseen" not in facts
    assert {"raiser:user", "syntax:own_file"} <= facts
    assert _cats(diag)[0] == "model"


def test_an_installed_library_that_does_not_parse_is_the_install_or_the_library(tmp_path):
    site = "venv/lib/python3.11/site-packages"
    diag, _err = _python(
        tmp_path,
        {
            f"{site}/brokenlib/__init__.py": "def f(:\n    pass\n",
            "main.py": f"import sys\nsys.path.insert(0, {site!r})\nimport brokenlib\n",
        },
    )
    assert "syntax:library_file" in _facts(diag)
    cats = _cats(diag)
    assert set(cats[:2]) == {"environment", "library"}


# --- 3. the exception pytest's warning stands for -------------------------------------------------------


def test_an_unraisable_exception_is_read_at_its_chained_cause(pytester):
    pytester.makepyfile(
        conn="class Conn:\n    def __del__(self):\n        raise ValueError('close on a closed socket')\n",
        test_conn="from conn import Conn\n\ndef test_open():\n    Conn()\n",
    )
    diag = _pytest(pytester.runpytest("-p", "no:faildiag", "-W", "error::pytest.PytestUnraisableExceptionWarning"))
    facts = _facts(diag)
    # pytest's own frames raise the warning; its cause was raised in conn.py, the code under test
    assert "raiser:library_only" not in facts
    assert {"raiser:user", "raiser:under_test"} <= facts
    where = [v.detail for c in diag.root_causes for v in c.validation_checks if "raised in" in v.detail]
    assert any("ValueError raised in the program's own code" in w and "conn.py:3" in w for w in where)
    assert _cats(diag)[0] == "model"


def test_a_threads_exception_under_pytest_is_read_at_the_thread(pytester):
    pytester.makepyfile(
        worker=(
            "import threading\n\ndef boom():\n    raise RuntimeError('worker lost its queue')\n\n"
            "def run():\n    t = threading.Thread(target=boom)\n    t.start()\n    t.join()\n"
        ),
        test_worker="from worker import run\n\ndef test_run():\n    run()\n",
    )
    diag = _pytest(pytester.runpytest("-p", "no:faildiag", "-W", "error::pytest.PytestUnhandledThreadExceptionWarning"))
    assert {"raiser:user", "raiser:under_test"} <= _facts(diag)
    assert _cats(diag)[0] == "model"


# --- which part of a test run raised --------------------------------------------------------------------


def test_a_conftest_fixture_a_test_body_and_the_code_under_test_are_told_apart(pytester):
    pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef db():\n    raise KeyError('DB_URL')\n")
    pytester.makepyfile(test_f="def test_x(db):\n    pass\n")
    diag = _pytest(pytester.runpytest("-p", "no:faildiag"))
    assert "raiser:test_setup" in _facts(diag) and _cats(diag)[0] == "test_code"

    (pytester.path / "conftest.py").unlink()
    pytester.makepyfile(test_f="def test_x():\n    d = {}\n    d['k']\n")
    diag = _pytest(pytester.runpytest("-p", "no:faildiag"))
    assert "raiser:test" in _facts(diag) and _cats(diag)[0] == "test_code"

    pytester.makepyfile(
        app="def get(d):\n    return d['k']\n", test_f="from app import get\n\ndef test_x():\n    get({})\n"
    )
    diag = _pytest(pytester.runpytest("-p", "no:faildiag"))
    assert "raiser:under_test" in _facts(diag) and _cats(diag)[0] == "model"
