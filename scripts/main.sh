#!/usr/bin/env bash
# Set up (if needed) and run the main job: pytest --faildiag on the example suite, which fails on purpose
# in realistic ways so that every failure shows its diagnosis. Its exit status is pytest's (1: tests failed).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
.venv/bin/python -m pytest --faildiag -p no:cacheprovider conftest_examples/ "$@"
