#!/usr/bin/env python3
"""Pairs the kernel and emulator rows of bench/cluster/run.sh's results.csv: samples/s and
comm_wait_fraction side by side, the emulator's samples/s over the kernel's, and the plot."""
import csv
import json
import os
import subprocess
import sys

out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
pairs = {}
for r in rows:
    pairs.setdefault((r["model"], r["topology"], int(r["rate_mbps"])), {})[r["mode"]] = r
summary = []
for (model, topo, rate), p in sorted(pairs.items()):
    if "kernel" not in p or "emulator" not in p:
        continue
    # The like-for-like kernel run: the same collective algorithm as the emulator's (ferry's ring
    # for allreduce); MPI_Allreduce's own run is reported beside it.
    k = p.get("kernel-ring", p["kernel"])
    e = p["emulator"]
    ks, es = float(k["samples_per_s"]), float(e["samples_per_s"])
    summary.append({
        "model": model, "topology": topo, "rate_mbps": rate,
        "kernel_samples_per_s": ks, "emulator_samples_per_s": es, "emulator_over_kernel": es / ks,
        "kernel_comm_wait": float(k["comm_wait_fraction"]), "emulator_comm_wait": float(e["comm_wait_fraction"]),
        "kernel_mpi_allreduce_samples_per_s": float(p["kernel"]["samples_per_s"]) if "kernel-ring" in p else float("nan"),
        "bytes_sent_per_worker": float(k["bytes_sent_per_worker"]),
    })
keys = list(summary[0].keys()) if summary else []
with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=keys)
    w.writeheader()
    w.writerows(summary)
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
md = ["| model | topology | rate | kernel samples/s | emulator samples/s | emulator / kernel | kernel comm wait % | emulator comm wait % | kernel, MPI_Allreduce samples/s |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
for s in summary:
    md.append(f"| {s['model']} | {s['topology']} | {s['rate_mbps']} Mbps | {s['kernel_samples_per_s']:.0f} | "
              f"{s['emulator_samples_per_s']:.0f} | {s['emulator_over_kernel']:.3f} | {100 * s['kernel_comm_wait']:.0f} | "
              f"{100 * s['emulator_comm_wait']:.0f} | "
              + ("" if s["kernel_mpi_allreduce_samples_per_s"] != s["kernel_mpi_allreduce_samples_per_s"]
                 else f"{s['kernel_mpi_allreduce_samples_per_s']:.0f}") + " |")
errs = sorted(abs(s["emulator_over_kernel"] - 1) for s in summary)
if errs:
    md.append("")
    md.append(f"|emulator/kernel − 1|: median {100 * errs[len(errs) // 2]:.1f} %, worst {100 * errs[-1]:.1f} % over {len(errs)} pairs")
open(os.path.join(out, "summary.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
dat = os.path.join(out, "ratio.dat")
with open(dat, "w") as f:
    for i, s in enumerate(summary):
        f.write(f"{i} {s['model']}/{s['topology']}/{s['rate_mbps']} {s['emulator_over_kernel']:.4f}\n")
gp = f"""set terminal pngcairo size 1000,500
set output '{out}/emulator_vs_kernel.png'
set title 'ferry link emulator vs kernel-shaped namespace cluster (samples/s ratio)'
set style fill solid 0.6
set boxwidth 0.7
set xtics rotate by -35
set yrange [0.4:1.6]
set bmargin 8
set ylabel 'emulator / kernel samples/s'
unset key
plot '{dat}' using 1:3:xtic(2) with boxes, 1.15 with lines dashtype 2 lc rgb '#c00000', 0.85 with lines dashtype 2 lc rgb '#c00000', 1 with lines lc rgb '#000000'
"""
subprocess.run(["gnuplot"], input=gp, text=True, check=False)
