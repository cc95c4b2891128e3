#!/usr/bin/env bash
# ferry advise on the SSD-SGD and CD-SGD papers' published setups (docs/advise.md, "The
# papers' setups"): the papers' models as profile files (bench/advise/profiles, sources
# inside), V100-class workers, the calibrated constants of this machine's software path.
#   FERRY=build/default/apps/ferry bash bench/advise/papers.sh [RESULTS_DIR]
set -euo pipefail
FERRY=${FERRY:-build/default/apps/ferry}
OUT=${1:-bench/advise/results}/papers
CAL=${CAL:-bench/advise/results/calibration.json}
mkdir -p "$OUT"
P=bench/advise/profiles
# SSD-SGD (Xu, Dong et al. 2020): MXNet parameter server, ResNets on CIFAR-10 and ImageNet; the
# abstract reports "up to 110 %" faster than S-SGD and gives no hardware: V100 workers, one
# server per 4 workers and 1-10 Gbps Ethernet are assumptions.
for m in resnet50_imagenet_v100 resnet20_cifar10_v100; do
  batch=32; [[ $m == resnet20* ]] && batch=128
  "$FERRY" advise --model "$P/$m.json" --device v100 --batch $batch --workers 4,8,16 --workers-per-server 4 \
    --bandwidth 1Gbps,10Gbps --latency 50us --codecs none,twobit:threshold=0.005 --calibration "$CAL" \
    --out "$OUT/ssdsgd_$m" >"$OUT/ssdsgd_$m.txt"
done
# CD-SGD (Yu, Dong et al. 2021): 16 GPUs, 56 Gbps (FDR InfiniBand), MXNet; end-to-end time 30 %
# less than 2-bit compression (S-SGD + twobit). 16 workers, 4 servers (one per 4-GPU node:
# assumed), V100 (assumed).
for m in resnet50_imagenet_v100 resnet20_cifar10_v100; do
  batch=32; [[ $m == resnet20* ]] && batch=128
  "$FERRY" advise --model "$P/$m.json" --device v100 --batch $batch --workers 16 --servers 4 \
    --bandwidth 56Gbps --latency 5us --codecs none,twobit:threshold=0.005 --calibration "$CAL" \
    --out "$OUT/cdsgd_$m" >"$OUT/cdsgd_$m.txt"
done
# The ratios the papers report, from the predictions.
/usr/bin/python3 - "$OUT" <<'PY'
import csv, sys, os
out = sys.argv[1]
def rows(d):
    return list(csv.DictReader(open(os.path.join(out, d, "advise.csv"))))
def sps(rs, algo, topo, coded, w, bw):
    for r in rs:
        if r["algo"] == algo and r["topology"] == topo and (r["codec"] != "none:ef=0") == coded \
           and int(r["workers"]) == w and abs(float(r["bandwidth_bytes_per_s"]) - bw) < 1:
            return float(r["samples_per_s"])
lines = ["| paper | model | workers | link | reported | ferry advise predicts |", "|---|---|---:|---|---|---|"]
for m in ["resnet50_imagenet_v100", "resnet20_cifar10_v100"]:
    rs = rows("ssdsgd_" + m)
    for w in (4, 8, 16):
        for bw, name in ((1.25e8, "1 Gbps"), (1.25e9, "10 Gbps")):
            r = sps(rs, "ssdsgd", "ps", False, w, bw) / sps(rs, "ssgd", "ps", False, w, bw)
            lines.append(f"| SSD-SGD | {m} | {w} | {name} | up to 2.10x S-SGD | ssdsgd {r:.2f}x ssgd (ps) |")
    rs = rows("cdsgd_" + m)
    c = sps(rs, "cdsgd", "ps", True, 16, 7e9); t = sps(rs, "ssgd", "ps", True, 16, 7e9)
    lines.append(f"| CD-SGD | {m} | 16 | 56 Gbps | time 30 % under S-SGD+2-bit (1.43x) | cdsgd {c/t:.2f}x ssgd+twobit (ps), "
                 f"{c/sps(rs, 'ssgd', 'ps', False, 16, 7e9):.2f}x ssgd |")
open(os.path.join(out, "papers.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
