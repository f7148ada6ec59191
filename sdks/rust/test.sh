#!/usr/bin/env bash
# The Rust SDK's whole check, run from the repository root (what ./scripts/test runs):
#   1. the crate packages as users would get it (`cargo package --list`: the files it ships);
#   2. the tests (cargo nextest) against a real `sundial serve` they start: the shared vectors,
#      the executor in-process and against Sundial, the management client.
#
#   SUNDIAL_BIN=target/debug/sundial sdks/rust/test.sh
#
# SUNDIAL_BIN: the sundial binary, relative to the repository root or absolute
# (default target/debug/sundial; built here when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { printf '\n==> %s\n' "$*"; }

say "cargo package --list -p sundial-sdk"
files=$(cargo package --list --allow-dirty -p sundial-sdk)
echo "$files"
for f in Cargo.toml README.md CHANGELOG.md LICENSE src/lib.rs; do
    grep -qx "$f" <<<"$files" || { echo "the package misses $f" >&2; exit 1; }
done

bin=${SUNDIAL_BIN:-target/debug/sundial}
if [ ! -x "$bin" ]; then
    say "cargo build -p sundial ($bin is missing)"
    cargo build -p sundial
fi

say "cargo nextest run -p sundial-sdk"
if cargo nextest --version >/dev/null 2>&1; then
    SUNDIAL_BIN="$bin" cargo nextest run -p sundial-sdk
else
    SUNDIAL_BIN="$bin" cargo test -p sundial-sdk
fi
