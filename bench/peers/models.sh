# shellcheck shell=bash
# The models the peer benchmarks run both engines on, sourced by bench/peers/run.sh and
# bench/moe_serve_peer/run.sh: `ferry moe make-tiny` (random weights, ferry's byte vocabulary) in
# $PEERS/models/SHAPE, then `ferry moe quantize` to $PEERS/models/SHAPE/FORMAT.gguf.
# Shapes: a = the Mixtral-architecture model of 4 layers, hidden 2048, 8 experts of width 5632,
# top-2, 16 heads, 4 KV heads (1.15 B parameters); b = wider experts: 2 layers, hidden 4096,
# 4 experts of Mixtral-8x7B's width 14336, top-2, 32 heads, 8 KV heads (1.5 B parameters).
shape_flags() {
  case "$1" in
    a) echo "--layers 4 --experts 8 --top-k 2 --hidden 2048 --intermediate 5632 --heads 16 --kv-heads 4 --head-dim 128" ;;
    b) echo "--layers 2 --experts 4 --top-k 2 --hidden 4096 --intermediate 14336 --heads 32 --kv-heads 8 --head-dim 128" ;;
    *) echo "unknown shape '$1' (a, b)" >&2; return 2 ;;
  esac
}
# peer_model FERRY SHAPE FORMAT: makes $PEERS/models/SHAPE/FORMAT.gguf unless it is there.
peer_model() {
  local dir="$PEERS/models/$2" flags
  if [ ! -f "$dir/config.json" ]; then
    flags="$(shape_flags "$2")" || return 2
    # shellcheck disable=SC2086
    "$1" moe make-tiny --out "$dir" $flags >/dev/null
  fi
  [ -f "$dir/$3.gguf" ] || "$1" moe quantize --model "$dir" --out "$dir/$3.gguf" --type "$3" >/dev/null
}
