#!/usr/bin/env bash
# ferry's byte-level BPE on a GGUF vocabulary gives the ids llama.cpp's tokenizer gives on the same
# file: the LlamaCppTokenizer tests of the tokenizer test binary ($1, o200k_tokenizer_test.cc), with
# the peer side, tests/moe/peers/llama_tokenize.cc, built here against llama.cpp: LLAMA_CPP_DIR (its
# source, for the headers) and LLAMA_LIB_DIR (its prebuilt libraries); skipped (exit 77) without.
set -u
tests="$1"
if [ -z "${LLAMA_CPP_DIR:-}" ] || [ ! -f "${LLAMA_CPP_DIR}/include/llama.h" ] || [ -z "${LLAMA_LIB_DIR:-}" ] ||
   ! compgen -G "${LLAMA_LIB_DIR}/libllama*.so" >/dev/null; then
  echo "skipped: set LLAMA_CPP_DIR (llama.cpp's source) and LLAMA_LIB_DIR (its prebuilt libraries)"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
libs=$(ls "$LLAMA_LIB_DIR"/libllama*.so "$LLAMA_LIB_DIR"/libggml.*so "$LLAMA_LIB_DIR"/libggml-base.so 2>/dev/null | grep -v common)
# shellcheck disable=SC2086  # $libs holds paths
g++ -std=c++17 -O1 "$(dirname "$0")/peers/llama_tokenize.cc" -I"$LLAMA_CPP_DIR/include" -I"$LLAMA_CPP_DIR/ggml/include" \
  $libs -Wl,-rpath,"$LLAMA_LIB_DIR" -o "$tmp/llama_tokenize" || { echo "FAIL: cannot build llama_tokenize"; exit 1; }
FERRY_LLAMA_TOKENIZE="$tmp/llama_tokenize" "$tests" --gtest_filter='LlamaCppTokenizer.*'
