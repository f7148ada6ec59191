#!/usr/bin/env bash
# Regenerate the management client sdks/python/src/sundial_client from openapi/openapi.json
# with the pinned openapi-python-client (requirements-test.txt). Run from anywhere:
#
#   sdks/python/regenerate.sh            # rewrite src/sundial_client in place
#   sdks/python/regenerate.sh OUT_DIR    # write the package to OUT_DIR/sundial_client (drift check)
#
# Needs `openapi-python-client` and `ruff` on PATH (test.sh's venv has both).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SPEC="$ROOT/openapi/openapi.json"
DEST=${1:-$HERE/src}
# PYTHONHASHSEED=0: the generator orders some imports by set iteration.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && PYTHONHASHSEED=0 openapi-python-client generate --path "$SPEC" --config "$HERE/openapi-python-client.yaml" \
    --meta none --output-path "$TMP/sundial_client" >"$TMP/log" 2>&1) || { cat "$TMP/log" >&2; exit 1; }
if grep -qi "warning" "$TMP/log"; then cat "$TMP/log" >&2; echo "regenerate.sh: the generator warned (see above)" >&2; exit 1; fi
mkdir -p "$DEST"
rm -rf "$DEST/sundial_client"
cp -r "$TMP/sundial_client" "$DEST/sundial_client"
touch "$DEST/sundial_client/py.typed"
echo "regenerated $DEST/sundial_client from $SPEC"
