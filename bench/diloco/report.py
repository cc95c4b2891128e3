#!/usr/bin/python3
"""Summarises bench/diloco/run.sh: DIR/<run>/summary.json and metrics.jsonl -> DIR/diloco.csv,
DIR/diloco.json, DIR/diloco.md, DIR/ppl_vs_time.png and DIR/ppl_vs_bytes.png (gnuplot).

  report.py DIR

Per run: final test perplexity (the model after finish(): DiLoCo's global weights), its ratio to
S-SGD's, bytes sent per worker and S-SGD's bytes over them, wall time, and the time at which the
run's test perplexity first reached S-SGD's final one (the evaluations every --eval-every
iterations and the final one), as a fraction of S-SGD's wall time. The curves: test perplexity at
each evaluation against training time and against rank 0's bytes sent at that iteration.
"""
import csv
import json
import math
import os
import shutil
import subprocess
import sys


def load(run_dir):
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    sent, points = {}, []
    metrics = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(metrics):
        with open(metrics) as f:
            for line in f:
                rec = json.loads(line)
                if "test_loss" in rec:
                    points.append((rec.get("iter"), rec["t"], math.exp(rec["test_loss"])))
                elif "bytes_sent" in rec:
                    sent[rec["iter"]] = rec["bytes_sent"]
    curve = [(t, sent.get(it, 0), ppl) for it, t, ppl in points if it is not None]
    curve.append((summary["wall_s"], summary["bytes_sent_per_worker"], summary["test_perplexity"]))
    return summary, curve


def main():
    out = sys.argv[1]
    runs = {}
    for name in sorted(os.listdir(out)):
        d = os.path.join(out, name)
        if os.path.isfile(os.path.join(d, "summary.json")):
            runs[name] = load(d)
    if "ssgd" not in runs:
        sys.exit("report.py: no ssgd run in " + out + " (every ratio is to it)")
    base, _ = runs["ssgd"]
    target = base["test_perplexity"]
    rows = []
    for name, (s, curve) in runs.items():
        reached = next((t for t, _, ppl in curve if ppl <= target), None)
        rows.append({
            "run": name, "algo": s["algo"], "codec": s["codec"], "iterations": s["iterations"],
            "final_ppl": s["test_perplexity"], "ppl_vs_ssgd": s["test_perplexity"] / target,
            "mb_sent_per_worker": s["bytes_sent_per_worker"] / 1e6,
            "bytes_reduction_vs_ssgd": base["bytes_sent_per_worker"] / max(s["bytes_sent_per_worker"], 1.0),
            "wall_s": s["wall_s"], "comm_wait_pct": 100 * s["comm_wait_fraction"],
            "time_to_ssgd_ppl_s": reached,
            "time_to_ssgd_ppl_vs_ssgd_wall": None if reached is None else reached / base["wall_s"],
        })
    order = ["ssgd", "localsgd", "ssdsgd", "cdsgd"]
    rows.sort(key=lambda r: (order.index(r["run"]) if r["run"] in order else len(order), r["run"]))
    with open(os.path.join(out, "diloco.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "diloco.json"), "w") as f:
        json.dump({"target_ppl": target, "rows": rows,
                   "curves": {n: c for n, (_, c) in runs.items()}}, f, indent=1)

    def fmt(v, spec):
        return "not reached" if v is None else spec % v
    lines = ["| run | algo | codec | final ppl | ppl / S-SGD | MB sent/worker | bytes ÷ S-SGD's | wall s | "
             "comm wait % | time to S-SGD's ppl (s) | ÷ S-SGD's wall |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append("| %s | `%s` | `%s` | %.2f | %.3f | %.1f | %.0f× less | %.0f | %.0f | %s | %s |" % (
            r["run"], r["algo"], r["codec"], r["final_ppl"], r["ppl_vs_ssgd"], r["mb_sent_per_worker"],
            r["bytes_reduction_vs_ssgd"], r["wall_s"], r["comm_wait_pct"],
            fmt(r["time_to_ssgd_ppl_s"], "%.0f"), fmt(r["time_to_ssgd_ppl_vs_ssgd_wall"], "%.2f")))
    md = "\n".join(lines) + "\n"
    with open(os.path.join(out, "diloco.md"), "w") as f:
        f.write(md)
    print(md)

    dat = os.path.join(out, "curves.dat")
    with open(dat, "w") as f:
        for name, (_, curve) in runs.items():
            f.write('"%s"\n' % name)
            for t, b, ppl in curve:
                f.write("%g %g %g\n" % (t, b / 1e6, ppl))
            f.write("\n\n")
    if not shutil.which("gnuplot"):
        return
    for what, col, xlabel in (("time", 1, "training time (s)"), ("bytes", 2, "MB sent per worker (log)")):
        gp = os.path.join(out, "ppl_vs_%s.gp" % what)
        with open(gp, "w") as f:
            f.write('set terminal pngcairo size 900,560\nset output "%s"\n' % os.path.join(out, "ppl_vs_%s.png" % what))
            f.write('set xlabel "%s"\nset ylabel "test perplexity"\nset grid\nset key outside right\n' % xlabel)
            if what == "bytes":
                f.write("set logscale x\n")
            f.write('plot for [i=0:%d] "%s" index i using %d:3 with linespoints title columnheader(1)\n'
                    % (len(runs) - 1, dat, col))
        subprocess.run(["gnuplot", gp], check=False)


if __name__ == "__main__":
    main()
