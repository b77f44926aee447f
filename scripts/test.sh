#!/usr/bin/env bash
# Set up (if needed), check and run the project's test suite: lint (ruff check), formatting (ruff format
# --check), types (mypy: strict on the engine, parsers, rules and model) and pytest on up to 4 workers.
# Exit 5 (no tests collected) is reported, not hidden.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
for check in "ruff check ." "ruff format --check ." "python -m mypy"; do
  if ! .venv/bin/$check; then
    echo "scripts/test.sh: '$check' failed" >&2
    exit 1
  fi
done
.venv/bin/python -m pytest -p no:cacheprovider -n auto --maxprocesses 4 "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests (exit 5)" >&2
fi
exit "$rc"
