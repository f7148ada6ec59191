#!/usr/bin/env bash
# The Java example's tests: compiles it with javac and fires it from a real `sundial serve`.
# Run from the repository root (any directory works): examples/java-executor/test.sh [pytest args]
# SUNDIAL_BIN: the sundial binary (default target/debug/sundial, built with `cargo build -p sundial`).
set -euo pipefail
cd "$(dirname "$0")/../.."
export SUNDIAL_BIN="${SUNDIAL_BIN:-target/debug/sundial}"
if target/py-venv/bin/python -c 'import pytest' 2>/dev/null; then
  py=target/py-venv/bin/python
else
  venv=target/java-test-venv
  if ! "$venv/bin/python" -c 'import pytest' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check pytest==9.2.0
  fi
  py=$venv/bin/python
fi
exec "$py" -m pytest -q -p no:cacheprovider examples/java-executor "$@"
