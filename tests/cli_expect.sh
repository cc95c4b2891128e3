# Sourced by the command-line error tests (tests/e2e/*.sh, tests/moe/*_errors.sh).
#
# expect_cli_error "<substring of the message>" COMMAND ARGS...
#   COMMAND must exit with code 2 and print exactly one line on stderr, containing the
#   substring. Prints "ok: ..." or "FAIL: ..." and counts failures in $failures.
failures=${failures:-0}
expect_cli_error() {
  local want="$1"; shift
  local err rc lines
  err=$(mktemp)
  "$@" >/dev/null 2>"$err"
  rc=$?
  lines=$(grep -c . "$err")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$err"; then
    echo "FAIL: ${*:2} -> rc=$rc, $lines lines, wanted '$want':"; cat "$err"
    failures=$((failures + 1))
  else
    echo "ok: ${*:2} -> $(cat "$err")"
  fi
  rm -f "$err"
}

# make_tiny_gguf FERRY DIR TYPE: a tiny MoE checkpoint (2 layers of 4 experts, 64 wide) in DIR/m
# and its GGUF file of TYPE in DIR/TYPE.gguf; exits the test when either cannot be made.
make_tiny_gguf() {
  "$1" moe make-tiny --out "$2/m" --layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 4 \
    --intermediate 64 >/dev/null || { echo "FAIL: make-tiny"; exit 1; }
  "$1" moe quantize --model "$2/m" --out "$2/$3.gguf" --type "$3" >/dev/null || { echo "FAIL: quantize $3"; exit 1; }
}
