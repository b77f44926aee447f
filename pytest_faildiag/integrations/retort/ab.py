"""A/B re-runs of one run's tests that change a single environment variable (``faildiag retort ab``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_faildiag.integrations.retort.groundtruth import ground_truth, inventory
from pytest_faildiag.integrations.retort.model import Options, RetortInputError, RunRecord
from pytest_faildiag.integrations.retort.signals import _read_json


@dataclass
class ABArm:
    label: str
    value: str | None
    outcomes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for o in self.outcomes if o == "passed")


def ab_test(
    rep_dir: Path,
    variable: str,
    value_a: str | None,
    value_b: str | None,
    n: int = 5,
    language: str | None = None,
    timeout: float = 120.0,
    work_dir: Path | None = None,
) -> tuple[ABArm, ABArm]:
    """Run the run's tests ``n`` times per arm, changing only environment variable ``variable``.

    Why an env var: it is the one knob every runner honours without editing the run's code (a DB path, a port,
    a worker count, a seed). ``None`` as a value means "unset". Arms alternate (A, B, A, B, ...) so a drift in the
    machine affects both equally. Each run gets a fresh clean copy. Raises RetortInputError for a missing folder.
    """
    if not rep_dir.is_dir():
        raise RetortInputError(f"run folder not found: {rep_dir}")
    meta, _ = _read_json(rep_dir / "_meta.json")
    stack, _ = _read_json(rep_dir / "stack.json")
    lang = language or (stack or {}).get("language") or ((meta or {}).get("run_config") or {}).get("language")
    if not lang:
        inv = inventory(rep_dir)
        lang = inv.languages.most_common(1)[0][0] if inv.languages else "python"
    arms = (ABArm("A", value_a), ABArm("B", value_b))
    inv = inventory(rep_dir)
    for _ in range(max(1, n)):
        for arm in arms:
            rec = RunRecord(
                experiment=rep_dir.parent, rel=rep_dir.name, rep_dir=rep_dir, run_config={"language": str(lang)}
            )
            opts = Options(test_timeout=timeout, work_dir=work_dir, extra_env={variable: arm.value})
            arm.outcomes.append(ground_truth(rec, inv, opts).status)
    return arms
