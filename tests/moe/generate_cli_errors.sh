#!/usr/bin/env bash
# Bad input to `ferry moe`, `ferry moe generate` and `make-tiny`: one line naming the flag, exit code 2.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../cli_expect.sh"
gen() { expect_cli_error "$1" "$ferry" moe generate --model "$tmp/none" "${@:2}"; }

expect_cli_error "ferry moe needs a command; commands: make-tiny | pretrain | generate" "$ferry" moe
expect_cli_error "unknown command 'moe foo'; commands: make-tiny" "$ferry" moe foo
gen "--threads" --threads 0
gen "--threads" --threads -3
gen "--threads" --threads 100000
gen "--temperature" --temperature nan
gen "--temperature" --temperature -1
gen "--temperature" --temperature inf
gen "--top-k" --top-k -1
gen "$tmp/none" --threads 1
# A shape no machine of this kind holds is refused before any allocation (it was std::bad_alloc).
expect_cli_error "make-tiny: this shape has" "$ferry" moe make-tiny --hidden 1000000000 --out "$tmp/huge"
[ -e "$tmp/huge" ] && { echo "FAIL: make-tiny wrote a refused model"; failures=$((failures + 1)); }
# Families and their parts.
expect_cli_error "--family 'llama' is not one of mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek" \
  "$ferry" moe make-tiny --family llama --out "$tmp/f1"
expect_cli_error "--dense-layers needs --family qwen2_moe, qwen3_moe, deepseek, glm4_moe or deepseek_v3" \
  "$ferry" moe make-tiny --family mixtral --dense-layers 1 --out "$tmp/f2"
expect_cli_error "--shared-expert needs --family qwen2_moe, deepseek, glm4_moe or deepseek_v3" \
  "$ferry" moe make-tiny --family olmoe --shared-expert 16 --out "$tmp/f3"
expect_cli_error "--rope-dim needs --family glm4_moe or deepseek_v3 (mixtral has no partial rotary heads)" \
  "$ferry" moe make-tiny --family mixtral --rope-dim 16 --out "$tmp/f6"
expect_cli_error "--rope-dim 7: expected an even number of dims below --head-dim" \
  "$ferry" moe make-tiny --family glm4_moe --rope-dim 7 --out "$tmp/f7"
expect_cli_error "n_group (3) must divide the routed experts (8)" \
  "$ferry" moe make-tiny --family deepseek_v3 --expert-groups 3 --out "$tmp/f8"
expect_cli_error "--expert-groups and --groups-used need --family glm4_moe or deepseek_v3" \
  "$ferry" moe make-tiny --family qwen3_moe --groups-used 2 --out "$tmp/f9"
expect_cli_error "every layer is dense" "$ferry" moe make-tiny --family qwen3_moe --layers 2 --dense-layers 0,1 \
  --out "$tmp/f4"
expect_cli_error "cannot be written as first_k_dense_replace" \
  "$ferry" moe make-tiny --family deepseek --layers 4 --dense-layers 2 --out "$tmp/f5"
[ "$failures" -eq 0 ] && echo "all bad inputs rejected cleanly" && exit 0
exit 1
