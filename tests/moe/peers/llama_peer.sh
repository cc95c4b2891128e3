# shellcheck shell=bash
# Sourced by the tests that compare with llama.cpp: skips the test (exit 77) unless LLAMA_CPP_DIR
# (llama.cpp's source, for the headers) and LLAMA_LIB_DIR (its prebuilt libraries: libllama, libggml*,
# one libggml-cpu-*.so per instruction set, as bench/peers/run.sh fetches them) are set; makes $tmp, a
# directory removed on exit. llama_peer_build NAME builds tests/moe/peers/NAME.cc into $tmp/NAME.
if [ -z "${LLAMA_CPP_DIR:-}" ] || [ ! -f "${LLAMA_CPP_DIR}/include/llama.h" ] || [ -z "${LLAMA_LIB_DIR:-}" ] ||
   ! compgen -G "${LLAMA_LIB_DIR}/libllama*.so" >/dev/null; then
  echo "skipped: set LLAMA_CPP_DIR (llama.cpp's source) and LLAMA_LIB_DIR (its prebuilt libraries)"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

llama_peer_build() {
  local name="$1" f libs=()
  for f in "$LLAMA_LIB_DIR"/libllama*.so "$LLAMA_LIB_DIR"/libggml.*so "$LLAMA_LIB_DIR"/libggml-base.so; do
    [[ -e $f && $f != *common* ]] && libs+=("$f")
  done
  g++ -std=c++17 -O2 "$(dirname "${BASH_SOURCE[0]}")/$name.cc" -I"$LLAMA_CPP_DIR/include" -I"$LLAMA_CPP_DIR/ggml/include" \
    "${libs[@]}" -Wl,-rpath,"$LLAMA_LIB_DIR" -o "$tmp/$name" || { echo "FAIL: cannot build $name"; exit 1; }
}
