#!/usr/bin/env bash
# Set up (if needed) and run the project's test suite. Exit 5 (no tests collected) is reported, not hidden.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
.venv/bin/python -m pytest -p no:cacheprovider "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests (exit 5)" >&2
fi
exit "$rc"
