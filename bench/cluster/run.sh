#!/usr/bin/env bash
# ferry's link emulator against the kernel: the same `ferry train` run on the namespace cluster
# (scripts/cluster.sh: tbf-shaped veth links, TCP, `--link none`) and on one host through the
# emulator (`--link RATE`, zero emulated latency), for cnn and resnet20, allreduce (4 workers on 4
# hosts) and the parameter server (4 workers + 1 server on 5 hosts), at 100 Mbps, 300 Mbps and
# 1 Gbps. For allreduce the kernel runs twice: with MPI_Allreduce (`--link none`, what a cluster
# user runs) and with ferry's own ring unpaced (what the emulator paces). The runs of a set follow
# each other; every rank has one libtorch thread and sleeps
# while it waits for MPI (FERRY_MPI_WAIT=sleep), on the cluster and on one host alike.
#
# Usage: bench/cluster/run.sh [OUT=bench/cluster/results] [STEPS=40]
# Env: FERRY (binary, default build/default/apps/ferry), MODELS, TOPOLOGIES, RATES (Mbit/s).
# Writes OUT/results.csv (one row per run) and, through report.py, OUT/summary.{csv,md,json} and
# OUT/emulator_vs_kernel.png. Needs root (network namespaces); the cluster is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-bench/cluster/results}"
steps="${2:-40}"
ferry="${FERRY:-build/default/apps/ferry}"
[ -x "$ferry" ] || bash scripts/build.sh
export FERRY_CLUSTER_PREFIX=fbench FERRY_MPI_WAIT=sleep OMP_NUM_THREADS=1
trap 'scripts/cluster.sh down >/dev/null 2>&1 || true' EXIT
mkdir -p "$out/runs"
csv="$out/results.csv"
echo "model,topology,rate_mbps,mode,samples_per_s,comm_wait_fraction,bytes_sent_per_worker,wall_s" >"$csv"
field() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
record() {  # model topology rate mode dir
  local s="$5/summary.json"
  echo "$1,$2,$3,$4,$(field "$s" samples_per_s),$(field "$s" comm_wait_fraction),$(field "$s" bytes_sent_per_worker),$(field "$s" wall_s)" >>"$csv"
}
for model in ${MODELS:-cnn resnet20}; do
  for topo in ${TOPOLOGIES:-allreduce ps}; do
    if [ "$topo" = ps ]; then hosts=5; flags=(--topology ps --servers 1); else hosts=4; flags=(--topology allreduce); fi
    for rate in ${RATES:-100 300 1000}; do
      run=(train --algo ssgd "${flags[@]}" --np 4 --model "$model" --batch 32 --max-steps "$steps" --threads 1
           --seed 1 --test-limit 200 --no-progress)
      name="${model}_${topo}_${rate}"
      echo "== $name: kernel (cluster of $hosts hosts, tbf ${rate}mbit)" >&2
      scripts/cluster.sh down >/dev/null 2>&1 || true
      scripts/cluster.sh up "$hosts" --rate "${rate}mbit" >/dev/null
      scripts/cluster.sh mpirun -np "$hosts" -- "$ferry" "${run[@]}" --link none --out "$out/runs/$name-kernel" >/dev/null
      record "$model" "$topo" "$rate" kernel "$out/runs/$name-kernel"
      if [ "$topo" = allreduce ]; then
        # The emulator paces ferry's own ring (reduce-scatter + allgather over point-to-point
        # messages); --link none uses MPI_Allreduce. The same ring, unpaced (a link too fast to
        # matter), over the kernel's links is the like-for-like reference.
        echo "== $name: kernel, ferry's ring (--link 100000Gbps)" >&2
        scripts/cluster.sh mpirun -np "$hosts" -- "$ferry" "${run[@]}" --link 100000Gbps --out "$out/runs/$name-kernel-ring" >/dev/null
        record "$model" "$topo" "$rate" kernel-ring "$out/runs/$name-kernel-ring"
      fi
      scripts/cluster.sh down >/dev/null
      echo "== $name: emulator (one host, --link ${rate}Mbps)" >&2
      "$ferry" "${run[@]}" --link "${rate}Mbps" --out "$out/runs/$name-emulator" >/dev/null
      record "$model" "$topo" "$rate" emulator "$out/runs/$name-emulator"
    done
  done
done
/usr/bin/python3 bench/cluster/report.py "$out"
