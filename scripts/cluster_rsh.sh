#!/bin/sh
# mpirun's remote-shell agent for scripts/cluster.sh (--mca plm_rsh_agent): where mpirun would
# run `ssh HOST COMMAND...`, it runs `cluster_rsh.sh HOST COMMAND...`, and this enters the
# host's network namespace instead. HOST is a host name (PREFIX-hI) or its address (A.B.C.I);
# COMMAND arrives as words to be joined and parsed again by a shell, as ssh does.
set -eu
prefix="${FERRY_CLUSTER_PREFIX:-ferry}"
[ $# -ge 2 ] || { echo "cluster_rsh.sh: usage: cluster_rsh.sh HOST COMMAND..." >&2; exit 2; }
host="$1"; shift
case "$host" in
  "$prefix"-h[0-9]*) ns="$host" ;;
  [0-9]*.[0-9]*.[0-9]*.[0-9]*) ns="$prefix-h${host##*.}" ;;
  *) echo "cluster_rsh.sh: '$host' is not a host of cluster $prefix" >&2; exit 255 ;;
esac
ip netns list | awk '{print $1}' | grep -qFx "$ns" || { echo "cluster_rsh.sh: no namespace $ns for host '$host'" >&2; exit 255; }
# The host's own host name (a UTS namespace), as on a separate machine.
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$ns" "$*"
