#!/usr/bin/env bash
# `ferry advise` with bad input: one line on stderr, exit code 2.
set -u
FERRY=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../cli_expect.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '{ not json' >"$tmp/corrupt.json"
echo '{"name": "x", "batch": 8, "forward_s": 0.1, "backward_s": 0.1, "tensors": [0]}' >"$tmp/zero.json"
expect_cli_error "unknown model 'nosuch'" "$FERRY" advise --model nosuch
expect_cli_error "cannot read model profile file" "$FERRY" advise --model "$tmp/missing.json"
expect_cli_error "is not valid JSON" "$FERRY" advise --model "$tmp/corrupt.json"
expect_cli_error "numel must be an integer of at least 1" "$FERRY" advise --model "$tmp/zero.json"
expect_cli_error "unknown --device 'tpu9'" "$FERRY" advise --model mlp --device tpu9
expect_cli_error "--workers" "$FERRY" advise --model mlp --workers 4,x
expect_cli_error "--workers" "$FERRY" advise --model mlp --workers 0
expect_cli_error "bandwidth" "$FERRY" advise --model mlp --bandwidth 1Gbit
expect_cli_error "codec" "$FERRY" advise --model mlp --codecs nosuch
expect_cli_error "cannot read calibration file" "$FERRY" advise --model mlp --calibration "$tmp/nocal.json"
echo '{"constants": {"cores": 2, "compute_scale": 1, "cpu_s_per_byte": 0, "message_s": 0, "ps_overlap": 0, "run_overhead_s": 0}, "profiles": 7}' >"$tmp/badprof.json"
expect_cli_error "'profiles' must be a path" "$FERRY" advise --model mlp --calibration "$tmp/badprof.json"
expect_cli_error "--steps must be at least 0" "$FERRY" advise --model mlp --steps -1
expect_cli_error "no such run directory" "$FERRY" advise --validate "$tmp/noruns"
expect_cli_error "--calibrate needs --write-calibration" "$FERRY" advise --calibrate "$tmp"
exit $((failures > 0))
