#!/usr/bin/env bash
# Set up (if needed) and run the main job (scripts/examples.sh): "which change broke it" on a small project
# in a real git repository, then pytest --faildiag on the example suite, which fails on purpose in realistic
# ways so that every failure shows its diagnosis. Its exit status is pytest's (1: tests failed).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
bash scripts/examples.sh "$@"
