#!/bin/bash
# A bash job (needs the shell runtime: `sundial serve --allow-shell`). It runs in
# bubblewrap as an unprivileged user with no network, a read-only system, its own
# /tmp and /work, and cgroup/rlimit caps. $1 is the run's params (JSON).
set -euo pipefail
mkdir -p /work/old
for i in 1 2 3; do touch "/work/old/file-$i"; done
removed=$(find /work/old -type f -delete -print | wc -l)
echo "removed $removed files"
echo "{\"removed\": $removed}"
