#!/usr/bin/env bash
# Installs the Debian packages ferry builds on, only those missing. Idempotent; quiet when
# nothing is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config zlib1g-dev
  libtorch-dev python3-torch
  python3-pybind11 python3-pytest python3-torchvision  # the Python package (python/), its tests and examples
  libopenblas0-openmp  # libtorch's BLAS: Debian's default is the reference netlib one (16x slower GEMM)
  libopenmpi-dev openmpi-bin
  dataset-fashion-mnist
  libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev libsentencepiece-dev
  libpcre2-dev libicu-dev  # tokenizer.json: the pre-tokenizer regexes (PCRE2) and NFC (ICU)
  libcpp-httplib-dev curl  # ferry moe serve's HTTP server; curl is one of its tests' clients
  gnuplot-nox
  clang libclang-rt-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "ferry setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
