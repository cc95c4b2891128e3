#!/usr/bin/python3
"""Summarises bench/diloco/run.sh: DIR/quality/<config>/seed<s>/ and DIR/time/<config>/ ->
DIR/diloco.csv, DIR/diloco.json, DIR/diloco.md and DIR/ppl_vs_iteration.png (gnuplot).

  report.py DIR

Quality (no link, every seed): final test perplexity (the model after finish(): DiLoCo's global
weights), mean over seeds with its spread (min-max and the sample standard deviation), the ratio
of the means to S-SGD's and the per-seed ratios (same seed, same warm start, same data order) with
their range; bytes sent per worker over the whole run and over the iterations after the warm start
(which DiLoCo's warm start shares with S-SGD bit for bit), and S-SGD's bytes over them.
Wall time (LINK, one seed, no warm start): seconds per iteration at steady state and its ratio to
S-SGD's, and the projected ratio of a whole run, (W t_ssgd + (T - W) t) / (T t_ssgd) for T
iterations with a warm start of W at S-SGD's iteration time. Every configuration's recipe (algo,
optimizer, lr, weight decay, schedule, codec, as summary.json records them) is in the table.
The checks of issue 54: DiLoCo (H >= 50, 4 bits) within 2 % of S-SGD's perplexity, >= 50x fewer
bytes, <= 0.5x wall time; Streaming DiLoCo within 3 %.
"""
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys


def read_json(path):
    with open(path) as f:
        return json.load(f)


def load_run(d):
    """summary.json, rank 0's bytes sent per iteration and the perplexity curve of one run."""
    summary = read_json(os.path.join(d, "summary.json"))
    sent, curve = {}, []
    metrics = os.path.join(d, "metrics.jsonl")
    if os.path.exists(metrics):
        with open(metrics) as f:
            for line in f:
                rec = json.loads(line)
                if "test_loss" in rec and rec.get("iter") is not None:
                    curve.append((rec["iter"] + 1, math.exp(rec["test_loss"])))
                elif "bytes_sent" in rec:
                    sent[rec["iter"]] = rec["bytes_sent"]
    curve.append((summary["iterations"], summary["test_perplexity"]))
    return {"summary": summary, "sent": sent, "curve": curve}


def bytes_after(seeds, warm):
    """Mean over the seeds of the bytes rank 0 sent in iterations warm..end: its total less what it
    had sent by iteration warm - 1 (summary.json's bytes per worker are the workers' mean)."""
    return statistics.mean(r["summary"]["bytes_sent_per_worker"] - (r["sent"].get(warm - 1, 0) if warm else 0)
                           for r in seeds.values())


def warm_start_of(algo):
    for kv in algo.partition(":")[2].split(","):
        k, _, v = kv.partition("=")
        if k == "warm_start_steps":
            return int(v)
    return 0


def recipe(s):
    return "`%s` · `%s` lr %g wd %g · `%s` · codec `%s`" % (
        s["algo"], s.get("optimizer", "?"), s["lr"], s.get("weight_decay", float("nan")),
        s.get("lr_schedule", "?"), s["codec"])


def main():
    out = sys.argv[1]
    order = ["ssgd"]
    quality, timing = {}, {}
    qdir, tdir = os.path.join(out, "quality"), os.path.join(out, "time")
    for name in sorted(os.listdir(qdir)) if os.path.isdir(qdir) else []:
        seeds = {}
        for sd in sorted(os.listdir(os.path.join(qdir, name))):
            d = os.path.join(qdir, name, sd)
            if os.path.isfile(os.path.join(d, "summary.json")):
                seeds[sd] = load_run(d)
        if seeds:
            quality[name] = seeds
    for name in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
        d = os.path.join(tdir, name)
        if os.path.isfile(os.path.join(d, "summary.json")):
            timing[name] = load_run(d)["summary"]
    if "ssgd" not in quality:
        sys.exit("report.py: no quality run of ssgd in " + out + " (every ratio is to it)")
    base = quality["ssgd"]
    base_ppl = statistics.mean(r["summary"]["test_perplexity"] for r in base.values())
    base_t = timing["ssgd"]["wall_s"] / timing["ssgd"]["iterations"] if "ssgd" in timing else None

    rows = []
    for name in sorted(quality, key=lambda n: (order.index(n) if n in order else 1, n)):
        seeds = quality[name]
        ppl = [r["summary"]["test_perplexity"] for r in seeds.values()]
        paired = [r["summary"]["test_perplexity"] / base[sd]["summary"]["test_perplexity"]
                  for sd, r in seeds.items() if sd in base]
        first = next(iter(seeds.values()))
        s = first["summary"]
        steps = s["iterations"]
        warm = warm_start_of(s["algo"])
        total = bytes_after(seeds, 0)
        base_total = bytes_after(base, 0)
        after, base_after = bytes_after(seeds, warm), bytes_after(base, warm)  # iterations W..T of both
        row = {
            "config": name, "recipe": recipe(s), "seeds": len(ppl), "iterations": steps, "warm_start": warm,
            "ppl_mean": statistics.mean(ppl), "ppl_min": min(ppl), "ppl_max": max(ppl),
            "ppl_std": statistics.stdev(ppl) if len(ppl) > 1 else 0.0,
            "ppl_vs_ssgd": statistics.mean(ppl) / base_ppl,
            "paired_ratio_min": min(paired) if paired else None, "paired_ratio_max": max(paired) if paired else None,
            "mb_per_worker": total / 1e6, "bytes_reduction": base_total / max(total, 1.0),
            "mb_after_warm": after / 1e6, "bytes_reduction_after_warm": base_after / max(after, 1.0),
            "s_per_iter_at_link": None, "time_vs_ssgd": None, "projected_run_time_vs_ssgd": None,
        }
        if name in timing and base_t:
            t = timing[name]["wall_s"] / timing[name]["iterations"]
            row["s_per_iter_at_link"] = t
            row["time_vs_ssgd"] = t / base_t
            row["projected_run_time_vs_ssgd"] = (warm * base_t + (steps - warm) * t) / (steps * base_t)
        rows.append(row)

    with open(os.path.join(out, "diloco.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    bench = read_json(os.path.join(out, "bench.json")) if os.path.exists(os.path.join(out, "bench.json")) else {}
    with open(os.path.join(out, "diloco.json"), "w") as f:
        json.dump({"bench": bench, "ssgd_ppl_mean": base_ppl, "rows": rows,
                   "curves": {n: {sd: r["curve"] for sd, r in seeds.items()} for n, seeds in quality.items()}},
                  f, indent=1)

    def fmt(v, spec):
        return "—" if v is None else spec % v
    link = bench.get("link", "the link")
    lines = ["| config | recipe | final ppl, mean (min–max, sd) | ÷ S-SGD (per seed) | MB/worker (after warm start) | "
             "bytes ÷ S-SGD's (after warm start) | s/it at %s | time ÷ S-SGD (whole run) |" % link,
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append("| %s | %s | %.2f (%.2f–%.2f, %.2f) | %.3f (%s–%s) | %.0f (%.0f) | %.0f× (%.0f×) | %s | %s (%s) |" % (
            r["config"], r["recipe"], r["ppl_mean"], r["ppl_min"], r["ppl_max"], r["ppl_std"], r["ppl_vs_ssgd"],
            fmt(r["paired_ratio_min"], "%.3f"), fmt(r["paired_ratio_max"], "%.3f"), r["mb_per_worker"],
            r["mb_after_warm"], r["bytes_reduction"], r["bytes_reduction_after_warm"],
            fmt(r["s_per_iter_at_link"], "%.2f"), fmt(r["time_vs_ssgd"], "%.2f"),
            fmt(r["projected_run_time_vs_ssgd"], "%.2f")))
    checks = []
    for r in rows:
        if r["config"].startswith("diloco") and r["config"].endswith("4bit"):
            checks.append("- %s: perplexity %+.1f %% (goal within 2 %%), bytes %.0f× fewer after the warm start "
                          "(%.0f× in all; goal ≥ 50×), wall time %s× S-SGD's (goal ≤ 0.5×)" % (
                              r["config"], 100 * (r["ppl_vs_ssgd"] - 1), r["bytes_reduction_after_warm"],
                              r["bytes_reduction"], fmt(r["projected_run_time_vs_ssgd"], "%.2f")))
        if r["config"].startswith("streaming"):
            checks.append("- %s: perplexity %+.1f %% (goal within 3 %%)" % (r["config"], 100 * (r["ppl_vs_ssgd"] - 1)))
    md = "\n".join(lines) + "\n\n" + "\n".join(checks) + "\n"
    with open(os.path.join(out, "diloco.md"), "w") as f:
        f.write(md)
    print(md)

    dat = os.path.join(out, "curves.dat")
    with open(dat, "w") as f:
        for name, seeds in quality.items():
            f.write('"%s"\n' % name)
            by_iter = {}
            for r in seeds.values():
                for it, ppl in r["curve"]:
                    by_iter.setdefault(it, []).append(ppl)
            for it in sorted(by_iter):
                f.write("%d %g\n" % (it, statistics.mean(by_iter[it])))
            f.write("\n\n")
    if not shutil.which("gnuplot"):
        return
    gp = os.path.join(out, "ppl_vs_iteration.gp")
    with open(gp, "w") as f:
        f.write('set terminal pngcairo size 900,560\nset output "%s"\n' % os.path.join(out, "ppl_vs_iteration.png"))
        f.write('set xlabel "iteration"\nset ylabel "test perplexity (mean of the seeds)"\nset grid\n'
                'set logscale y\nset key outside right\n')
        f.write('plot for [i=0:%d] "%s" index i using 1:2 with linespoints title columnheader(1)\n'
                % (len(quality) - 1, dat))
    subprocess.run(["gnuplot", gp], check=False)


if __name__ == "__main__":
    main()
