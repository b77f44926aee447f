"""The environment the wrapped command runs with: what ``faildiag run`` adds, never overriding the user.

Unbuffered output and faulthandler (a crash must not lose its last lines or its stack), torchelastic's error
file and the NCCL flight recorder pointed into the output folder, and for a hang timeout the generated
``sitecustomize`` that dumps stacks on SIGUSR1.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..fsio import safe_mkdir
from .options import RunOptions


def child_env(
    opts: RunOptions, base: dict[str, str] | None = None, *, inject: Path | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """The child's environment and the variables we added (never overriding what the user set).

    ``inject`` is the folder holding the generated ``sitecustomize.py`` (``stacks.install_stack_handler``),
    put first on ``PYTHONPATH`` when a hang timeout is set. The folders the child writes into by name are
    created fresh: a file planted there (``elastic/error.json -> ~/.bashrc``) would be written through."""
    env = dict(os.environ if base is None else base)
    added: dict[str, str] = {}
    out = opts.out.resolve()

    def setdefault(key: str, value: str) -> None:
        if key not in env:
            env[key] = value
            added[key] = value

    setdefault("PYTHONUNBUFFERED", "1")  # a crash must not lose the last lines sitting in a pipe buffer
    setdefault("PYTHONFAULTHANDLER", "1")  # a segfault/abort prints the Python stack of every thread
    elastic = out / "elastic" / "error.json"
    if "TORCHELASTIC_ERROR_FILE" not in env:
        safe_mkdir(out, "elastic", fresh=True)
        setdefault("TORCHELASTIC_ERROR_FILE", str(elastic))
    if opts.nccl_debug:
        safe_mkdir(out, "nccl", fresh=True)
        setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
        setdefault("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000")
        setdefault("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", str(out / "nccl" / "nccl_trace_rank_"))
        setdefault("TORCH_FR_BUFFER_SIZE", "2000")  # the same settings under their newer names
        setdefault("TORCH_FR_DUMP_TEMP_FILE", str(out / "nccl" / "nccl_trace_rank_"))
    if opts.hang_timeout and inject is not None:
        stacks = safe_mkdir(out, "stacks", fresh=True)
        env["FAILDIAG_STACK_DIR"] = str(stacks)
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(inject) + (os.pathsep + old if old else "")
        added["PYTHONPATH"] = env["PYTHONPATH"]
        added["FAILDIAG_STACK_DIR"] = str(stacks)
    return env, added
