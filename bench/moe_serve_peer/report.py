#!/usr/bin/python3
"""Merges bench/moe_serve_peer/run.sh's cells: DIR/cells/MODEL/CELL/rREP/serve_ENGINE.csv ->
DIR/peer.csv (medians over the repetitions), DIR/peer.md (ferry beside llama.cpp with ratios) and
DIR/peer.gp (gnuplot script drawing DIR/peer.png; run when gnuplot is on PATH).

  report.py DIR

Ratios are ferry / llama.cpp: above 1 for tokens/s and requests/s means ferry is faster; below 1 for
TTFT and TPOT means ferry answers sooner.
"""
import argparse
import csv
import glob
import os
import shutil
import statistics
import subprocess
import sys

ENGINES = ["ferry", "llama.cpp"]
METRICS = ["tokens_per_s", "requests_per_s", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
           "prompt_tokens"]
COUNTS = ["requests", "errors", "mismatched"]
KEY = ["model", "workload", "cell", "concurrency", "rate", "turn", "cache_prompt"]
FIELDS = KEY + ["engine", "reps"] + METRICS + COUNTS


def num(text):
    return float(text) if text not in ("", None) else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def f(v, spec=".1f"):
    return "–" if v is None else format(v, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def load(directory):
    """{key tuple: {engine: [rows of each repetition]}}, in the order the cells were run."""
    cells = {}
    for path in sorted(glob.glob(os.path.join(directory, "cells", "*", "*", "r*", "serve_*.csv"))):
        rep_dir = os.path.dirname(path)
        cell_dir = os.path.dirname(rep_dir)
        model = os.path.basename(os.path.dirname(cell_dir))
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                key = (model, r["workload"], os.path.basename(cell_dir), r["concurrency"], r["rate"], r["turn"],
                       r["cache_prompt"])
                cells.setdefault(key, {}).setdefault(r["label"], []).append(r)
    return cells


def order(key):
    model, workload, _, concurrency, rate, turn, cache = key
    return (model, ["closed", "rate", "chat"].index(workload) if workload in ("closed", "rate", "chat") else 9,
            cache or "", num(concurrency) or 0, num(rate) or 0, num(turn) if turn else 1e9)


def medians(cells):
    rows = []
    for key in sorted(cells, key=order):
        for engine, reps in sorted(cells[key].items(), key=lambda e: (e[0] not in ENGINES, e[0])):
            row = dict(zip(KEY, key), engine=engine, reps=len(reps))
            for m in METRICS:
                row[m] = median([num(r[m]) for r in reps])
            for c in COUNTS:
                row[c] = sum(int(num(r[c]) or 0) for r in reps)
            rows.append(row)
    return rows


def tables(rows):
    at = {(tuple(r[k] for k in KEY), r["engine"]): r for r in rows}
    keys = []
    for r in rows:
        k = tuple(r[k] for k in KEY)
        if k not in keys:
            keys.append(k)
    fe, ll = ENGINES

    def pair(k, m, spec=".1f"):
        a, b = at.get((k, fe), {}).get(m), at.get((k, ll), {}).get(m)
        return [f(a, spec), f(b, spec), f(ratio(a, b), ".2f")]

    def errs(k):
        return "/".join(str(at[(k, e)]["errors"] + at[(k, e)]["mismatched"]) if (k, e) in at else "–"
                        for e in ENGINES)

    md = ["# ferry moe serve beside llama-server", "",
          "Medians over the repetitions. Ratios are ferry / llama.cpp: tokens/s above 1 and TTFT, TPOT below 1 "
          "are ferry ahead. 'bad' counts failed requests plus requests whose token count was not max_tokens "
          "(ferry/llama.cpp, all repetitions).", ""]
    for model in dict.fromkeys(k[0] for k in keys):
        md += [f"## {model}", ""]
        closed = [k for k in keys if k[0] == model and k[1] == "closed"]
        if closed:
            md += ["### Closed loop", "",
                   "| clients | ferry tok/s | llama.cpp tok/s | ratio | ferry TTFT p50 ms | llama.cpp TTFT p50 ms | ratio "
                   "| TTFT p99 ratio | ferry TPOT p50 ms | llama.cpp TPOT p50 ms | ratio | TPOT p99 ratio | bad |",
                   "|---:|" + "---:|" * 12]
            for k in closed:
                md.append("| " + " | ".join([k[3]] + pair(k, "tokens_per_s") + pair(k, "ttft_p50_ms")
                                            + pair(k, "ttft_p99_ms")[2:] + pair(k, "tpot_p50_ms", ".2f")
                                            + pair(k, "tpot_p99_ms")[2:] + [errs(k)]) + " |")
            md.append("")
        rate = [k for k in keys if k[0] == model and k[1] == "rate"]
        if rate:
            md += ["### Open loop (Poisson arrivals)", "",
                   "| requests/s offered | ferry req/s | llama.cpp req/s | ferry tok/s | llama.cpp tok/s | ratio "
                   "| ferry TTFT p50 ms | llama.cpp TTFT p50 ms | ratio | TTFT p99 ratio | ferry TPOT p50 ms "
                   "| llama.cpp TPOT p50 ms | ratio | bad |",
                   "|---:|" + "---:|" * 13]
            for k in rate:
                md.append("| " + " | ".join([k[4]] + pair(k, "requests_per_s", ".3f")[:2] + pair(k, "tokens_per_s")
                                            + pair(k, "ttft_p50_ms") + pair(k, "ttft_p99_ms")[2:]
                                            + pair(k, "tpot_p50_ms", ".2f") + [errs(k)]) + " |")
            md.append("")
        chat = [k for k in keys if k[0] == model and k[1] == "chat"]
        if chat:
            md += ["### Multi-turn chat (each turn resends the conversation)", "",
                   "Prompt tokens differ where the engines apply different chat templates.", "",
                   "| cache_prompt | turn | ferry TTFT p50 ms | llama.cpp TTFT p50 ms | ratio | TTFT p99 ratio "
                   "| ferry tok/s | llama.cpp tok/s | ratio | ferry prompt tokens, all requests | llama.cpp prompt tokens, all requests | bad |",
                   "|---|---:|" + "---:|" * 10]
            for k in chat:
                md.append("| " + " | ".join([k[6] or "(not sent)", k[5] or "all"] + pair(k, "ttft_p50_ms")
                                            + pair(k, "ttft_p99_ms")[2:] + pair(k, "tokens_per_s")
                                            + pair(k, "prompt_tokens", ".0f")[:2] + [errs(k)]) + " |")
            md.append("")
    return "\n".join(md)


def gnuplot_script(rows, terminal):
    """Four panels, data inline ('-' blocks): closed-loop tokens/s by clients, open-loop tokens/s and
    TTFT p50 by offered rate, chat TTFT p50 by turn; one line per engine x model (x cache)."""
    def panel(title, xlabel, ylabel, logx, series):
        lines = [f"set title '{title}'", f"set xlabel '{xlabel}'", f"set ylabel '{ylabel}'",
                 "set logscale x 2" if logx and series else "unset logscale x"]
        if not series:  # an empty panel keeps the layout
            return lines + ["set xrange [0:1]", "plot 2 notitle", "set autoscale x"]
        lines.append("plot " + ", ".join(f"'-' using 1:2 with linespoints dt {1 if eng == 'ferry' else 2} title '{name}'"
                                         for name, eng, _ in series))
        for _, _, pts in series:
            lines += [f"{x:.6g} {y:.6g}" for x, y in sorted(pts)] or ["nan nan"]
            lines.append("e")
        return lines

    def series(workload, x_field, y_field, extra=None):
        out = {}
        for r in rows:
            if r["workload"] != workload or r[y_field] is None or (workload == "chat" and not r["turn"]):
                continue
            x = num(r[x_field])
            if x is None or x == float("inf"):  # rate 'inf' (all at once) has no place on the axis
                continue
            name = f"{r['engine']} {r['model']}" + (f" cache {r['cache_prompt']}" if extra and r["cache_prompt"] else "")
            out.setdefault(name, (r["engine"], []))[1].append((x, r[y_field]))
        return [(n, e, p) for n, (e, p) in out.items()]

    return "\n".join([f"set terminal {terminal} size 1200,900 noenhanced", "set output 'peer.png'",
                      "set multiplot layout 2,2", "set key below horizontal font ',8'", "set grid"]
                     + panel("closed loop", "clients", "output tokens/s", True,
                             series("closed", "concurrency", "tokens_per_s"))
                     + panel("open loop: throughput", "offered requests/s", "output tokens/s", True,
                             series("rate", "rate", "tokens_per_s"))
                     + panel("open loop: time to first token", "offered requests/s", "TTFT p50 (ms)", True,
                             series("rate", "rate", "ttft_p50_ms"))
                     + ["set xtics 1"]  # turns are whole numbers
                     + panel("multi-turn chat", "turn", "TTFT p50 (ms)", False,
                             series("chat", "turn", "ttft_p50_ms", extra=True))
                     + ["unset multiplot", ""])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="bench/moe_serve_peer/run.sh's output directory")
    args = p.parse_args()
    rows = medians(load(args.dir))
    if not rows:
        print(f"report.py: error: no cells/*/*/r*/serve_*.csv in {args.dir}", file=sys.stderr)
        return 1
    with open(os.path.join(args.dir, "peer.csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(FIELDS)
        for r in rows:
            w.writerow(["" if r[k] is None else format(r[k], ".6g") if isinstance(r[k], float) else r[k]
                        for k in FIELDS])
    with open(os.path.join(args.dir, "peer.md"), "w") as fh:
        fh.write(tables(rows))

    gnuplot = shutil.which("gnuplot")
    terminal = "pngcairo"
    if gnuplot:  # gnuplot-nox may lack cairo; `set terminal` lists the terminals it was built with
        listing = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True, text=True)
        if "pngcairo" not in listing.stdout + listing.stderr:
            terminal = "png"
    with open(os.path.join(args.dir, "peer.gp"), "w") as fh:
        fh.write(gnuplot_script(rows, terminal))
    made = ["peer.csv", "peer.md", "peer.gp"]
    if gnuplot:
        run = subprocess.run([gnuplot, "peer.gp"], cwd=args.dir, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"report.py: warning: gnuplot failed: {run.stderr.strip()}", file=sys.stderr)
        else:
            made.append("peer.png")
    print(f"wrote {', '.join(os.path.join(args.dir, m) for m in made)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
