#!/usr/bin/env bash
# scripts/cluster.sh's bad command lines: exit code 2 and one line naming what was expected,
# before anything is created (so this runs without root too).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
source "$here/../cli_expect.sh"
export FERRY_CLUSTER_PREFIX="ftcli$$"

expect_cli_error "expected a subcommand" "$cluster"
expect_cli_error "unknown subcommand 'start'" "$cluster" start 3
expect_cli_error "needs the number of hosts" "$cluster" up
expect_cli_error "integer from 1 to 250, got '0'" "$cluster" up 0
expect_cli_error "integer from 1 to 250, got 'three'" "$cluster" up three
expect_cli_error "integer from 1 to 250, got '251'" "$cluster" up 251
expect_cli_error "one host count, got '3' and '4'" "$cluster" up 3 4
expect_cli_error "--rate must be a tc rate" "$cluster" up 3 --rate fast
expect_cli_error "got '1gbps'" "$cluster" up 3 --rate 1gbps
expect_cli_error "--rate needs a value" "$cluster" up 3 --rate
expect_cli_error "must exceed one offload packet" "$cluster" up 3 --burst 32kb
expect_cli_error "--burst must be a size" "$cluster" up 3 --burst lots
expect_cli_error "--queue must be at least the burst" "$cluster" up 3 --burst 256kb --queue 100kb
expect_cli_error "--subnet must be a /24" "$cluster" up 3 --subnet 10.77.0.0/16
expect_cli_error "--subnet must be a /24" "$cluster" up 3 --subnet 10.300.0.0/24
expect_cli_error "unknown option for up: '--mtu'" "$cluster" up 3 --mtu 9000
expect_cli_error "--delay: no delay" "$cluster" up 3 --delay 1ms
expect_cli_error "down takes no arguments" "$cluster" down now
expect_cli_error "status takes no arguments" "$cluster" status all
expect_cli_error "exec needs a host number, got 'h2'" "$cluster" exec h2 -- true
expect_cli_error "exec needs a command" "$cluster" exec 2 --
expect_cli_error "needs '--' before the command" "$cluster" mpirun -np 2 hostname
expect_cli_error "needs a command after '--'" "$cluster" mpirun -np 2 --
expect_cli_error "FERRY_CLUSTER_PREFIX must be" env FERRY_CLUSTER_PREFIX=My-Cluster "$cluster" up 3

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "ok: every bad command line refused with exit code 2 and one line"
