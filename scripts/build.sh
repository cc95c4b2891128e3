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
# The Python package (python/, built into build/<preset>/python): one .pth file makes
# `import ferry` work for Debian's /usr/bin/python3 (docs/python.md). Skipped without write access.
if compgen -G "build/$preset/python/ferry/_C*.so" >/dev/null; then
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  if mkdir -p "$site" 2>/dev/null && [ -w "$site" ]; then
    echo "$(pwd)/build/$preset/python" >"$site/ferry.pth"
  fi
fi
