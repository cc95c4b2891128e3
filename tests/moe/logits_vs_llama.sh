#!/usr/bin/env bash
# ferry on a GGUF file computes what llama.cpp computes on the same file: teacher-forced logits of
# one sequence (one prefill batch, KV cache in f32 on both sides), on files `ferry moe quantize`
# writes from make-tiny models of each family (below). Needs llama.cpp: LLAMA_CPP_DIR (its source, for the
# headers) and LLAMA_LIB_DIR (its prebuilt libraries: peers/llama_peer.sh); skipped (exit 77) without.
#
# Bounds, relative to the largest |logit|: F32 — both engines sum the same float32 products in
# different orders (≤ 256 terms per dot: n·2⁻²⁴ ≈ 1.5e-5 each, through 4 layers of attention,
# norms and a top-2 softmax), 1e-3 and the same argmax everywhere; quantized — both quantize each
# activation row per block with the same rule (ggml's quantize_row_q8_0 / q8_K) before integer
# dot products, so they differ where float-order differences move an activation across a
# rounding boundary (one step, d/2 of the block): 3e-2 at a position; or where such a difference
# swaps two near-equal experts in a top-2 (8 routing decisions per position here), which changes
# that position's logits wholesale: seen at 3 of 24 positions of the Q4_K_M file (while ferry held
# its Q5_K attn_output in float32; since it computes on the Q5_K blocks, 24 of 24 agree), whose random
# 4-bit weights move the logits by 45 % from F32. So the bound must hold, with the same argmax,
# at ≥ 80 % of the positions; a wrong layout, permutation or scale fails it everywhere. And over
# all positions, ferry's mean |diff| from llama.cpp on a quantized file is at most 1.5x llama.cpp's
# own mean |diff| between that file and the F32 one.
set -u
ferry="$1"
# shellcheck source=peers/llama_peer.sh
source "$(dirname "$0")/peers/llama_peer.sh"
llama_peer_build llama_logits
tokens=(72 101 108 108 111 44 32 119 111 114 108 100 33 10 100 101 102 32 109 97 105 110 40 41)
echo "[[$(IFS=,; echo "${tokens[*]}")]]" >"$tmp/tokens.json"
shape=(--layers 4 --hidden 256 --heads 4 --kv-heads 2 --experts 8 --intermediate 256)  # --head-dim 64 unless given
# Mixtral in every format (MXFP4_MOE: experts in MXFP4, the rest Q8_0; DeepSeek-V3's MLA attn_k_b and
# attn_v_b, 3-D, too); GLM-4.5 (sigmoid routing with a selection bias in two groups, a shared
# expert, a leading dense layer, q/k/v biases, half-rotary heads) and DeepSeek-V3 (the same routing,
# multi-head latent attention with the queries' bottleneck, and without it as V2-Lite) in F32 and
# Q8_0; DeepSeek-V3 with YaRN (its frequencies and its softmax scale) in F32; and with V3's
# proportions (q/k heads wider than the values, a third of each rotary, 4 groups of which 2 are used,
# top-3) in F32 and Q8_0; gpt-oss (attention sinks, a window of 8 positions in every other layer —
# a third of the prompt —, q/k/v/o, router and expert biases, the clamped SwiGLU, YaRN) in F32, Q8_0 and
# MXFP4_MOE; and gpt-oss's MXFP4 checkpoint (make-tiny --mxfp4-experts: the same weights, its experts
# quantized to MXFP4 and packed as the released checkpoints) written as llama.cpp's converter writes it
# (--type F32: the experts' blocks as they are, the rest F32), judged by the quantized rule against
# the float model's F32 logits.
# name:family:types:make-tiny flags[:the entry whose F32 logits judge every type by the quantized rule]
models=("mixtral:mixtral:F32 Q8_0 Q4_0 Q4_K_M MXFP4_MOE:" "glm4_moe:glm4_moe:F32 Q8_0:--shared-expert 256 --dense-layers 0"
        "deepseek_v3:deepseek_v3:F32 Q8_0 MXFP4_MOE:--dense-layers 0 --q-lora-rank 128"
        "deepseek_v2_lite:deepseek_v3:F32 Q8_0:--dense-layers 0 --q-lora-rank 0"
        "deepseek_v3_yarn:deepseek_v3:F32:--dense-layers 0 --q-lora-rank 128"
        "deepseek_v3_shape:deepseek_v3:F32 Q8_0:--dense-layers 0 --q-lora-rank 96 --head-dim 96 --rope-dim 32 --v-head-dim 64 --expert-groups 4 --groups-used 2 --top-k 3"
        "gpt_oss:gpt_oss:F32 Q8_0 MXFP4_MOE:--sliding-window 8"
        "gpt_oss_mxfp4:gpt_oss:F32:--sliding-window 8 --mxfp4-experts:gpt_oss")
failures=0
for entry in "${models[@]}"; do
  IFS=: read -r name family types extra float <<<"$entry"
  rule=quantized
  [ -n "$float" ] || { float=$name; rule=by-type; }
  [[ $extra == *--head-dim* ]] || extra+=" --head-dim 64"
  # shellcheck disable=SC2086  # $extra holds flags
  "$ferry" moe make-tiny --out "$tmp/$name" --family "$family" "${shape[@]}" $extra >/dev/null \
    || { echo "FAIL: make-tiny $name"; failures=$((failures + 1)); continue; }
  if [[ $name == *_yarn ]]; then  # DeepSeek-V3's YaRN, its context stretched 4x from 32 positions
    /usr/bin/python3 - "$tmp/$name/config.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["rope_scaling"] = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "beta_fast": 32,
                     "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}
json.dump(j, open(sys.argv[1], "w"))
PY
  fi
  for t in $types; do
    "$ferry" moe quantize --model "$tmp/$name" --out "$tmp/$name-$t.gguf" --type $t >/dev/null || { echo "FAIL: quantize $name $t"; failures=$((failures + 1)); continue; }
    "$ferry" moe logits --model "$tmp/$name-$t.gguf" --tokens "$tmp/tokens.json" --prompt ${#tokens[@]} --out "$tmp/$name-$t.npy" \
      >/dev/null 2>"$tmp/err" || { echo "FAIL: ferry logits $name $t: $(cat "$tmp/err")"; failures=$((failures + 1)); continue; }
    "$tmp/llama_logits" "$LLAMA_LIB_DIR" "$tmp/$name-$t.gguf" "$tmp/$name-$t.f32" "${tokens[@]}" >"$tmp/log" 2>&1 \
      || { echo "FAIL: llama.cpp $name $t:"; tail -3 "$tmp/log"; failures=$((failures + 1)); continue; }
    /usr/bin/python3 - "$tmp/$name-$t.npy" "$tmp/$name-$t.f32" "$name $t" "$tmp/$float-F32.f32" "$rule" <<'PY' || failures=$((failures + 1))
import os, sys
import numpy as np
ferry = np.load(sys.argv[1])[0]
llama = np.fromfile(sys.argv[2], dtype=np.float32).reshape(ferry.shape)
t = sys.argv[3]
f32 = t.endswith("F32") and sys.argv[5] == "by-type"  # else a file with quantized experts
rel = np.abs(ferry - llama).max(-1) / np.abs(llama).max()  # per position
bound, share = (1e-3, 1.0) if f32 else (3e-2, 0.8)
within = (rel <= bound) & (ferry.argmax(-1) == llama.argmax(-1))
ok = within.mean() >= share
print("%s: %s |ferry - llama.cpp| / max |logit| within %.0e with the same argmax at %d of %d positions "
      "(need %.0f %%; median %.1e, max %.1e)" % ("ok" if ok else "FAIL", t, bound, within.sum(), len(rel),
                                                 100 * share, np.median(rel), rel.max()))
# And in F32 every logit within 2e-2 of llama.cpp's (issue 52's bound, absolute).
absmax = np.abs(ferry - llama).max()
print("%s: %s max |ferry - llama.cpp| %.1e" % ("ok" if absmax <= 2e-2 or not f32 else "FAIL", t, absmax))
ok = ok and (absmax <= 2e-2 or not f32)
# A quantized file: ferry's mean deviation from llama.cpp on it within 1.5x llama.cpp's own deviation
# from its F32 logits (the quantization's error, which both engines carry; their difference is
# rounding on top of it).
if not f32 and os.path.exists(sys.argv[4]):
    own = np.abs(llama - np.fromfile(sys.argv[4], dtype=np.float32).reshape(ferry.shape)).mean()
    dev = np.abs(ferry - llama).mean()
    q_ok = dev <= 1.5 * own
    print("%s: %s mean |ferry - llama.cpp| %.2e, llama.cpp's own mean |%s - float F32| %.2e (need <= 1.5x: %.2fx)"
          % ("ok" if q_ok else "FAIL", t, dev, t, own, dev / own))
    ok = ok and q_ok
sys.exit(0 if ok else 1)
PY
  done
done
exit $failures
