#!/usr/bin/env bash
# The test suite: installs what is missing, builds, runs every test (unit, dist, end-to-end),
# including the two that compare with llama.cpp (scripts/peer.sh fetches and builds it once).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
eval "$(bash scripts/peer.sh)"
preset="${FERRY_PRESET:-default}"
ctest --preset "$preset" "$@"
