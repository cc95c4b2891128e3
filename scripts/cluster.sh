#!/usr/bin/env bash
# A cluster of hosts on one machine: N Linux network namespaces ("hosts") joined over veth pairs
# by a bridge in its own namespace ("switch"), every host's egress and ingress shaped by tc, so
# that an MPI job runs across them as on real machines behind a switch (docs/cluster.md).
#
#   scripts/cluster.sh up N [--rate RATE] [--burst SIZE] [--queue SIZE] [--subnet A.B.C.0/24]
#   scripts/cluster.sh down                      ends every process inside, removes everything
#   scripts/cluster.sh status
#   scripts/cluster.sh exec I -- COMMAND...      runs COMMAND on host I
#   scripts/cluster.sh mpirun [MPIRUN OPTIONS] -- COMMAND...
#                                                runs mpirun on host 1 across all the hosts
#
# The cluster is named by $FERRY_CLUSTER_PREFIX (default "ferry"): hosts PREFIX-h1..PREFIX-hN,
# switch PREFIX-sw. Nothing is created in the root namespace but the namespaces' names and
# /etc/netns/PREFIX-*/hosts (so that host names resolve inside the cluster).
#
# Exit codes: 0 done; 1 failed; 2 bad command line; 3 this machine refuses network namespaces
# (not root, or the kernel lacks veth, bridge or tbf).
set -euo pipefail

prog="scripts/cluster.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix="${FERRY_CLUSTER_PREFIX:-ferry}"
switch_ns="$prefix-sw"

usage_error() { echo "$prog: $*" >&2; exit 2; }
fail() { echo "$prog: $*" >&2; exit 1; }
refused() { echo "$prog: this machine refuses network namespaces: $*" >&2; exit 3; }

[[ "$prefix" =~ ^[a-z][a-z0-9]{0,15}$ ]] ||
  usage_error "FERRY_CLUSTER_PREFIX must be a lowercase letter then up to 15 letters or digits, got '$prefix'"

host_ns() { echo "$prefix-h$1"; }
# The cluster's namespaces, as ip netns lists them: hosts in order of their number, then the switch.
cluster_hosts() {
  ip netns list 2>/dev/null | awk -v p="$prefix-h" '{ n = $1; if (index(n, p) == 1 && substr(n, length(p) + 1) ~ /^[0-9]+$/) print substr(n, length(p) + 1), n }' |
    sort -n -u | awk '{print $2}'
}
cluster_namespaces() { cluster_hosts; ip netns list 2>/dev/null | awk '{print $1}' | grep -Fx "$switch_ns" || true; }
# The IPv4 address of a host's eth0, e.g. 10.77.0.3.
host_address() { ip -n "$1" -4 -o addr show dev eth0 2>/dev/null | awk '{print $4}' | cut -d/ -f1; }

# A tc rate (100mbit, 1gbit) in bits per second; "" when it is not one.
rate_bps() {
  local r="${1,,}"
  [[ "$r" =~ ^([0-9]+(\.[0-9]+)?)(kbit|mbit|gbit)$ ]] || return 0
  awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
    'BEGIN { m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : 1e9; printf "%.0f\n", n * m }'
}
# A size (262144, 256k, 256kb, 4m, 4mb; k = 1024 as in tc) in bytes; "" when it is not one.
size_bytes() {
  local s="${1,,}"
  [[ "$s" =~ ^([0-9]+)(b|k|kb|m|mb)?$ ]] || return 0
  case "${BASH_REMATCH[2]}" in
    k|kb) echo $(( BASH_REMATCH[1] * 1024 )) ;;
    m|mb) echo $(( BASH_REMATCH[1] * 1024 * 1024 )) ;;
    *) echo "${BASH_REMATCH[1]}" ;;
  esac
}
max() { [ "$1" -ge "$2" ] && echo "$1" || echo "$2"; }

need_root() {
  [ "$(id -u)" -eq 0 ] || refused "network namespaces need root (uid $(id -u))"
  command -v ip >/dev/null || refused "ip (iproute2) is not installed"
  command -v tc >/dev/null || refused "tc (iproute2) is not installed"
}

# Ends every process inside the namespaces: SIGTERM, then SIGKILL for those still there after
# 2 s (a stuck daemon may ignore SIGTERM), until none is left (at most 10 s).
end_processes() {
  local ns pids deadline term_sent=0 kill_at
  kill_at=$(( $(date +%s%N) + 2000000000 ))
  deadline=$(( $(date +%s%N) + 10000000000 ))
  while :; do
    pids=""
    for ns in "$@"; do pids="$pids $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"; done
    pids=$(echo $pids)
    [ -z "$pids" ] && return 0
    if [ "$(date +%s%N)" -ge "$deadline" ]; then
      echo "$prog: processes still running in the namespaces after SIGKILL: $pids" >&2
      return 1
    fi
    if [ "$term_sent" -eq 0 ]; then
      kill -TERM $pids 2>/dev/null || true
      term_sent=1
    elif [ "$(date +%s%N)" -ge "$kill_at" ]; then
      kill -KILL $pids 2>/dev/null || true
    fi
    sleep 0.1
  done
}

cmd_down() {
  [ $# -eq 0 ] || usage_error "down takes no arguments, got '$*'"
  need_root
  local namespaces ns status=0
  namespaces=$(cluster_namespaces)
  # On one of the hosts, this script would be among the processes it ends.
  local here_ns
  here_ns=$(ip netns identify $$ 2>/dev/null | tr ' ' '\n' | grep -Fx -f <(echo "$namespaces") || true)
  [ -z "$here_ns" ] || fail "down runs outside the cluster (this shell is on $here_ns)"
  if [ -z "$namespaces" ] && ! compgen -G "/etc/netns/$prefix-*" >/dev/null; then
    echo "cluster $prefix: nothing to remove"
    return 0
  fi
  # shellcheck disable=SC2086
  end_processes $namespaces || status=1
  # Qdiscs and links first (deleting a namespace frees its devices asynchronously), then the
  # namespaces, then their /etc/netns files.
  for ns in $namespaces; do
    if [ "$ns" = "$switch_ns" ]; then
      local port
      for port in $(ip -n "$ns" -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^p[0-9]+$'); do
        ip -n "$ns" link del "$port" 2>/dev/null || true
      done
      ip -n "$ns" link del br0 2>/dev/null || true
    else
      tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
      ip -n "$ns" link del eth0 2>/dev/null || true
    fi
    ip netns del "$ns" || { echo "$prog: could not delete namespace $ns" >&2; status=1; }
  done
  rm -rf /etc/netns/"$prefix"-h[0-9]* /etc/netns/"$switch_ns"
  rmdir /etc/netns 2>/dev/null || true
  local left
  left=$(cluster_namespaces)
  [ -z "$left" ] || { echo "$prog: namespaces left: $left" >&2; status=1; }
  [ "$status" -eq 0 ] && echo "cluster $prefix: removed ($(echo $namespaces | wc -w) namespaces)"
  return "$status"
}

cmd_up() {
  local n="" rate="1gbit" burst="" queue="" subnet="10.77.0.0/24"
  while [ $# -gt 0 ]; do
    case "$1" in
      --rate|--burst|--queue|--subnet)
        [ $# -ge 2 ] || usage_error "$1 needs a value"
        case "$1" in
          --rate) rate="$2" ;; --burst) burst="$2" ;; --queue) queue="$2" ;; --subnet) subnet="$2" ;;
        esac
        shift 2 ;;
      --delay|--latency) usage_error "$1: no delay, the cluster shapes rate and queueing only (docs/cluster.md); latency is ferry's --link BW,LATENCY" ;;
      --*) usage_error "unknown option for up: '$1' (expected --rate, --burst, --queue, --subnet)" ;;
      *) [ -z "$n" ] || usage_error "up takes one host count, got '$n' and '$1'"; n="$1"; shift ;;
    esac
  done
  [ -n "$n" ] || usage_error "up needs the number of hosts, e.g. '$prog up 5'"
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] ||
    usage_error "the number of hosts must be an integer from 1 to 250, got '$n'"
  local bps=""
  if [ "${rate,,}" != none ]; then
    bps=$(rate_bps "$rate")
    [ -n "$bps" ] && [ "$bps" -gt 0 ] ||
      usage_error "--rate must be a tc rate such as 100mbit, 300mbit, 1gbit or 'none', got '$rate'"
    rate="${rate,,}"
  fi
  local burst_b queue_b host_queue_b
  if [ -n "$burst" ]; then
    burst_b=$(size_bytes "$burst")
    [ -n "$burst_b" ] || usage_error "--burst must be a size such as 256kb, got '$burst'"
    # tbf splits a larger packet into segments in software; one offload packet is 64 KiB.
    [ "$burst_b" -gt 65536 ] || usage_error "--burst must exceed one offload packet (64kb), got '$burst'"
  elif [ -n "$bps" ]; then
    burst_b=$(max 131072 $(( bps / 8 / 500 )))           # 2 ms at the rate, at least 128 KiB
  fi
  if [ -n "$queue" ]; then
    queue_b=$(size_bytes "$queue")
    [ -n "$queue_b" ] || usage_error "--queue must be a size such as 2mb, got '$queue'"
    [ "$queue_b" -ge "${burst_b:-0}" ] || usage_error "--queue must be at least the burst ($burst_b bytes), got '$queue'"
  elif [ -n "$bps" ]; then
    # A switch port's share of a shallow shared buffer: 4 MiB (10 ms at the rate, two bursts
    # when more) holds 4 senders' windows in an incast without drops (docs/cluster.md).
    queue_b=$(max $(max 4194304 $(( 2 * burst_b ))) $(( bps / 8 / 100 )))
  fi
  [[ "$subnet" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.0/24$ ]] &&
    [ "${BASH_REMATCH[1]}" -le 255 ] && [ "${BASH_REMATCH[2]}" -le 255 ] && [ "${BASH_REMATCH[3]}" -le 255 ] ||
    usage_error "--subnet must be a /24 such as 10.77.0.0/24, got '$subnet'"
  local net="${subnet%.0/24}"
  need_root
  [ -z "$(cluster_namespaces)" ] || fail "cluster $prefix exists already ($prog status; $prog down)"

  # A half-made cluster is removed again.
  trap 'rc=$?; if [ $rc -ne 0 ]; then cmd_down >/dev/null 2>&1 || true; fi' EXIT
  local err
  err=$(ip netns add "$switch_ns" 2>&1) || refused "ip netns add: $err"
  ip -n "$switch_ns" link set lo up
  err=$(ip -n "$switch_ns" link add br0 type bridge 2>&1) || refused "bridge: $err"
  ip -n "$switch_ns" link set br0 up
  local i ns hosts_file
  hosts_file=$(mktemp)
  printf '127.0.0.1\tlocalhost\n' >"$hosts_file"
  for i in $(seq 1 "$n"); do printf '%s.%s\t%s\n' "$net" "$i" "$(host_ns "$i")" >>"$hosts_file"; done
  for i in $(seq 1 "$n"); do
    ns=$(host_ns "$i")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    err=$(ip -n "$switch_ns" link add "p$i" type veth peer name eth0 netns "$ns" 2>&1) || refused "veth: $err"
    ip -n "$switch_ns" link set "p$i" master br0 up
    ip -n "$ns" addr add "$net.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ -n "$bps" ]; then
      # Egress: the host's NIC. Its queue is large (the host's own socket buffers fill it, not
      # the network), so that the sender's TCP sees the rate and not local drops.
      host_queue_b=$(max $(( 4 * queue_b )) 8388608)
      err=$(tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$burst_b" limit "$host_queue_b" 2>&1) ||
        refused "tc tbf: $err"
      # Ingress: the switch port towards the host, with a switch's buffer: N senders to one host
      # share its rate (incast), and overflow is dropped as on a switch.
      tc -n "$switch_ns" qdisc add dev "p$i" root tbf rate "$rate" burst "$burst_b" limit "$queue_b"
    fi
    mkdir -p "/etc/netns/$ns"
    cp "$hosts_file" "/etc/netns/$ns/hosts"
  done
  rm -f "$hosts_file"
  trap - EXIT
  local shaping="unshaped"
  [ -z "$bps" ] || shaping="rate $rate on egress and ingress, burst $burst_b B, switch queue $queue_b B"
  echo "cluster $prefix: $n hosts $(host_ns 1)..$(host_ns "$n") on $subnet ($net.1..$net.$n), switch $switch_ns, $shaping"
}

cmd_status() {
  [ $# -eq 0 ] || usage_error "status takes no arguments, got '$*'"
  need_root
  local hosts ns
  hosts=$(cluster_hosts)
  if [ -z "$hosts" ]; then echo "cluster $prefix: not up"; return 1; fi
  echo "cluster $prefix: $(echo $hosts | wc -w) hosts, switch $switch_ns"
  printf '%-14s %-15s %-28s %-28s %s\n' host address egress ingress processes
  qdisc_of() { tc -n "$1" qdisc show dev "$2" root 2>/dev/null | awk '$2 == "tbf" { for (i = 1; i < NF; i++) { if ($i == "rate") r = $(i+1); if ($i == "burst") b = $(i+1); if ($i == "limit") l = $(i+1) } print "tbf " r " burst " b } $2 != "tbf" { print "none" }' | head -1; }
  for ns in $hosts; do
    local i="${ns##*-h}"
    printf '%-14s %-15s %-28s %-28s %s\n' "$ns" "$(host_address "$ns")" "$(qdisc_of "$ns" eth0)" \
      "$(qdisc_of "$switch_ns" "p$i")" "$(ip netns pids "$ns" | wc -l)"
  done
}

# Runs COMMAND... on host NS as its host name (own UTS namespace) with its /etc/hosts.
enter() {
  local ns="$1"; shift
  exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$ns" "$@"
}

cmd_exec() {
  [ $# -ge 1 ] || usage_error "exec needs a host number, e.g. '$prog exec 2 -- ip addr'"
  local i="$1"; shift
  [[ "$i" =~ ^[0-9]+$ ]] || usage_error "exec needs a host number, got '$i'"
  [ "${1:-}" = "--" ] && shift
  [ $# -ge 1 ] || usage_error "exec needs a command, e.g. '$prog exec $i -- ip addr'"
  need_root
  ip netns list | awk '{print $1}' | grep -qFx "$(host_ns "$i")" || fail "no host $(host_ns "$i") (cluster $prefix: $prog status)"
  enter "$(host_ns "$i")" "$@"
}

cmd_mpirun() {
  local opts=() have_hosts=0
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case "$1" in -H|-host|--host|-hostfile|--hostfile|-machinefile|--machinefile|--default-hostfile) have_hosts=1 ;; esac
    opts+=("$1"); shift
  done
  [ "${1:-}" = "--" ] || usage_error "mpirun needs '--' before the command, e.g. '$prog mpirun -np 5 -- hostname'"
  shift
  [ $# -ge 1 ] || usage_error "mpirun needs a command after '--'"
  need_root
  local hosts first address
  hosts=$(cluster_hosts)
  [ -n "$hosts" ] || fail "cluster $prefix is not up ($prog up N)"
  first=$(echo "$hosts" | head -1)
  address=$(host_address "$first")
  [ -n "$address" ] || fail "host $first has no address on eth0"
  local subnet="${address%.*}.0/24"
  local args=(mpirun --oversubscribe --bind-to none)
  [ "$(id -u)" -ne 0 ] || args+=(--allow-run-as-root)
  [ "$have_hosts" -eq 1 ] || args+=(-H "$(echo $hosts | tr ' ' ',')")
  # The agent enters a host's namespace where mpirun would ssh to it; ob1 over TCP on the
  # cluster's subnet only (UCX would pick its own transports and ignore the interface choice).
  args+=(--mca plm_rsh_agent "$here/cluster_rsh.sh"
         --mca pml ob1 --mca btl tcp,self
         --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet"
         -x "OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}"
         # The hosts share this machine's cores: ferry's ranks sleep between polls of MPI.
         -x "FERRY_MPI_WAIT=${FERRY_MPI_WAIT:-sleep}")
  [ -z "${FERRY_RANK_DIR:-}" ] || args+=(-x FERRY_RANK_DIR)
  export FERRY_CLUSTER_PREFIX="$prefix"
  enter "$first" "${args[@]}" "${opts[@]}" "$@"
}

[ $# -ge 1 ] || usage_error "expected a subcommand: up N, down, status, exec I -- COMMAND, mpirun [OPTIONS] -- COMMAND"
sub="$1"; shift
case "$sub" in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  status) cmd_status "$@" ;;
  exec) cmd_exec "$@" ;;
  mpirun) cmd_mpirun "$@" ;;
  -h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
  *) usage_error "unknown subcommand '$sub' (expected up, down, status, exec, mpirun)" ;;
esac
