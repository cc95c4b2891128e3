#!/usr/bin/env bash
# OpenMP's wait policy in the launch path (apps/wait_policy.h): `generate` and `bench` whose experts
# stream from disk restart themselves with OMP_WAIT_POLICY=PASSIVE when the user set none; a policy
# the user set is kept; a run whose experts are all in memory keeps libgomp's default. libgomp's
# OMP_DISPLAY_ENV=verbose shows what each process started with; the last GOMP_SPINCOUNT it prints
# is that of the process that ran (0 passive, 300000 libgomp's default, 30000000000 active). The
# streamed runs also generate the in-memory run's text, with one read in flight and with several;
# a depth out of range is one error line naming it.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../cli_expect.sh"
make_tiny_gguf "$ferry" "$tmp" Q8_0
gen=(moe generate --model "$tmp/Q8_0.gguf" --prompt hi --tokens 6 --policy lru --threads 2)

# expect_spincount WANT TEXT-FILE WHAT: the last GOMP_SPINCOUNT in the file is WANT.
expect_spincount() {
  local got
  got=$(grep -o "GOMP_SPINCOUNT = '[0-9]*'" "$2" | tail -1 | grep -o "[0-9][0-9]*")
  if [ "$got" == "$1" ]; then echo "ok: $3 -> spin count $got"
  else echo "FAIL: $3 -> spin count '$got', wanted $1"; cat "$2"; failures=$((failures + 1)); fi
}
# run NAME ENV... -- ARGS...: `ferry ARGS` with OMP_WAIT_POLICY unset and ENV set, output in $tmp/NAME.txt.
run() {
  local name="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env -u OMP_WAIT_POLICY OMP_DISPLAY_ENV=verbose "${envs[@]}" "$ferry" "$@" >"$tmp/$name.txt" 2>&1 \
    || { echo "FAIL: $name"; cat "$tmp/$name.txt"; failures=$((failures + 1)); }
}

run memory -- "${gen[@]}" --link none --device-mem 100%
expect_spincount 300000 "$tmp/memory.txt" "generate, experts in memory, no policy set"
run stream -- "${gen[@]}" --link file --device-mem 50%
expect_spincount 0 "$tmp/stream.txt" "generate, experts streamed, no policy set"
run active OMP_WAIT_POLICY=ACTIVE -- "${gen[@]}" --link file --device-mem 50%
expect_spincount 30000000000 "$tmp/active.txt" "generate, experts streamed, OMP_WAIT_POLICY=ACTIVE"
grep -q "OMP_WAIT_POLICY = 'PASSIVE'" "$tmp/active.txt" \
  && { echo "FAIL: a user's OMP_WAIT_POLICY=ACTIVE was replaced"; failures=$((failures + 1)); } \
  || echo "ok: a user's OMP_WAIT_POLICY=ACTIVE is kept"
run one_read -- "${gen[@]}" --link file:reads=1 --device-mem 50%
run bench -- moe bench --model "$tmp/Q8_0.gguf" --policies lru --device-mem 50% --link file --compute none --batch 1 \
  --tokens 2 --prompt-tokens 4 --corpus '' --out "$tmp/bench"
expect_spincount 0 "$tmp/bench.txt" "bench, experts streamed, no policy set"
# A GGUF file's experts cross the file link, but with the default budget (auto) they all fit in
# memory: the sweep streams nothing, and keeps libgomp's default.
run bench_memory -- moe bench --model "$tmp/Q8_0.gguf" --policies lru --compute none --batch 1 \
  --tokens 2 --prompt-tokens 4 --corpus '' --out "$tmp/bench_memory"
expect_spincount 300000 "$tmp/bench_memory.txt" "bench, every expert resident (--device-mem auto), no policy set"

# The text (the last line) is the same whether the experts stream or not, however many reads.
for name in stream active one_read; do
  [ "$(tail -1 "$tmp/$name.txt")" == "$(tail -1 "$tmp/memory.txt")" ] && echo "ok: $name generates the in-memory text" \
    || { echo "FAIL: $name text differs"; tail -1 "$tmp/$name.txt" "$tmp/memory.txt"; failures=$((failures + 1)); }
done
for reads in 0 65; do
  expect_cli_error "--link 'file:reads=$reads': reads must be in [1, 64]" "$ferry" "${gen[@]}" --link "file:reads=$reads"
done
expect_cli_error "reads='x' is not an integer" "$ferry" "${gen[@]}" --link file:reads=x
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all ok"
