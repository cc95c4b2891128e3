#!/usr/bin/env bash
# `ferry moe serve` beside llama.cpp's llama-server on the same GGUF files, through the same
# OpenAI API, driven by the same load generator (bench/moe_serve/loadgen.py) with the same requests
# (issue 49). Builds the peer (bench/peers/llama_cpp.sh: the pinned llama.cpp, llama-server from its
# source), makes the models (bench/peers/models.sh), then for every model and cell starts one server,
# waits for /health, sends one short warm-up request, runs the cell, and stops it; the two engines
# alternate cell by cell (their order swaps each repetition), one server at a time. Cells:
#   closed  CONCURRENCY clients in closed loop, REQUESTS requests each;
#   rate    open loop, RATE_REQUESTS Poisson arrivals at each of RATES requests/s;
#   chat    SESSIONS conversations of TURNS turns, each turn resending the conversation, once with
#           `cache_prompt: true` and once with false (CACHE): time to first token per turn.
# Lengths ShareGPT-like (loadgen --lengths sharegpt): lognormal, prompt median PROMPT_MEDIAN tokens
# (at most PROMPT_MAX), output median OUTPUT_MEDIAN (at most OUTPUT_MAX), ignore_eos, so both engines
# generate exactly the same number of tokens; prompts cut from the Python standard library at the
# corpus's bytes per token as llama-server's /tokenize counts them (BYTES_PER_TOKEN overrides).
# The peer models hold 1,024 tokens of context (make-tiny's --max-pos; both servers refuse more), so
# the defaults keep prompt + output within it: at most 576 + 384 tokens a request, and chat turns of
# CHAT_* lengths (4 turns of at most 80 + 80 tokens plus the chat template's).
# Random weights over a byte vocabulary emit bytes that are not UTF-8, and llama-server fails such
# a request (500: "does not match the expected Content-only format"), so on the peer models both
# engines are sent a logit_bias of -100 on tokens 128-255 (BAN_TOKENS; empty for none), which keeps
# the output ASCII; a GGUF path gets none unless BAN_TOKENS is set.
# The engines as their users start them: ferry with its defaults (`--model --port --threads`
# only); llama-server with THREADS threads and the slots the load needs: -np = the clients (closed),
# the sessions (chat) or 64 (rate), one unified KV cache (-kvu) of -c = slots x the longest
# request's context (prompt + output, for chat all turns), everything else its defaults.
# Writes OUT/cells/MODEL/CELL/rREP/serve_ENGINE.{csv,json} and server logs, then report.py:
# OUT/peer.csv (medians over REPS), OUT/peer.md (tables, ferry / llama.cpp ratios), OUT/peer.png.
#   bench/moe_serve_peer/run.sh [ferry binary] [output dir]
#   MODELS=a/Q4_K_M WORKLOADS=closed CONCURRENCY=1,4 REQUESTS=2 REPS=1 bench/moe_serve_peer/run.sh  (short)
#   MODELS=/path/to/any.gguf bench/moe_serve_peer/run.sh BIN DIR          (a GGUF file of your own)
# Run it on an otherwise idle machine: nothing else should compete for the cores. The defaults take
# hours on 2 cores (the 64-client and lowest-rate cells dominate); MODELS, REPS, CONCURRENCY, RATES,
# REQUESTS and RATE_REQUESTS shorten it.
set -euo pipefail
cd "$(dirname "$0")/../.."
FERRY="$(realpath "${1:-build/default/apps/ferry}")"
OUT="${2:-runs/moe-serve-peer}"
MODELS="${MODELS:-a/Q4_K_M,a/Q8_0}"     # SHAPE/FORMAT made by bench/peers/models.sh, or GGUF paths
WORKLOADS="${WORKLOADS:-closed,rate,chat}"
CONCURRENCY="${CONCURRENCY:-1,4,16,64}"
REQUESTS="${REQUESTS:-2}"               # closed: requests per client
RATES="${RATES:-0.1,0.2,0.4}"           # rate: requests/s, around 2 cores' capacity (~40 tok/s / ~180 a request); inf: at once
RATE_REQUESTS="${RATE_REQUESTS:-32}"    # rate: requests per rate
RATE_SLOTS="${RATE_SLOTS:-64}"          # rate: llama-server's -np
SESSIONS="${SESSIONS:-8}"               # chat
TURNS="${TURNS:-4}"
CACHE="${CACHE:-on,off}"
PROMPT_MEDIAN="${PROMPT_MEDIAN:-200}" PROMPT_MAX="${PROMPT_MAX:-576}"
OUTPUT_MEDIAN="${OUTPUT_MEDIAN:-150}" OUTPUT_MAX="${OUTPUT_MAX:-384}"
CHAT_PROMPT_MEDIAN="${CHAT_PROMPT_MEDIAN:-48}" CHAT_PROMPT_MAX="${CHAT_PROMPT_MAX:-80}"
CHAT_OUTPUT_MEDIAN="${CHAT_OUTPUT_MEDIAN:-48}" CHAT_OUTPUT_MAX="${CHAT_OUTPUT_MAX:-80}"
REPS="${REPS:-3}"
THREADS="${THREADS:-$(nproc)}"
PORT="${PORT:-18431}"                   # the first server's; each start takes the next of 100
SEED="${SEED:-1}"
PY=/usr/bin/python3
mkdir -p "$OUT"
OUT="$(realpath "$OUT")"

# shellcheck source=bench/peers/llama_cpp.sh
source bench/peers/llama_cpp.sh
# shellcheck source=bench/peers/models.sh
source bench/peers/models.sh

model_path() {  # SHAPE/FORMAT or a GGUF path -> the file (made if it is a peer model)
  if [[ "$1" == *.gguf ]]; then realpath "$1"; return; fi
  peer_model "$FERRY" "${1%%/*}" "${1#*/}"
  echo "$PEERS/models/$1.gguf"
}
model_name() {  # a short name for directories and tables
  if [[ "$1" == *.gguf ]]; then basename "$1" .gguf; else echo "${1//\//-}"; fi
}

SERVER_PID="" STARTS=0 PORT_NOW=""
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
trap stop_server EXIT
# start_server ENGINE GGUF SLOTS CTX LOG: one server on $PORT_NOW, in the background. Each start
# takes a fresh port: the connections a stopped server closed linger in TIME_WAIT on its port, and a
# server whose listening socket lacks SO_REUSEADDR (ferry before 2026-12-06, on cpp-httplib 0.11)
# cannot bind it again for a minute.
start_server() {
  PORT_NOW=$(( PORT + STARTS % 100 ))
  STARTS=$(( STARTS + 1 ))
  if [ "$1" = ferry ]; then
    "$FERRY" moe serve --model "$2" --port "$PORT_NOW" --threads "$THREADS" </dev/null >"$5" 2>&1 &
  else
    # From the library folder, where llama.cpp finds the CPU backend for this machine.
    (cd "$LIB" && exec "$PEERS/bin/llama-server" -m "$2" --port "$PORT_NOW" -t "$THREADS" -np "$3" -kvu -c "$4") \
      </dev/null >"$5" 2>&1 &
  fi
  SERVER_PID=$!
}
wait_ready() {  # /health answers 200 (the model is loaded); fails if the server exits first
  for _ in $(seq 2400); do
    curl -sf -m 5 -o /dev/null "http://127.0.0.1:$PORT_NOW/health" && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}
warm_up() {  # one short request, so the first cell request does not pay the first touch of the weights
  curl -s -m 600 -o /dev/null "http://127.0.0.1:$PORT_NOW/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "def main():", "max_tokens": 4, "temperature": 0, "ignore_eos": true}'
}
LOADGEN=(bench/moe_serve/loadgen.py --wait-s 600 --seed "$SEED" --lengths sharegpt)

# The cells: NAME|SLOTS|CTX|loadgen flags. A request's context is at most PROMPT_MAX tokens of
# prompt (cut at the measured bytes per token; a margin of 1/8 for the cut's error) and OUTPUT_MAX
# generated; a chat turn holds every earlier turn and the chat template's tokens too (llama-server
# caps a slot at the model's training context whatever -c gives it).
cells() {
  local lens="--prompt-median $PROMPT_MEDIAN --prompt-max $PROMPT_MAX --output-median $OUTPUT_MEDIAN --output-max $OUTPUT_MAX"
  local chat_lens="--prompt-median $CHAT_PROMPT_MEDIAN --prompt-max $CHAT_PROMPT_MAX"
  chat_lens+=" --output-median $CHAT_OUTPUT_MEDIAN --output-max $CHAT_OUTPUT_MAX"
  local per=$(( PROMPT_MAX * 9 / 8 + OUTPUT_MAX + 64 )) c r k
  local chat=$(( TURNS * (CHAT_PROMPT_MAX * 9 / 8 + CHAT_OUTPUT_MAX + 64) + 64 ))
  if [[ ",$WORKLOADS," == *,closed,* ]]; then
    for c in ${CONCURRENCY//,/ }; do
      echo "closed-c$c|$c|$(( c * per ))|--workload closed --concurrency $c --requests-per-client $REQUESTS $lens"
    done
  fi
  if [[ ",$WORKLOADS," == *,rate,* ]]; then
    for r in ${RATES//,/ }; do
      echo "rate-$r|$RATE_SLOTS|$(( RATE_SLOTS * per ))|--workload rate --rates $r --requests $RATE_REQUESTS $lens"
    done
  fi
  if [[ ",$WORKLOADS," == *,chat,* ]]; then
    for k in ${CACHE//,/ }; do
      echo "chat-cache-$k|$SESSIONS|$(( SESSIONS * chat ))|--workload chat --sessions $SESSIONS --turns $TURNS --cache-prompt $k $chat_lens"
    done
  fi
}

{
  echo "ferry: $FERRY, tree at git $(git rev-parse --short HEAD)"
  echo "llama.cpp: $(cd "$PEERS/llama.cpp" && git log -1 --format=%h), node-llama-cpp $VERSION"
  echo "threads $THREADS, reps $REPS, seed $SEED, $(nproc) cores: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
} >"$OUT/meta.txt"

for model in ${MODELS//,/ }; do
  gguf="$(model_path "$model")"
  name="$(model_name "$model")"
  # Bytes per token of the corpus under the model's tokenizer, asked of llama-server once.
  bpt="${BYTES_PER_TOKEN:-}"
  if [ -z "$bpt" ]; then
    start_server llama "$gguf" 1 4096 "$OUT/measure_$name.log"
    wait_ready || { echo "llama-server did not start on $gguf:" >&2; tail "$OUT/measure_$name.log" >&2; exit 1; }
    bpt="$("$PY" bench/moe_serve/loadgen.py --url "http://127.0.0.1:$PORT_NOW" --measure-bytes-per-token)"
    stop_server
  fi
  ban="${BAN_TOKENS-}"
  [ -n "${BAN_TOKENS+set}" ] || [[ "$model" == *.gguf ]] || ban=128-255
  echo "$name: $gguf, $bpt bytes per token, banned tokens: ${ban:-none}" | tee -a "$OUT/meta.txt"
  for rep in $(seq "$REPS"); do
    engines="ferry llama.cpp"
    (( rep % 2 == 0 )) && engines="llama.cpp ferry"
    while IFS='|' read -r cell slots ctx flags <&3; do
      for engine in $engines; do
        dir="$OUT/cells/$name/$cell/r$rep"
        mkdir -p "$dir"
        echo "rep $rep: $name $cell $engine" >&2
        start_server "$engine" "$gguf" "$slots" "$ctx" "$dir/server_$engine.log"
        # A cell that fails is reported and left out; the others go on.
        # shellcheck disable=SC2086
        if ! { wait_ready && warm_up &&
               "$PY" "${LOADGEN[@]}" --url "http://127.0.0.1:$PORT_NOW" --bytes-per-token "$bpt" ${ban:+--ban-tokens "$ban"} $flags --label "$engine" --out "$dir" \
                 >"$dir/loadgen_$engine.log" 2>&1; }; then
          echo "  $engine failed in $cell: $dir (server_$engine.log, loadgen_$engine.log)" >&2
          tail -3 "$dir/loadgen_$engine.log" "$dir/server_$engine.log" >&2 2>/dev/null || true
        fi
        stop_server
      done
    done 3< <(cells)
  done
done
"$PY" bench/moe_serve_peer/report.py "$OUT"
