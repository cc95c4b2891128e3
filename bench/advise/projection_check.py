#!/usr/bin/env python3
"""Checks `ferry advise` as a user reads it: for every measured run, the projection table's
entry for the run's configuration (a `ferry advise --model ... --workers ... --steps N` call
with the run's flags, its row of advise.csv) against the run's samples/s, beside the
`--validate` prediction of the same run. Both should be one number (docs/advise.md).

  FERRY=build/default/apps/ferry /usr/bin/python3 bench/advise/projection_check.py \
      RESULTS_DIR RUNS_ROOT... [-- EXTRA ferry advise FLAGS]

RESULTS_DIR gets projection_check.{csv,md} and projection_check_runs/ (one advise output per
run, deleted at the end); validation.csv of RESULTS_DIR (the --validate report of the same runs)
gives the validate column. Runs across the namespace cluster (kernel_rate) are left out: their
link is the kernel's, not a flag of ferry advise.
"""
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys


def runs_under(root):
    for d, _, files in os.walk(root):
        if "summary.json" in files:
            yield d


def advise_flags(summary, side):
    link = summary["link"]
    if link == "none":
        bw, lat = "1000Gbps", "0us"  # no link: compute-only, its row does not read it
    else:
        bw, lat = [x.replace(" ", "") for x in link.split(",")]
    steps = summary["iterations"] - summary.get("resumed_from", 0)
    flags = ["--model", summary["model"], "--workers", str(summary["np"]),
             "--servers", str(max(1, summary["servers"])), "--batch", str(summary["batch"]),
             "--bandwidth", bw, "--latency", lat, "--codecs", summary["codec"], "--steps", str(steps)]
    for key, flag in [("warmup_steps", "--warmup-steps"), ("delay_steps", "--delay-steps"),
                      ("correction_steps", "--correction-steps"), ("sync_every", "--sync-every"),
                      ("post_local", "--post-local"), ("bucket_mb", "--bucket-mb")]:
        if key in side:
            flags += [flag, str(side[key])]
    return flags


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if len(argv) < 2:
        sys.exit(__doc__)
    results, roots = argv[0], argv[1:]
    ferry = os.environ.get("FERRY", "build/default/apps/ferry").split()
    validate = {}
    vpath = os.path.join(results, "validation.csv")
    if os.path.exists(vpath):
        with open(vpath) as f:
            for row in csv.DictReader(f):
                validate[row["run"]] = float(row["predicted samples/s"])
    work = os.path.join(results, "projection_check_runs")
    rows = []
    for root in roots:
        for d in sorted(runs_under(root)):
            with open(os.path.join(d, "summary.json")) as f:
                summary = json.load(f)
            side = {}
            if os.path.exists(os.path.join(d, "advise_run.json")):
                with open(os.path.join(d, "advise_run.json")) as f:
                    side = json.load(f)
            name = os.path.basename(d)
            if "kernel_rate" in side:
                print(f"{name}: left out (link shaped by the kernel)", file=sys.stderr)
                continue
            out = os.path.join(work, name)
            cmd = ferry + ["advise"] + advise_flags(summary, side) + extra + ["--out", out]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{name}: ferry advise failed: {proc.stderr.strip()}", file=sys.stderr)
                continue
            projected = None
            with open(os.path.join(out, "advise.csv")) as f:
                for r in csv.DictReader(f):
                    # The table names an algorithm, the summary its whole spec ("localsgd:sync_every=4,...").
                    if (r["algo"], r["topology"], r["codec"], int(r["workers"])) == (
                            summary["algo"].split(":")[0], summary["topology"], summary["codec"], summary["np"]):
                        projected = (float(r["samples_per_s"]), float(r["comm_fraction"]))
            if projected is None:
                print(f"{name}: no row of the table for {summary['algo']} {summary['topology']} {summary['codec']}",
                      file=sys.stderr)
                continue
            measured = summary["samples_per_s"]
            v = validate.get(name)
            rows.append({
                "set": side.get("set", ""), "run": name, "algo": summary["algo"], "topology": summary["topology"],
                "model": summary["model"], "np": summary["np"], "servers": summary["servers"],
                "link": summary["link"], "codec": summary["codec"].split(":")[0],
                "steps": summary["iterations"] - summary.get("resumed_from", 0),
                "measured": measured, "projection": projected[0],
                "projection_error": projected[0] / measured - 1,
                "validate": v, "validate_error": None if v is None else v / measured - 1,
                "measured_comm": summary.get("comm_wait_fraction", 0.0), "projection_comm": projected[1],
                "command": "ferry advise " + " ".join(advise_flags(summary, side) + extra),
            })
    shutil.rmtree(work, ignore_errors=True)
    keys = list(rows[0].keys()) if rows else []
    with open(os.path.join(results, "projection_check.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)

    def pct(x):
        return "" if x is None else f"{100 * x:+.1f}"

    md = ["| set | run | algo | topology | model | np | servers | link | codec | steps | measured samples/s | "
          "projection table | error % | --validate | error % | measured comm % | projected comm % |",
          "|---|---|---|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        md.append(f"| {r['set']} | {r['run']} | {r['algo']} | {r['topology']} | {r['model']} | {r['np']} | "
                  f"{r['servers']} | {r['link']} | {r['codec']} | {r['steps']} | {r['measured']:.0f} | "
                  f"{r['projection']:.0f} | {pct(r['projection_error'])} | "
                  f"{'' if r['validate'] is None else format(r['validate'], '.0f')} | {pct(r['validate_error'])} | "
                  f"{100 * r['measured_comm']:.0f} | {100 * r['projection_comm']:.0f} |")
    summary_lines = ["", "| set | runs | projection table: median \\|error\\| | worst | --validate: median \\|error\\| | "
                     "worst | largest \\|projection - validate\\| (whole samples/s) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for s in sorted({r["set"] for r in rows}) + ["all"]:
        sel = [r for r in rows if s == "all" or r["set"] == s]
        pe = [abs(r["projection_error"]) for r in sel]
        ve = [abs(r["validate_error"]) for r in sel if r["validate_error"] is not None]
        # --validate prints whole samples/s: compare the projection rounded the same way.
        gap = [abs(round(r["projection"]) / r["validate"] - 1) for r in sel if r["validate"]]
        line = (f"| {s or 'runs'} | {len(sel)} | {100 * statistics.median(pe):.1f} % | {100 * max(pe):.1f} % | "
                + (f"{100 * statistics.median(ve):.1f} % | {100 * max(ve):.1f} % | " if ve else "| | ")
                + (f"{100 * max(gap):.2f} % |" if gap else " |"))
        summary_lines.append(line)
    text = "\n".join(md + summary_lines) + "\n"
    with open(os.path.join(results, "projection_check.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
