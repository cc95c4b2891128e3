#!/usr/bin/env bash
# Bad input to the `ferry` command: each case one error line naming what was wrong, exit code 2
# (never a crash, a hang, garbage output or exit 0/1/132).
#   - an expert block whose f16 scale is NaN or -Inf (or whose MXFP4 exponent is 255), under every
#     link (file: O_DIRECT reads checked where the bytes land; none: the host pool) and in logits;
#   - --out naming an input file (through ./, a symlink, a hard link), before anything is written;
#   - special files (FIFO, /dev/zero, a directory) where a model, config or corpus is expected;
#   - invalid UTF-8 in a vocabulary (GGUF tokens, tokenizer.json), a GGUF without
#     <arch>.expert_count, out-of-range BOS/EOS ids, a 1 MiB tensor name;
#   - advise --validate on a folder without runs; ferry run with a missing program;
#   - GGUF files of llama.cpp's deepseek2 (DeepSeek-V2/V3, Kimi-K2), glm4moe (GLM-4.5) and gpt-oss
#     architectures that lack a key the model needs, carry a value ferry does not implement, or miss
#     a tensor their keys call for: the key or the tensor (tiny files of make-tiny, edited).
# bad_input_cli.sh FERRY PART: PART is finite, out, special, vocab, misc or families (one CTest entry each).
set -u
ferry="$1"
part="$2"
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$here/../cli_expect.sh"
edit=(/usr/bin/python3 "$here/gguf_edit.py")
cd "$tmp"
shape=(--layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 4 --intermediate 64)
"$ferry" moe make-tiny --out m "${shape[@]}" >/dev/null || { echo "FAIL: make-tiny"; exit 1; }
"$ferry" moe quantize --model m --out q8.gguf --type Q8_0 --pure >/dev/null || { echo "FAIL: quantize"; exit 1; }
gen=(moe generate --prompt hi --tokens 4 --policy lru --device-mem 100%)

if [ "$part" == finite ]; then
# 1. Non-finite expert scales. Block 130 of blk.1.ffn_up_exps is expert 1's block 2 (64 rows of
# two Q8_0 blocks per expert); the first expert of layer 1 the file link reads is not at open.
for value in 7E00 FC00; do
  cp q8.gguf bad.gguf
  "${edit[@]}" scale bad.gguf blk.1.ffn_up_exps.weight 130 "$value"
  want="tensor 'blk.1.ffn_up_exps.weight' (layer 1, expert 1) in 'bad.gguf' holds a non-finite Q8_0 scale"
  expect_cli_error "$want" "$ferry" "${gen[@]}" --model bad.gguf --link file
  expect_cli_error "$want" "$ferry" "${gen[@]}" --model bad.gguf --link none
done
echo '[[1, 2, 3, 4]]' >tokens.json
expect_cli_error "holds a non-finite Q8_0 scale" "$ferry" moe logits --model bad.gguf --tokens tokens.json --out l.npy
[ ! -e l.npy ] && echo "ok: no logits written" || { echo "FAIL: logits written"; failures=$((failures + 1)); }
# MXFP4's E8M0 exponent 255 (NaN in the OCP MX spec; llama.cpp refuses it too), by the same rule.
"$ferry" moe quantize --model m --out mx.gguf --type MXFP4 >/dev/null || { echo "FAIL: quantize MXFP4"; exit 1; }
cp mx.gguf bad.gguf
"${edit[@]}" scale bad.gguf blk.1.ffn_up_exps.weight 130 FF
want="tensor 'blk.1.ffn_up_exps.weight' (layer 1, expert 1) in 'bad.gguf' holds a non-finite MXFP4 scale (E8M0 exponent 255: NaN) in block 2"
expect_cli_error "$want" "$ferry" "${gen[@]}" --model bad.gguf --link file
expect_cli_error "$want" "$ferry" "${gen[@]}" --model bad.gguf --link none
"$ferry" "${gen[@]}" --model mx.gguf --link file >/dev/null 2>&1 && echo "ok: intact MXFP4 file generates" \
  || { echo "FAIL: intact mx.gguf"; failures=$((failures + 1)); }
# A dense tensor's scale: refused at load by the same rule (no link involved).
cp q8.gguf bad.gguf
"${edit[@]}" scale bad.gguf blk.0.attn_q.weight 3 7C00
expect_cli_error "tensor 'model.layers.0.self_attn.q_proj.weight' in 'bad.gguf'" "$ferry" "${gen[@]}" --model bad.gguf
expect_cli_error "holds a non-finite Q8_0 scale" "$ferry" "${gen[@]}" --model bad.gguf
# The intact file still generates through the file link.
"$ferry" "${gen[@]}" --model q8.gguf --link file >/dev/null 2>&1 && echo "ok: intact file generates" \
  || { echo "FAIL: intact q8.gguf"; failures=$((failures + 1)); }

fi

if [ "$part" == out ]; then
echo '[[1, 2, 3, 4]]' >tokens.json
# 2. --out naming an input: refused before anything is written, whatever the spelling.
cp -r m m2
sums=$(md5sum m2/* q8.gguf)
ln -s m2/config.json sym.json
ln m2/config.json hard.json
for out in m2/model.safetensors m2/config.json ./m2/../m2/config.json sym.json hard.json; do
  expect_cli_error "is the input file" "$ferry" moe quantize --model m2 --out "$out" --type Q8_0
done
expect_cli_error "--out 'q8.gguf' is the input file 'q8.gguf' (--model)" "$ferry" moe quantize --model q8.gguf --out q8.gguf
expect_cli_error "is the input file" "$ferry" moe logits --model m2 --tokens tokens.json --out m2/config.json
expect_cli_error "is the input file" "$ferry" moe logits --model q8.gguf --tokens tokens.json --out tokens.json
[ "$(md5sum m2/* q8.gguf)" == "$sums" ] && echo "ok: inputs unchanged" || { echo "FAIL: an input changed"; failures=$((failures + 1)); }

fi

if [ "$part" == special ]; then
# 3. Special files: what they are, and no hang on a FIFO (timeout 124 would fail the check).
mkfifo fifo
expect_cli_error "model 'fifo' is a FIFO" timeout 10 "$ferry" "${gen[@]}" --model fifo
expect_cli_error "model '/dev/zero' is a character device" timeout 10 "$ferry" "${gen[@]}" --model /dev/zero
mkdir m3 && cp m/* m3/ && rm m3/config.json && mkfifo m3/config.json
expect_cli_error "model config 'm3/config.json' is not a regular file (a FIFO)" timeout 10 "$ferry" "${gen[@]}" --model m3
rm m3/config.json && mkdir m3/config.json
expect_cli_error "is not a regular file (a directory)" "$ferry" "${gen[@]}" --model m3
cp m/config.json m3/ 2>/dev/null; rm -rf m3/config.json; cp m/config.json m3/; rm m3/model.safetensors; mkfifo m3/model.safetensors
expect_cli_error "'m3/model.safetensors' is not a regular file (a FIFO)" timeout 10 "$ferry" "${gen[@]}" --model m3
expect_cli_error "corpus '/dev/zero' is not a regular file (a character device)" \
  timeout 10 "$ferry" moe trace --model m --corpus /dev/zero --out t.jsonl

fi

if [ "$part" == vocab ]; then
# Invalid UTF-8 in a vocabulary: the GGUF key and token index; tokenizer.json's token.
"${edit[@]}" set-string q8.gguf utf.gguf tokenizer.ggml.tokens 65 c328
expect_cli_error "tokenizer.ggml.tokens[65] '\\xC3(' is not valid UTF-8" "$ferry" "${gen[@]}" --model utf.gguf
cp -r m m4
grep -v ferry_tokenizer m/config.json >m4/config.json  # tokenizer.json, not the byte tokenizer
printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b\xc3(": 1}, "merges": []}}' >m4/tokenizer.json
expect_cli_error "model.vocab token 1 'b\\xC3(' (tokens must be UTF-8 text)" "$ferry" "${gen[@]}" --model m4

# A GGUF without <arch>.expert_count: the GGUF key.
"${edit[@]}" drop-key q8.gguf noexp.gguf llama.expert_count
expect_cli_error "key 'llama.expert_count' is missing" "$ferry" "${gen[@]}" --model noexp.gguf

# BOS/EOS ids past a byte-level vocabulary (256 tokens).
"${edit[@]}" set-int q8.gguf eos.gguf tokenizer.ggml.eos_token_id 256
expect_cli_error "tokenizer.ggml.eos_token_id 256 is outside the vocabulary of 256 tokens" "$ferry" "${gen[@]}" --model eos.gguf
"${edit[@]}" set-int q8.gguf bos.gguf tokenizer.ggml.bos_token_id 4096
expect_cli_error "tokenizer.ggml.bos_token_id 4096 is outside the vocabulary of 256 tokens" "$ferry" "${gen[@]}" --model bos.gguf

fi

if [ "$part" == misc ]; then
# A 1 MiB tensor name (safetensors header) echoed: one bounded line.
cp -r m m5
/usr/bin/python3 - m5/model.safetensors <<'PY'
import json, struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
name = "x" * (1 << 20) + "\n"
header[name] = {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}
text = json.dumps(header).encode()
open(path, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
err=$("$ferry" "${gen[@]}" --model m5 2>&1 >/dev/null); rc=$?
if [ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ "${#err}" -lt 2000 ] && [[ "$err" == *"(1048577 bytes)"* ]]; then
  echo "ok: 1 MiB tensor name -> ${#err} characters"
else
  echo "FAIL: 1 MiB tensor name -> rc=$rc, ${#err} characters: ${err:0:300}"; failures=$((failures + 1))
fi

# advise --validate on a folder without runs; ferry run with a missing or non-executable program.
mkdir empty_runs
expect_cli_error "no runs found in 'empty_runs'" "$ferry" advise --validate empty_runs
expect_cli_error "program 'no-such-program-ferry' was not found in PATH" "$ferry" run --np 1 -- no-such-program-ferry
expect_cli_error "program './missing.py' does not exist" "$ferry" run --np 1 -- ./missing.py
touch plain.py
expect_cli_error "program './plain.py' is not executable" "$ferry" run --np 1 -- ./plain.py
expect_cli_error "program 'm/' is not a regular file (a directory)" "$ferry" run --np 1 -- m/
fi

if [ "$part" == families ]; then
fshape=(--gguf F32 --layers 3 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 8 --top-k 2 --intermediate 32
       --dense-layers 0)
# Groups (8 experts in 2), a shared expert, a dense first layer; DeepSeek with the q bottleneck.
"$ferry" moe make-tiny --out ds.gguf --family deepseek_v3 --q-lora-rank 32 "${fshape[@]}" >/dev/null \
  || { echo "FAIL: make-tiny deepseek_v3"; exit 1; }
"$ferry" moe make-tiny --out glm.gguf --family glm4_moe "${fshape[@]}" >/dev/null || { echo "FAIL: make-tiny glm4_moe"; exit 1; }
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

# gpt-oss: sinks, a window in every other layer, biases on q/k/v/o, the router and the experts.
"$ferry" moe make-tiny --out oss.gguf --family gpt_oss --gguf F32 --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
  --head-dim 16 --experts 4 --top-k 2 --intermediate 32 --sliding-window 3 >/dev/null || { echo "FAIL: make-tiny gpt_oss"; exit 1; }
"$ferry" "${gen[@]}" --model oss.gguf >/dev/null 2>oss.err && echo "ok: intact oss.gguf generates" \
  || { echo "FAIL: intact oss.gguf:"; cat oss.err; failures=$((failures + 1)); }
for key in expert_count expert_feed_forward_length attention.sliding_window; do
  refused oss.gguf drop-key "gpt-oss.$key" "key 'gpt-oss.$key' is missing"
done
refused oss.gguf set-int gpt-oss.attention.sliding_window_pattern 0 "key 'gpt-oss.attention.sliding_window_pattern' = 0"
refused oss.gguf set-str gpt-oss.rope.scaling.type linear "key 'gpt-oss.rope.scaling.type' = \"linear\""
refused oss.gguf set-int gpt-oss.expert_gating_func 2 "key 'gpt-oss.expert_gating_func' = 2"
refused oss.gguf rename-tensor blk.1.attn_sinks.weight blk.1.attn_sinks_x.weight "blk.1.attn_sinks.weight"
refused oss.gguf rename-tensor blk.0.ffn_up_exps.bias blk.0.ffn_up_x.bias "blk.0.ffn_up_exps.bias"
refused oss.gguf rename-tensor blk.1.ffn_gate_inp.bias blk.1.ffn_gate_inp_x.bias "blk.1.ffn_gate_inp.bias"
fi
exit $failures
