#!/usr/bin/env bash
# Installs missing packages, configures with the given preset (default: "default") and builds.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${FERRY_PRESET:-default}"
bash scripts/setup.sh
if [ ! -f "build/$preset/CMakeCache.txt" ]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset" -j "${FERRY_JOBS:-2}"
