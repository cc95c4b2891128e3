#!/usr/bin/env bash
# ferry's byte-level BPE on a GGUF vocabulary gives the ids llama.cpp's tokenizer gives on the same
# file: the LlamaCppTokenizer tests of the tokenizer test binary ($1, o200k_tokenizer_test.cc), with
# the peer side, tests/moe/peers/llama_tokenize.cc, built against llama.cpp (skipped without:
# peers/llama_peer.sh).
set -u
# shellcheck source=peers/llama_peer.sh
source "$(dirname "$0")/peers/llama_peer.sh"
llama_peer_build llama_tokenize
FERRY_LLAMA_TOKENIZE="$tmp/llama_tokenize" "$1" --gtest_filter='LlamaCppTokenizer.*'
