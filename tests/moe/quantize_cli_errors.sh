#!/usr/bin/env bash
# Bad input to `ferry moe quantize` gives exactly one clear line on stderr and exit code 2; a good
# run writes the GGUF file and prints what it wrote.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../cli_expect.sh"
shape=(--layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 4)
small=("${shape[@]}" --intermediate 64)
"$ferry" moe make-tiny --out "$tmp/m" "${small[@]}" >/dev/null || { echo "FAIL: make-tiny"; exit 1; }
"$ferry" moe make-tiny --out "$tmp/m48" "${shape[@]}" --intermediate 48 >/dev/null || { echo "FAIL: make-tiny 48"; exit 1; }
"$ferry" moe make-tiny --out "$tmp/q2" --family qwen2_moe --shared-expert 32 "${small[@]}" >/dev/null \
  || { echo "FAIL: make-tiny qwen2_moe"; exit 1; }
# DeepSeek-V3 and GLM-4.5 checkpoints whose expert groups come from their config class's defaults
# (n_group, topk_group absent): the converter writes only the keys config.json has, so the file
# would route without groups, or hold a group count without the used count llama.cpp asserts.
"$ferry" moe make-tiny --out "$tmp/ds" --family deepseek_v3 --layers 2 --hidden 64 --heads 4 --head-dim 16 --experts 16 \
  --intermediate 64 >/dev/null \
  || { echo "FAIL: make-tiny deepseek_v3"; exit 1; }
"$ferry" moe make-tiny --out "$tmp/glm" --family glm4_moe "${small[@]}" >/dev/null || { echo "FAIL: make-tiny glm4_moe"; exit 1; }
drop_config_key() { /usr/bin/python3 -c 'import json, sys
c = json.load(open(sys.argv[1])); del c[sys.argv[2]]; json.dump(c, open(sys.argv[1], "w"))' "$1/config.json" "$2"; }
drop_config_key "$tmp/ds" n_group     # DeepseekV3Config's 8 groups (of 2)
drop_config_key "$tmp/glm" topk_group  # make-tiny's 2 groups, Glm4MoeConfig's 1 group used
expect_error() { expect_cli_error "$1" "$ferry" moe quantize "${@:2}"; }  # "<substring>" args...
expect_error "config n_group: absent, so 8 groups" --model "$tmp/ds" --out "$tmp/x.gguf"
expect_error "config topk_group: absent, so 2 groups" --model "$tmp/glm" --out "$tmp/x.gguf"
expect_error "'$tmp/none' is not a directory" --model "$tmp/none" --out "$tmp/x.gguf"
expect_error "--type 'Q5_K_M': expected one of F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q4_K_M, Q6_K" \
  --model "$tmp/m" --out "$tmp/x.gguf" --type Q5_K_M
expect_error "cannot create '$tmp/no/x.gguf.part'" --model "$tmp/m" --out "$tmp/no/x.gguf"
expect_error "llama.cpp's qwen2moe needs a gated shared expert" --model "$tmp/q2" --out "$tmp/x.gguf"
expect_error "has rows of 48 weights, not whole Q4_0 blocks of 32" --model "$tmp/m48" --out "$tmp/x.gguf" --type Q4_0
expect_error "--out is required" --model "$tmp/m"
expect_error "--threads -1" --model "$tmp/m" --out "$tmp/x.gguf" --threads -1
[ -e "$tmp/x.gguf" ] && { echo "FAIL: a refused run left $tmp/x.gguf"; failures=$((failures + 1)); }
# A good run: the file and one summary line naming it.
if "$ferry" moe quantize --model "$tmp/m" --out "$tmp/m.gguf" --type Q8_0 >"$tmp/out.txt" 2>"$tmp/err.txt"; then
  grep -q "^wrote $tmp/m.gguf: GGUF llama, Q8_0, 23 tensors: " "$tmp/out.txt" && [ -s "$tmp/m.gguf" ] \
    && ! [ -e "$tmp/m.gguf.part" ] || { echo "FAIL: good run output:"; cat "$tmp/out.txt"; failures=$((failures + 1)); }
else
  echo "FAIL: good run:"; cat "$tmp/err.txt"; failures=$((failures + 1))
fi
exit $failures
