"""A script a library copies into the program's folders stays that library's code (``[library] copied_scripts``).

DeepSpeed writes its ``zero_to_fp32.py`` into every checkpoint folder it saves, for the user to run there: a
traceback through it is DeepSpeed's code failing, wherever the folder is. Real processes run the same script under
that name and under another (the control: a program's own file).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_faildiag.engine.api import diagnose
from tests.kb.kb_helpers import context_facts, top3

SCRIPT = """\
import sys

def _merge(shards):
    consumed = sum(shards)
    if consumed != 12:
        raise ValueError(f"consumed {consumed} numels out of 12 - something is wrong")

def convert(folder):
    return _merge([4, 4, 2])

if __name__ == "__main__":
    convert(sys.argv[1] if len(sys.argv) > 1 else ".")
"""


def _run(tmp_path: Path, name: str):
    folder = tmp_path / "output" / "checkpoint-100"
    folder.mkdir(parents=True)
    (folder / name).write_text(SCRIPT)
    p = subprocess.run([sys.executable, str(folder / name), str(folder)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "something is wrong" in p.stderr, p.stderr
    return diagnose(texts={"stderr": p.stderr}, exit_code=p.returncode)


def test_deepspeed_s_recovery_script_in_a_checkpoint_folder_is_deepspeed_s_code(tmp_path: Path):
    diag = _run(tmp_path, "zero_to_fp32.py")
    facts = context_facts(diag)
    assert "raiser:library_only" in facts, facts
    assert "raiser:user" not in facts
    assert "library" in top3(diag)


def test_the_same_code_under_the_program_s_own_name_is_the_program_s(tmp_path: Path):
    diag = _run(tmp_path, "convert_checkpoint.py")
    facts = context_facts(diag)
    assert "raiser:user" in facts, facts
    assert "raiser:library_only" not in facts
