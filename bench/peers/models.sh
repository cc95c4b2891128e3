# shellcheck shell=bash
# The models the peer benchmarks run both engines on, sourced by bench/peers/run.sh and
# bench/moe_serve_peer/run.sh: `ferry moe make-tiny` (random weights, ferry's byte vocabulary) in
# $PEERS/models/SHAPE, then `ferry moe quantize` to $PEERS/models/SHAPE/FORMAT.gguf.
# Shapes: a = the Mixtral-architecture model of 4 layers, hidden 2048, 8 experts of width 5632,
# top-2, 16 heads, 4 KV heads (1.15 B parameters); b = wider experts: 2 layers, hidden 4096,
# 4 experts of Mixtral-8x7B's width 14336, top-2, 32 heads, 8 KV heads (1.5 B parameters);
# dsv3 = one MoE layer of DeepSeek-V3 with its real dimensions (DSV3_FLAGS: hidden 7168, 256 routed
# experts of width 2048, top-8 in 4 of 8 groups, a shared expert, MLA with 128 heads, q_lora 1536,
# kv_lora 512, vocabulary 129280; 8.1 GiB in Q4_K_M), written directly as GGUF (`make-tiny --gguf`:
# its F32 checkpoint would be 48 GB); qwen3 = two layers of Qwen3-30B-A3B (hidden 2048, 128 experts
# of width 768, top-8, 32 heads, 4 KV heads, vocabulary 151936); gptoss = two layers of gpt-oss-20b
# (a sliding-window layer of 128 and a full one; hidden 2880, 32 experts of width 2880, top-4, 64
# heads of 64, 8 KV heads, vocabulary 201088; its format is MXFP4_MOE); mix-H-I = a Mixtral-architecture
# model of 2 layers, hidden H, 8 experts of width I, top-2, H/128 heads of 128, a quarter of them KV
# heads; sweep = the nine mix shapes of hidden 1024, 2048, 4096 x width 1024, 4096, 14336 (the
# kernels' shape sweep: nobody tuned for them). Every shape but a and b is written directly as GGUF.
DSV3_FLAGS="--family deepseek_v3 --experts 256 --top-k 8 --expert-groups 8 --groups-used 4 --hidden 7168
  --intermediate 2048 --shared-expert 2048 --dense-intermediate 18432 --heads 128 --kv-heads 128 --head-dim 192
  --rope-dim 64 --v-head-dim 128 --kv-lora-rank 512 --q-lora-rank 1536 --vocab 129280 --max-pos 8192"
shape_flags() {
  case "$1" in
    a) echo "--layers 4 --experts 8 --top-k 2 --hidden 2048 --intermediate 5632 --heads 16 --kv-heads 4 --head-dim 128" ;;
    b) echo "--layers 2 --experts 4 --top-k 2 --hidden 4096 --intermediate 14336 --heads 32 --kv-heads 8 --head-dim 128" ;;
    dsv3) echo "$DSV3_FLAGS --layers 1" ;;
    qwen3) echo "--family qwen3_moe --layers 2 --experts 128 --top-k 8 --hidden 2048 --intermediate 768 --heads 32
      --kv-heads 4 --head-dim 128 --vocab 151936" ;;
    gptoss) echo "--family gpt_oss --layers 2 --experts 32 --top-k 4 --hidden 2880 --intermediate 2880 --heads 64
      --kv-heads 8 --head-dim 64 --sliding-window 128 --vocab 201088" ;;
    mix-*-*)
      local h="${1#mix-}" i
      i="${h#*-}" h="${h%-*}"
      if ! [[ "$h" =~ ^[0-9]+$ && "$i" =~ ^[0-9]+$ ]] || [ $((h % 512)) -ne 0 ] || [ $((i % 256)) -ne 0 ]; then
        echo "shape '$1': mix-H-I needs H a multiple of 512 and I of 256" >&2; return 2
      fi
      echo "--layers 2 --experts 8 --top-k 2 --hidden $h --intermediate $i --heads $((h / 128)) --kv-heads $((h / 512))
      --head-dim 128" ;;
    *) echo "unknown shape '$1' (a, b, dsv3, qwen3, gptoss, mix-H-I, sweep)" >&2; return 2 ;;
  esac
}
# llama.cpp's flags for a shape: on deepseek2 files its automatic flash attention stops on an
# assertion (GGML_ASSERT(*cur_backend_id != -1), ggml-backend.cpp: no CPU kernel for MLA's 576/512
# head widths at this release), so it runs without.
shape_llama_flags() {
  case "$1" in
    dsv3) echo "-fa off" ;;
    *) echo "" ;;
  esac
}
# The shapes of a SHAPES list, `sweep` expanded.
expand_shapes() {
  local s h i
  for s in ${1//,/ }; do
    if [ "$s" = sweep ]; then
      for h in 1024 2048 4096; do for i in 1024 4096 14336; do echo "mix-$h-$i"; done; done
    else
      echo "$s"
    fi
  done
}
# peer_model FERRY SHAPE FORMAT: makes $PEERS/models/SHAPE/FORMAT.gguf unless it is there.
peer_model() {
  local dir="$PEERS/models/$2" flags
  flags="$(shape_flags "$2")" || return 2
  if [ "$2" != a ] && [ "$2" != b ]; then
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    [ -f "$dir/$3.gguf" ] || "$1" moe make-tiny --out "$dir/$3.gguf" --gguf "$3" $flags --seed 1 >/dev/null
    return
  fi
  # shellcheck disable=SC2086
  [ -f "$dir/config.json" ] || "$1" moe make-tiny --out "$dir" $flags >/dev/null
  [ -f "$dir/$3.gguf" ] || "$1" moe quantize --model "$dir" --out "$dir/$3.gguf" --type "$3" >/dev/null
}
