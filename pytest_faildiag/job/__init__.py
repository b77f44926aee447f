"""Multi-node jobs: each node's ``faildiag run --job-dir DIR`` writes ``DIR/nodes/<NAME>/`` (``node``), and
``faildiag diagnose DIR`` / ``faildiag job DIR`` merge the node records (``merge``).

Modules: ``node`` (claiming a node folder, writing ``node.json``), ``ranks`` (each rank's first failure and
the collective-timeout anchors, read from the node's own logs), ``hardware`` (kernel log, GPU/NPU counters,
link state), ``timeparse`` (log timestamps to epoch seconds on the host that wrote them), ``merge`` (the
job-level diagnosis), ``cascade.toml`` (which lines are symptoms of another rank's failure).
"""

from __future__ import annotations

__all__ = ["merge", "node"]
