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
