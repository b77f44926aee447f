#!/usr/bin/env bash
# The main job without the setup (scripts/main.sh runs setup.sh, then this): first "which change broke it"
# on a small project in a real git repository (scripts/regression_demo.sh), then `pytest --faildiag` on
# conftest_examples/. Everything is written under the output folder (faildiag-out, or --faildiag-out=DIR).
# Its exit status is pytest's on the example suite (1: the examples fail on purpose).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${FAILDIAG_PYTHON:-.venv/bin/python}
OUT=faildiag-out
for arg in "$@"; do
  case "$arg" in --faildiag-out=*) OUT=${arg#--faildiag-out=} ;; esac
done
[ -n "$OUT" ] || { echo "examples.sh: empty --faildiag-out" >&2; exit 2; }
FAILDIAG_PYTHON="$PY" bash scripts/regression_demo.sh "$OUT/regression-demo"
# test_cache_warmup.py fails one run in three: a fresh counter here makes the session's run the failing one
# (absolute: the reruns run in the examples' rootdir)
STATE="$OUT/example-state"
rm -rf "$STATE" && mkdir -p "$STATE" && STATE=$(cd "$STATE" && pwd) || exit 1
FAILDIAG_EXAMPLE_STATE="$STATE" "$PY" -m pytest --faildiag -p no:cacheprovider --faildiag-out="$OUT" \
  conftest_examples/ "$@"
