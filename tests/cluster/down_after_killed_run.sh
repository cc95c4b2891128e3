#!/usr/bin/env bash
# `cluster.sh down` after a crash: the ranks and OpenMPI daemons of a training run across 3 hosts
# whose mpirun was just killed with SIGKILL, and a daemon that ignores SIGTERM, are ended; afterwards no namespace of the cluster,
# no /etc/netns entry and no process of it is left, the root namespace's interfaces and qdiscs
# are as before `up`, and a second `down` is fine. `up` on an existing cluster is refused and
# leaves it as it was.
# Usage: down_after_killed_run.sh FERRY
set -u
ferry="$1"
source "$(dirname "$0")/lib.sh"
cluster_test dn
root_state() { ip -o link show | awk -F': ' '{print $2}'; tc qdisc show; }
before=$(root_state)
cluster_up 3 --rate 300mbit --subnet 10.77.120.0/24

out=$("$cluster" up 3 2>&1); rc=$?
[ "$rc" -eq 1 ] && echo "$out" | grep -q "exists already" || { echo "FAIL: up on an existing cluster: rc $rc, $out"; exit 1; }
[ "$(ip netns list | grep -c "^$FERRY_CLUSTER_PREFIX-")" -eq 4 ] || { echo "FAIL: the refused up changed the cluster"; exit 1; }

export FERRY_RANK_DIR="$tmp/ranks"
mkdir -p "$FERRY_RANK_DIR"
"$cluster" mpirun -np 3 -- "$ferry" train --algo ssgd --topology ps --np 2 --servers 1 --model mlp --batch 32 \
  --epochs 100 --train-limit 2048 --test-limit 200 --threads 1 --no-progress --out "$tmp/out" >"$tmp/run.log" 2>&1 &
launcher=$!
# Not a job of this shell (no "Killed" notice when down ends it).
daemon=$("$cluster" exec 2 -- sh -c 'trap "" TERM; exec sleep 600' >/dev/null 2>&1 & echo $!)
for _ in $(seq 1 600); do
  [ -s "$tmp/out/metrics.jsonl" ] && [ "$(wc -l <"$tmp/out/metrics.jsonl")" -ge 2 ] && break
  kill -0 "$launcher" 2>/dev/null || { echo "FAIL: the run ended by itself"; cat "$tmp/run.log"; exit 1; }
  sleep 0.2
done
kill -9 "$launcher"
wait "$launcher" 2>/dev/null
pids=$(for i in 1 2 3; do ip netns pids "$FERRY_CLUSTER_PREFIX-h$i"; done | tr '\n' ' ')
ranks_left=0
for r in 0 1 2; do echo " $pids " | grep -q " $(cat "$FERRY_RANK_DIR/rank-$r.pid") " && ranks_left=$((ranks_left + 1)); done
echo "mpirun killed; on the hosts: $pids($ranks_left of 3 ranks, the SIGTERM-proof daemon $daemon)"
echo " $pids " | grep -q " $daemon " || { echo "FAIL: the daemon is not on host 2"; exit 1; }
"$cluster" status

start=$(date +%s.%N)
"$cluster" down || { echo "FAIL: down"; exit 1; }
echo "down took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
alive=""
for p in $pids; do
  s=$(ps -o stat= -p "$p" 2>/dev/null) && [ "${s#Z}" = "$s" ] && alive="$alive $p"
done
[ -z "$alive" ] || { echo "FAIL: processes alive after down:$alive"; exit 1; }
[ -z "$(ip netns list | grep "^$FERRY_CLUSTER_PREFIX-")" ] || { echo "FAIL: namespaces left: $(ip netns list)"; exit 1; }
! compgen -G "/etc/netns/$FERRY_CLUSTER_PREFIX-*" >/dev/null || { echo "FAIL: /etc/netns entries left"; exit 1; }
[ "$(root_state)" = "$before" ] || { echo "FAIL: the root namespace changed:"; diff <(echo "$before") <(root_state); exit 1; }
out=$("$cluster" down 2>&1) || { echo "FAIL: a second down: $out"; exit 1; }
echo "second down: $out"
"$cluster" status >/dev/null 2>&1 && { echo "FAIL: status says the cluster is up"; exit 1; }
echo "ok: no namespace, interface, qdisc or process left"
