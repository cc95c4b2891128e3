#!/usr/bin/env bash
# ferry's main demo: installs what is missing, builds, then runs a short tour.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/default/apps/ferry demo "$@"
