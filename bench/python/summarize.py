#!/usr/bin/python3
"""bench/python/run.sh's summary: RUNS/*.json -> OUT/python.{csv,json,png} and the Markdown tables
of bench/RESULTS.md on stdout. Usage: summarize.py RUNS OUT LINK TARGET"""
import csv
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

runs, out, link, target = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
rows = []
for path in sorted(glob.glob(os.path.join(runs, "*.json")), key=os.path.getmtime):  # the run's order
    with open(path) as f:
        d = json.load(f)
    with open(path[:-len(".json")] + ".section") as f:
        d["section"] = f.read().strip()
    m = re.match(r"(.*)-(\d+)$", d["label"])
    d["config"], d["rep"] = (m.group(1), int(m.group(2))) if m else (d["label"], 1)
    d["wait_frac"] = (d["comm_wait_s"] / d["train_s"]) if d.get("comm_wait_s") is not None else None
    rows.append(d)

os.makedirs(out, exist_ok=True)
fields = ["section", "config", "rep", "model", "system", "algo", "codec", "steps", "samples_per_s", "wait_frac",
          "final_acc", "time_to_target_s"]
with open(os.path.join(out, "python.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)


def median(config, key="samples_per_s"):
    v = [r[key] for r in rows if r["config"] == config]
    return statistics.median(v) if v else None


summary = {"link": link, "target": target, "nolink": {}, "link_runs": []}
print("| model | ferry from Python (ssgd) | PyTorch DDP (gloo) | ferry / DDP | `ferry train` (C++) | Python / C++ |")
print("|---|---:|---:|---:|---:|---:|")
for model in ("cnn", "resnet18"):
    fp, dd, cx = median(f"{model}-ferry-py-ssgd"), median(f"{model}-ddp"), median(f"{model}-ferry-train-ssgd")
    if fp is None or dd is None:
        continue
    pairs = [r["samples_per_s"] for r in rows if r["config"] == f"{model}-ferry-py-ssgd"]
    summary["nolink"][model] = {"ferry_py": fp, "ddp": dd, "ferry_py_over_ddp": fp / dd, "ferry_train": cx,
                                "py_over_cxx": fp / cx if cx else None, "reps": len(pairs)}
    print(f"| {model} | {fp:.0f} | {dd:.0f} | **{fp / dd:.2f}** | {cx:.0f} | **{fp / cx:.2f}** |" if cx else
          f"| {model} | {fp:.0f} | {dd:.0f} | **{fp / dd:.2f}** | - | - |")

print()
print(f"| at {link} (cnn, 1 epoch) | samples/s | vs DDP | comm wait | time to {target:.0%} (s) | final accuracy |")
print("|---|---:|---:|---:|---:|---:|")
linked = [r for r in rows if r["section"] == "link"]
ddp = next((r for r in linked if r["config"] == "link-ddp"), None)
for r in linked:
    ratio = r["samples_per_s"] / ddp["samples_per_s"] if ddp else None
    wait = f"{r['wait_frac']:.0%}" if r["wait_frac"] is not None else "-"
    tt = f"{r['time_to_target_s']:.1f}" if r["time_to_target_s"] is not None else "not reached"
    name = r["config"].replace("link-", "")
    if r.get("momentum", 0.9) != 0.9:
        name += f" (momentum {r['momentum']:g}, lr {r['lr']:g})"
    summary["link_runs"].append({"config": name, "run": r["config"], "codec": r["codec"], "samples_per_s": r["samples_per_s"],
                                 "vs_ddp": ratio, "wait_frac": r["wait_frac"],
                                 "time_to_target_s": r["time_to_target_s"], "final_acc": r["final_acc"]})
    print(f"| {name} (`{r['codec']}`) | {r['samples_per_s']:.0f} | {ratio:.2f} | {wait} | {tt} | {r['final_acc']:.4f} |")
with open(os.path.join(out, "python.json"), "w") as f:
    json.dump(summary, f, indent=1)

if shutil.which("gnuplot"):
    dat = os.path.join(out, ".plot")
    os.makedirs(dat, exist_ok=True)
    with open(os.path.join(dat, "bars.dat"), "w") as f:
        for r in summary["link_runs"]:
            f.write(f"{r['run'].replace('link-', '')} {r['samples_per_s']:.1f}\n")
    curves = []
    for r in linked:
        p = os.path.join(dat, r["config"] + ".dat")
        with open(p, "w") as f:
            for c in r["curve"]:
                f.write(f"{c['train_s']:.3f} {c['acc']:.4f}\n")
        curves.append(f"'{p}' using 1:2 with linespoints title '{r['config'].replace('link-', '')}'")
    script = f"""set terminal pngcairo size 1200,450 noenhanced
set output '{os.path.join(out, "python.png")}'
set multiplot layout 1,2 title 'cnn, 4 workers, batch 64, link {link}'
set style fill solid 0.6
set boxwidth 0.6
set ylabel 'samples/s'
set yrange [0:*]
set xtics rotate by -30
plot '{os.path.join(dat, "bars.dat")}' using 0:2:xtic(1) with boxes notitle
set xtics norotate
set xlabel 'training seconds'
set ylabel 'test accuracy (first 1000 items)'
set yrange [0.5:0.95]
set key bottom right
plot {", ".join(curves)}
unset multiplot
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    shutil.rmtree(dat)
