#!/usr/bin/env bash
# GGUF files of llama.cpp's deepseek2 (DeepSeek-V2/V3, Kimi-K2) and glm4moe (GLM-4.5) architectures
# that lack a key the model needs, or carry a value ferry does not implement, or miss a tensor their
# keys call for: `ferry moe generate --model F.gguf` refuses each with one line naming the key or
# the tensor, exit code 2. The tiny files are written by make-tiny and edited by gguf_edit.py; the
# intact ones generate.
set -u
ferry="$1"
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$here/../cli_expect.sh"
edit=(/usr/bin/python3 "$here/gguf_edit.py")
cd "$tmp"
shape=(--gguf F32 --layers 3 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 8 --top-k 2 --intermediate 32
       --dense-layers 0)
# Groups (8 experts in 2), a shared expert, a dense first layer; DeepSeek with the q bottleneck.
"$ferry" moe make-tiny --out ds.gguf --family deepseek_v3 --q-lora-rank 32 "${shape[@]}" >/dev/null \
  || { echo "FAIL: make-tiny deepseek_v3"; exit 1; }
"$ferry" moe make-tiny --out glm.gguf --family glm4_moe "${shape[@]}" >/dev/null || { echo "FAIL: make-tiny glm4_moe"; exit 1; }
gen=(moe generate --prompt hi --tokens 2 --policy lru --device-mem 100%)
for f in ds glm; do
  "$ferry" "${gen[@]}" --model $f.gguf >/dev/null 2>"$f.err" && echo "ok: intact $f.gguf generates" \
    || { echo "FAIL: intact $f.gguf:"; cat "$f.err"; failures=$((failures + 1)); }
done

# refused FILE HOW ARGS... "<substring of the error>": FILE edited by gguf_edit.py HOW ARGS, then run.
n=0
refused() {
  local src="$1" how="$2" want="${*: -1}"
  n=$((n + 1))
  "${edit[@]}" "$how" "$src" "e$n.gguf" "${@:3:$#-3}" || { echo "FAIL: gguf_edit $how ${*:3:$#-3}"; failures=$((failures + 1)); return; }
  expect_cli_error "$want" "$ferry" "${gen[@]}" --model "e$n.gguf"
}

# deepseek2: each required key,
for key in attention.kv_lora_rank expert_count expert_shared_count expert_feed_forward_length; do
  refused ds.gguf drop-key "deepseek2.$key" "key 'deepseek2.$key' is missing"
done
for key in attention.key_length_mla attention.value_length_mla rope.dimension_count expert_group_used_count; do
  refused ds.gguf drop-key "deepseek2.$key" "key 'deepseek2.$key' = (absent) is not implemented"
done
refused ds.gguf drop-key deepseek2.expert_group_count "given without expert_group_count"
# values ferry does not implement or that contradict the file,
refused ds.gguf set-int deepseek2.expert_gating_func 3 "key 'deepseek2.expert_gating_func' = 3 is not implemented"
refused ds.gguf set-str deepseek2.rope.scaling.type linear "key 'deepseek2.rope.scaling.type' = \"linear\""
refused ds.gguf set-str deepseek2.rope.scaling.type yarn "yarn without rope.scaling.yarn_log_multiplier"
refused ds.gguf set-int deepseek2.leading_dense_block_count 3 "key 'deepseek2.leading_dense_block_count' = 3"
refused ds.gguf set-int deepseek2.attention.key_length 99 "key 'deepseek2.attention.key_length' = 99"
refused ds.gguf set-int deepseek2.attention.value_length_mla 0 "key 'deepseek2.attention.value_length_mla' = 0"
refused ds.gguf set-int deepseek2.rope.dimension_count 16 "key 'deepseek2.rope.dimension_count' = 16"
refused ds.gguf set-int deepseek2.vocab_size 100 "key 'deepseek2.vocab_size' = 100"
refused ds.gguf set-int deepseek2.expert_weights_norm 1 "key 'deepseek2.expert_weights_norm' = 1"
refused ds.gguf set-int deepseek2.attention.sliding_window 4 "key 'deepseek2.attention.sliding_window' = 4"
# and tensors the keys call for: the q bottleneck's, the latent's, the router bias of grouped routing.
refused ds.gguf set-int deepseek2.attention.q_lora_rank 16 "blk.0.attn_q_a.weight"
refused ds.gguf set-int deepseek2.attention.q_lora_rank 0 "blk.0.attn_q.weight"
refused ds.gguf rename-tensor blk.1.attn_q_a.weight blk.1.attn_q_x.weight "blk.1.attn_q_a.weight"
refused ds.gguf rename-tensor blk.2.attn_kv_a_mqa.weight blk.2.attn_kv_x.weight "blk.2.attn_kv_a_mqa.weight"
refused ds.gguf rename-tensor blk.1.exp_probs_b.bias blk.1.exp_probs_x.bias "key 'deepseek2.expert_group_count' = 2"

# glm4moe: each required key,
for key in expert_count expert_shared_count expert_feed_forward_length; do
  refused glm.gguf drop-key "glm4moe.$key" "key 'glm4moe.$key' is missing"
done
for key in rope.dimension_count expert_group_used_count; do
  refused glm.gguf drop-key "glm4moe.$key" "key 'glm4moe.$key' = (absent) is not implemented"
done
# values ferry does not implement,
refused glm.gguf set-int glm4moe.rope.dimension_count 7 "key 'glm4moe.rope.dimension_count' = 7"
refused glm.gguf set-int glm4moe.rope.dimension_count 32 "key 'glm4moe.rope.dimension_count' = 32"
refused glm.gguf set-int glm4moe.expert_gating_func 1 "key 'glm4moe.expert_gating_func' = 1"
refused glm.gguf set-int glm4moe.leading_dense_block_count 3 "key 'glm4moe.leading_dense_block_count' = 3"
refused glm.gguf set-int glm4moe.nextn_predict_layers 3 "key 'glm4moe.nextn_predict_layers' = 3"
refused glm.gguf set-str glm4moe.rope.scaling.type yarn "key 'glm4moe.rope.scaling.type' = \"yarn\""
# and tensors: a layer's q bias (the file's first layer has them), its post-attention norm.
refused glm.gguf rename-tensor blk.2.attn_q.bias blk.2.attn_q_x.bias "blk.2.attn_q.bias"
refused glm.gguf rename-tensor blk.1.post_attention_norm.weight blk.1.post_norm_x.weight "blk.1.post_attention_norm.weight"
exit $failures
