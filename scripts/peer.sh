#!/usr/bin/env bash
# The peer the test suite compares ferry with: llama.cpp at the release bench/peers pins (npm:
# node-llama-cpp's prebuilt CPU libraries and its source bundle), fetched and built once into
# build/peers, the cache the benchmarks use too; only llama-quantize is compiled (seconds). Prints
# the environment the two comparison tests read, for `eval`:
#   tests/moe/quantize_vs_llama_quantize.sh  LLAMA_QUANTIZE
#   tests/moe/logits_vs_llama.sh             LLAMA_CPP_DIR, LLAMA_LIB_DIR
# Installs Debian's npm when there is none. When the fetch fails (no network), says so on stderr
# and prints nothing: the two tests then skip, naming what they lack.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "ferry setup: installing npm (to fetch the llama.cpp the comparison tests run)" >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm >/dev/null ||
    { echo "ferry: could not install npm; the llama.cpp comparison tests will skip" >&2; exit 0; }
fi
log=build/peers.log
mkdir -p build
# A bash of its own, so that the first failing step stops it (errexit is off inside an `if`).
if ! PEERS_DIR=build/peers PEER_TOOLS=quantize bash -euo pipefail -c 'source bench/peers/llama_cpp.sh' >"$log" 2>&1; then
  echo "ferry: could not fetch or build llama.cpp (see $log); the llama.cpp comparison tests will skip" >&2
  exit 0
fi
peers="$(realpath build/peers)"
echo "export LLAMA_QUANTIZE='$peers/bin/llama-quantize'"
echo "export LLAMA_CPP_DIR='$peers/llama.cpp'"
echo "export LLAMA_LIB_DIR='$peers/pkg/package/bins/linux-x64'"
