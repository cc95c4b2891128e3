#!/usr/bin/env bash
# The test suite: installs what is missing, builds, runs every test (unit, dist, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
preset="${FERRY_PRESET:-default}"
ctest --preset "$preset" "$@"
