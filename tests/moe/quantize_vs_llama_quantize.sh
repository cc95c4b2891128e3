#!/usr/bin/env bash
# `ferry moe quantize --type T` writes the same bytes as llama.cpp's llama-quantize run on ferry's
# F32 file, for each family and file type (the mix, the K-quants, MXFP4_MOE's experts in MXFP4, the
# fallbacks of rows that are not whole blocks, the key order). Needs a llama-quantize binary: LLAMA_QUANTIZE=path (and, for a
# build with dynamic backends, GGML_BACKEND_PATH=libggml-cpu-*.so); skipped (exit 77) without.
set -u
ferry="$1"
if [ -z "${LLAMA_QUANTIZE:-}" ] || [ ! -x "${LLAMA_QUANTIZE}" ]; then
  echo "skipped: set LLAMA_QUANTIZE to a llama-quantize binary"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
base=(--layers 4 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --experts 8)
make() { "$ferry" moe make-tiny --out "$tmp/$1" "${@:2}" >/dev/null || { echo "FAIL: make-tiny $1"; exit 1; }; }
make mixtral "${base[@]}" --intermediate 256
make mixtral128 --layers 4 --experts 8 --intermediate 256  # make-tiny's default width 128: Q5_1, Q5_0
make mixtral96 --layers 3 --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --experts 4 --intermediate 96  # rows of 96: Q5_0, Q8_0 fallbacks
make qwen3 --family qwen3_moe "${base[@]}" --intermediate 256
make olmoe --family olmoe --layers 4 --hidden 256 --heads 4 --kv-heads 4 --head-dim 64 --experts 8 --intermediate 96
make deepseek --family deepseek --layers 4 --hidden 256 --heads 4 --kv-heads 4 --head-dim 64 --experts 6 \
  --intermediate 96 --shared-expert 192 --dense-layers 0
make glm4 --family glm4_moe "${base[@]}" --intermediate 256 --shared-expert 256 --dense-layers 0
make deepseek_v3 --family deepseek_v3 "${base[@]}" --intermediate 256 --dense-layers 0 --q-lora-rank 128
# gpt-oss's MXFP4 checkpoint: its F32 file is the converter's (the experts' blocks as they are, the rest
# F32); from it llama-quantize keeps MXFP4_MOE's experts as they are and requantizes them to Q8_0
# (--allow-requantize), as ferry writes both from the checkpoint.
make gpt_oss_mxfp4 --family gpt_oss "${base[@]}" --intermediate 256 --mxfp4-experts
for m in mixtral mixtral128 mixtral96 qwen3 olmoe deepseek glm4 deepseek_v3 gpt_oss_mxfp4; do
  "$ferry" moe quantize --model "$tmp/$m" --out "$tmp/$m-F32.gguf" --type F32 >/dev/null || { echo "FAIL: $m F32"; failures=$((failures + 1)); continue; }
  types="F16 BF16 Q8_0 Q4_0 Q6_K Q4_K_M MXFP4_MOE" requantize=()
  [ "$m" != gpt_oss_mxfp4 ] || { types="MXFP4_MOE Q8_0"; requantize=(--allow-requantize); }
  for t in $types; do
    "$ferry" moe quantize --model "$tmp/$m" --out "$tmp/$m-$t.gguf" --type $t >/dev/null 2>"$tmp/err" \
      || { echo "FAIL: ferry $m $t: $(cat "$tmp/err")"; failures=$((failures + 1)); continue; }
    "$LLAMA_QUANTIZE" "${requantize[@]}" "$tmp/$m-F32.gguf" "$tmp/$m-$t-llama.gguf" $t 1 >"$tmp/log" 2>&1 \
      || { echo "FAIL: llama-quantize $m $t:"; tail -3 "$tmp/log"; failures=$((failures + 1)); continue; }
    if cmp -s "$tmp/$m-$t.gguf" "$tmp/$m-$t-llama.gguf"; then
      echo "ok: $m $t identical"
    else
      echo "FAIL: $m $t: $(cmp "$tmp/$m-$t.gguf" "$tmp/$m-$t-llama.gguf" | head -1)"; failures=$((failures + 1))
    fi
  done
done
exit $failures
