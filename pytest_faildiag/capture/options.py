"""What ``faildiag run`` is asked to do and what it saw: the options of one run and its result.

Plain data, no side effects: every other part of the run wrapper (``launch``, ``supervise``, ``runrecord``,
``rundiag``) reads these, so they live apart from all of them.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .proc import signal_name
from .tee import HEAD_BYTES, TAIL_BYTES


@dataclass
class RunOptions:
    command: list[str]
    out: Path
    hang_timeout: float | None = None
    watch: list[Path] = field(default_factory=list)
    nccl_debug: bool = False
    collect: list[Path] = field(default_factory=list)
    echo: bool = True
    interval: float = 1.0
    gpu_interval: float = 10.0
    grace: float = 5.0
    head_bytes: int = HEAD_BYTES
    tail_bytes: int = TAIL_BYTES
    factory_root: Path | None = None  # the team's known-issue cards (None: the engine's own discovery)


@dataclass
class RunResult:
    command: list[str]
    returncode: int | None  # Popen's: negative for a signal; None when the command could not start
    exit_status: int  # what a shell reports and what `faildiag run` exits with
    signal: str | None = None
    hung: bool = False
    hang_detail: str = ""
    duration_s: float = 0.0
    start_error: str | None = None
    oom: dict[str, Any] | None = None
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    omitted_bytes: dict[str, int] = field(default_factory=dict)
    stacks: dict[str, str] = field(default_factory=dict)  # name -> dump text (rank-prefixed)
    timeline: list[dict[str, float]] = field(default_factory=list)
    ranks: dict[int, str] = field(default_factory=dict)  # pid -> rank
    collected: list[str] = field(default_factory=list)
    env_set: dict[str, str] = field(default_factory=dict)
    wrapper_cpu_s: float = 0.0  # CPU time of `faildiag run` itself (all its threads) up to the run's end
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.hung or self.exit_status != 0

    def watchdog_text(self) -> str:
        """What the hang watchdog saw and did, as evidence (``watchdog.txt``): the detection, and that the
        termination signals the log shows after it are faildiag's own stop, not a scheduler's or a person's
        (torchrun reports its own SIGTERM as ``SignalException: Process N got signal: 15``)."""
        if not self.hung:
            return ""
        stopped = next((n for n in self.notes if n.startswith("the run was stopped with")), "")
        how = "SIGKILL" if "SIGKILL" in stopped else "SIGTERM"
        return (
            f"{self.hang_detail}\n"
            f"faildiag: faildiag stopped the hung run itself ({how} to its process group): the termination "
            "signals and exit status after this point are its own\n"
        )

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("timeline")
        d["stacks"] = sorted(self.stacks)
        d["ranks"] = {str(k): v for k, v in self.ranks.items()}
        return d


def signal_of(status: int) -> str | None:
    """The signal a shell status names (137 → SIGKILL); None for a plain exit."""
    return signal_name(status) if status > 128 else None


def command_text(command: Sequence[str]) -> str:
    return shlex.join(command)
