#!/usr/bin/env bash
# The Python SDK's whole check, run from the repository root:
#   sdks/python/test.sh
# Creates (or reuses) a venv under target/sdk-py-venv, installs the pinned tools and test
# dependencies, builds sundial-sdk as a wheel and installs that wheel, checks the vectors and
# the generated client for drift, runs mypy --strict, then pytest against a real `sundial
# serve` (SUNDIAL_BIN, default target/debug/sundial).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
VENV=${SDK_PY_VENV:-$ROOT/target/sdk-py-venv}
PY=${PYTHON:-python3}
export SUNDIAL_BIN=${SUNDIAL_BIN:-$ROOT/target/debug/sundial}
REQ=sdks/python/requirements-test.txt

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.requirements.sha256"
WANT=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
  echo "$WANT" >"$STAMP"
fi
export PATH="$VENV/bin:$PATH"

echo "== vectors: sdks/vectors/*.json are what generate.py writes"
python sdks/vectors/generate.py --check

echo "== drift: the checked-in client is what the spec generates"
DRIFT=$(mktemp -d)
trap 'rm -rf "$DRIFT"' EXIT
sdks/python/regenerate.sh "$DRIFT" >/dev/null
if ! diff -r sdks/python/src/sundial_client "$DRIFT/sundial_client" >"$DRIFT/diff"; then
  head -50 "$DRIFT/diff"
  echo "sdks/python/src/sundial_client is stale: run sdks/python/regenerate.sh and commit" >&2
  exit 1
fi

echo "== build: the wheel users install"
rm -rf "$DRIFT/wheel"
pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation -w "$DRIFT/wheel" sdks/python
pip install -q --disable-pip-version-check --no-deps --force-reinstall "$DRIFT"/wheel/sundial_sdk-*.whl

echo "== mypy --strict (Python 3.9 target): the SDK and the generated client"
(cd sdks/python && mypy src/sundial src/sundial_client)

echo "== pytest against $SUNDIAL_BIN"
# Run from the tests folder so the installed wheel, not the source tree, is imported.
(cd sdks/python/tests && python -m pytest -q -p no:cacheprovider . "$@")
