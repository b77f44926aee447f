"""Fix mode: propose one fix from a snapshot's top-ranked cause, apply it only when confirmed, verify it.

Stages, one module each: ``context`` (what a snapshot and its working folder tell about the failure),
``propose`` (one concrete change, or manual steps when no safe automatic change exists), ``apply``
(backups inside the snapshot, atomic replacement, rollback) and ``verify`` (rerun the original command,
compare with the original failure point, proven reached by ``probe``). ``paths`` keeps reads and writes to
regular files inside the project and fix mode's own folder; ``display`` makes control characters visible in
everything shown; the rerun's command runs unasked only when ``pytest_faildiag.seal`` shows this machine
recorded it. ``commands/fix.py`` is the command line over them.
Nothing here edits a file unless ``apply_proposal`` is called, and the CLI calls it only after an explicit
confirmation.
"""

from __future__ import annotations

from .apply import FixError, apply_proposal, rollback
from .context import FixContext, load_context
from .propose import Change, Proposal, propose
from .verify import Verification, record_fix, rerun_and_compare

__all__ = [
    "Change",
    "FixContext",
    "FixError",
    "Proposal",
    "Verification",
    "apply_proposal",
    "load_context",
    "propose",
    "record_fix",
    "rerun_and_compare",
    "rollback",
]
