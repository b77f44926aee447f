#!/usr/bin/env bash
# "Which change broke it", with real git and real pytest (part of the main job, scripts/examples.sh):
# copy conftest_examples/regression_project into a fresh git repository at DIR (inside the output folder),
# commit it, run `pytest --faildiag` green (faildiag records that revision as the last green run), commit
# conftest_examples/regression_change.patch (an off-by-one in chunked() and an unrelated edit), and run
# `pytest --faildiag` again: its "faildiag reruns" block names the changed line the failing test ran.
# Usage: regression_demo.sh DIR   (DIR is replaced; $FAILDIAG_PYTHON is the interpreter, default .venv's)
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${1:?usage: regression_demo.sh DIR}
PY=${FAILDIAG_PYTHON:-.venv/bin/python}
case "$PY" in /*) ;; *) PY="$PWD/$PY" ;; esac
EXAMPLES="$PWD/conftest_examples"
git_() { git -c user.name=faildiag-example -c user.email=example@invalid -c init.defaultBranch=main \
  -c commit.gpgsign=false -C "$DIR" "$@"; }

rm -rf "$DIR" && mkdir -p "$DIR" || exit 1
cp -R "$EXAMPLES/regression_project/." "$DIR/" || exit 1
echo "=== which change broke it: a real git repository in $DIR ==="
git_ init -q && git_ add -A && git_ commit -qm "inventory: shipping batches and labels" || exit 1
echo "\$ git commit -m 'inventory: shipping batches and labels'   # $(git_ rev-parse --short=12 HEAD)"
echo "\$ pytest --faildiag   # green: faildiag records this revision as the last green run"
(cd "$DIR" && "$PY" -m pytest --faildiag 2>&1 | tail -n 1)
git_ apply "$EXAMPLES/regression_change.patch" && git_ commit -qam "batching: skip the empty tail batch" || exit 1
echo "\$ git commit -am 'batching: skip the empty tail batch'   # $(git_ rev-parse --short=12 HEAD)"
git_ show --stat --format= HEAD | sed 's/^/    /'
echo "\$ pytest --faildiag"
(cd "$DIR" && "$PY" -m pytest --faildiag 2>&1)
echo "=== end of the git example (its tests failed on purpose; the example suite follows) ==="
echo
