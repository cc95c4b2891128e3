#!/usr/bin/env python3
"""Table (markdown) and plot (gnuplot, PNG) of bench/compression_training results.csv.

   bench/compression_training/report.py [results_dir [speed_dir]]
Writes results_dir/table.md, results_dir/plot.dat and results_dir/compression_training.png.
With speed_dir (runs of the same names behind the communication-bound link), accuracy comes
from results_dir and samples/s, x speed and comm wait from the run of the same name in
speed_dir; results_dir's own samples/s is then shown as the link-free (compute) rate.
"""
import csv, os, subprocess, sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results")
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
speed = {}
if len(sys.argv) > 2:
    for r in csv.DictReader(open(os.path.join(sys.argv[2], "results.csv"))):
        speed[(r["model"], r["name"])] = r
    for r in rows:
        s = speed.get((r["model"], r["name"]))
        r["compute_sps"] = r["samples_per_s"]
        r["samples_per_s"] = s["samples_per_s"] if s else "nan"
        r["comm_wait_fraction"] = s["comm_wait_fraction"] if s else "nan"
        r["link"] = s["link"] if s else "?"
lines = ["| model | codec | epochs | iterations | test acc % | Δ acc (points) | samples/s | x speed | MB sent/worker | x bytes | comm wait | within 1.5 |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
if speed:
    lines = ["| model | codec | epochs | iterations | test acc % | Δ acc (points) | samples/s no link | samples/s on link | x speed on link | MB sent/worker | x bytes | comm wait on link | within 1.5 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
dat = []
for model in dict.fromkeys(r["model"] for r in rows):
    mine = [r for r in rows if r["model"] == model]
    base = next((r for r in mine if r["name"] == "none"), None)
    for r in mine:
        acc, sps, b = 100 * float(r["test_acc"]), float(r["samples_per_s"]), float(r["bytes_sent_per_worker"])
        if base:
            bacc, bsps, bb = 100 * float(base["test_acc"]), float(base["samples_per_s"]), float(base["bytes_sent_per_worker"])
            d, xs, xb = acc - bacc, sps / bsps, bb / b
            ok = "—" if r is base else ("yes" if d >= -1.5 else "**no**")
            dstr, xsstr, xbstr = f"{d:+.2f}", f"{xs:.2f}", f"{xb:.1f}"
        else:
            ok = dstr = xsstr = xbstr = "?"
            xs = 0
        extra = f" ({r['extra']})" if r["extra"] else ""
        compute = f"{float(r['compute_sps']):.0f} | " if speed else ""
        probed = sps == sps  # NaN: no speed run of this name
        spsstr = f"{sps:.0f}" if probed else "—"
        waitstr = f"{100 * float(r['comm_wait_fraction']):.0f} %" if probed else "—"
        if not probed:
            xsstr = "—"
        lines.append(f"| {model} | `{r['codec']}`{extra} | {r['epochs']} | {r['iterations']} | {acc:.2f} | {dstr} | {compute}{spsstr} | "
                     f"{xsstr} | {b / 1e6:.1f} | {xbstr} | {waitstr} | {ok} |")
        dat.append(f'"{model} {r["name"]}" {acc:.3f} {sps:.2f}')
open(os.path.join(out, "table.md"), "w").write("\n".join(lines) + "\n")
open(os.path.join(out, "plot.dat"), "w").write("\n".join(dat) + "\n")
png = os.path.join(out, "compression_training.png")
gp = f"""
set terminal pngcairo noenhanced size 1100,520 font ',10'
set output '{png}'
set multiplot layout 1,2 title 'ferry S-SGD with gradient codecs (4 workers, 1 PS, emulated link)'
set style data histogram; set style fill solid 0.8 border -1; set boxwidth 0.8
set xtics rotate by -45 scale 0; set grid ytics; unset key
set ylabel 'final test accuracy (%)'; set yrange [0:100]
plot '{os.path.join(out, "plot.dat")}' using 2:xtic(1) lc rgb '#3a7bd5'
set ylabel 'samples/s'; set yrange [0:*]
plot '{os.path.join(out, "plot.dat")}' using 3:xtic(1) lc rgb '#d57b3a'
unset multiplot
"""
subprocess.run(["gnuplot"], input=gp, text=True, check=True)
print(open(os.path.join(out, "table.md")).read())
print("wrote", png)
