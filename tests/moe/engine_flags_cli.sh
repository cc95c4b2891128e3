#!/usr/bin/env bash
# The engine's flags are one flag set (apps/engine_flags.h): every `ferry moe` command that opens an
# engine from its flags lists --policy, --device-mem, --link and --compute with the same help text
# (bench's sweeps say they take lists), and refuses a bad value with the same one line, exit code 2,
# before the model is read.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../cli_expect.sh"

for cmd in generate logits serve bench; do "$ferry" moe "$cmd" --help >"$tmp/$cmd.help"; done
# The help text of FLAG in `ferry moe CMD --help`. CLI11 starts it at column 31, or at column 31 of
# the next line when the flag's name, type and default fill the first 30 columns.
help_of() {
  awk -v flag="$2" '
    function emit(line) { print substr(line, 31); found = 1; exit }
    seen { emit(substr($0, 1, 30) ~ /^ *$/ && substr($0, 31, 1) != " " ? $0 : seen) }
    index($0, "  " flag " ") == 1 { seen = $0 }
    END { if (seen && !found) print substr(seen, 31) }' "$tmp/$1.help"
}
# check WHAT OK: counts a failure unless OK is 0.
check() {
  if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

for flag in --policy --device-mem --link --compute; do
  want=$(help_of generate "$flag")
  [ -n "$want" ]; check "moe generate lists $flag" $?
  for cmd in logits serve; do
    got=$(help_of "$cmd" "$flag")
    [ "$got" = "$want" ]; check "moe $cmd $flag: '$got' is generate's '$want'" $?
  done
done
for flag in --link --compute; do
  got=$(help_of bench "$flag") want=$(help_of generate "$flag")
  [ "$got" = "$want" ]; check "moe bench $flag: '$got' is generate's '$want'" $?
done
# bench sweeps policies and budgets: generate's help text, then what a list means.
for pair in --policies:--policy --device-mem:--device-mem; do
  got=$(help_of bench "${pair%%:*}") want=$(help_of generate "${pair##*:}")
  [ -n "$want" ] && [ "${got#"$want"}" != "$got" ] && [ "$got" != "$want" ]
  check "moe bench ${pair%%:*}: '$got' extends generate's '$want'" $?
done

# Bad values: the same line from every command, before the (missing) model is opened; every value
# on generate, the policy and the link on the others.
echo '[[1, 2]]' >"$tmp/tokens.json"
bad() {  # bad CMD FLAG VALUE WANT
  local args=(moe "$1" --model "$tmp/none")
  [ "$1" = logits ] && args+=(--tokens "$tmp/tokens.json" --out "$tmp/out.npy")
  expect_cli_error "$4" "$ferry" "${args[@]}" "$2" "$3"
}
for cmd in generate logits serve; do
  bad "$cmd" --policy oracle "--policy oracle needs the recorded future routing"
  bad "$cmd" --link warp "unknown --link 'warp'"
done
bad generate --policy magic "unknown policy 'magic'"
bad generate --device-mem 150% "invalid --device-mem '150%'"
bad generate --compute fast "invalid --compute 'fast'"
bench=(moe bench --model "$tmp/none" --out "$tmp/bench")
expect_cli_error "--policies: oracle needs the recorded future routing" "$ferry" "${bench[@]}" --policies lru,oracle
# On a trace's routing the future is known: the oracles pass the flags, and the error is the trace's.
expect_cli_error "$tmp/none.jsonl" "$ferry" "${bench[@]}" --policies lru,oracle,prescope-perfect --routing "$tmp/none.jsonl"
expect_cli_error "unknown policy 'magic'" "$ferry" "${bench[@]}" --policies lru,magic
expect_cli_error "invalid --device-mem '150%'" "$ferry" "${bench[@]}" --device-mem 25%,150%
expect_cli_error "unknown --link 'warp'" "$ferry" "${bench[@]}" --link warp
expect_cli_error "invalid --compute 'fast'" "$ferry" "${bench[@]}" --compute fast
# A spec's keys after a ',' belong to it, as bench reads them: this one is valid, so the
# error is the missing model's.
expect_cli_error "$tmp/none" "$ferry" "${bench[@]}" --policies lru,prescope:window=2,predictor=cooccurrence
[ "$failures" -eq 0 ] && echo "every engine command takes the same engine flags" && exit 0
exit 1
