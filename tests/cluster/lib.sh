# Sourced by the cluster tests (scripts/cluster.sh). Each test has a cluster of its own:
#   cluster_test TAG     names it (FERRY_CLUSTER_PREFIX=ft<TAG><pid>, so that it never meets a
#                        user's cluster or another test's), makes $tmp, and on exit runs
#                        `cluster.sh down` and removes $tmp;
#   cluster_up ARGS...   `cluster.sh up ARGS`; where this machine refuses network namespaces
#                        (not root, no veth, bridge or tbf) prints one SKIP line and exits 77.
cluster="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/cluster.sh"
field() { grep -o "\"$2\": *[^,}]*" "$1" | head -1 | sed 's/.*: *//; s/"//g'; }

cluster_test() {
  export FERRY_CLUSTER_PREFIX="ft$1$$"
  tmp=$(mktemp -d)
  trap 'cluster_cleanup' EXIT
}
cluster_cleanup() {
  local rc=$?
  "$cluster" down >/dev/null 2>"$tmp/down.err"
  case $? in
    0|3) ;;   # 3: no namespaces here (the test skipped)
    *) echo "FAIL: cluster.sh down:"; cat "$tmp/down.err"; rc=1 ;;
  esac
  rm -rf "$tmp"
  exit "$rc"
}
cluster_up() {
  local out rc
  out=$("$cluster" up "$@" 2>&1); rc=$?
  if [ "$rc" -eq 3 ]; then echo "SKIP: $out"; exit 77; fi
  [ "$rc" -eq 0 ] || { echo "FAIL: cluster.sh up $*: $out"; exit 1; }
  echo "$out"
}
# The bytes a switch port has sent towards its host (the host's ingress), e.g. port_tx_bytes 5.
port_tx_bytes() { ip netns exec "$FERRY_CLUSTER_PREFIX-sw" cat "/sys/class/net/p$1/statistics/tx_bytes"; }
