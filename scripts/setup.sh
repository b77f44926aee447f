#!/usr/bin/env bash
# Create .venv and install the project with everything its tests and examples need (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
# The extra asks for any torch>=2.1; the suite runs with 2.13.0, which resolves to the CPU wheel where one is
# provided locally (on other machines pip fetches it).
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,torch]' 'torch==2.13.0'
