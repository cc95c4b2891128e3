#!/usr/bin/python3
"""Merges the loadgen.py results of several policies: DIR/serve_*.csv -> DIR/serve.csv, DIR/serve.md
(tables) and DIR/serve.gp (gnuplot script drawing DIR/serve.png; run when gnuplot is on PATH).

  report.py DIR [--lockstep bench.csv [--lockstep-where budget=25%]]

A policy is a loadgen --label; labels starting with "prescope" are the policy under test, all
others are baselines. --lockstep is a CSV with at least policy,batch,tokens_per_s (e.g. the
bench.csv of `ferry moe bench`) to compare the server against lock-step decoding at batch = concurrency.
"""
import argparse
import csv
import glob
import os
import shutil
import subprocess
import sys

FIELDS = ["label", "concurrency", "requests", "errors", "completion_tokens", "wall_s", "tokens_per_s",
          "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms"]
NUMERIC = FIELDS[1:]


def is_prescope(label):
    return label.startswith("prescope")


def num(text):
    """CSV cell -> float, or None for the empty cells loadgen writes when nothing was measured."""
    return float(text) if text not in ("", None) else None


def f(v, spec=".1f"):
    return "–" if v is None else format(v, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def load_serve(directory):
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "serve_*.csv"))):
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                rows.append({k: (num(r[k]) if k in NUMERIC else r[k]) for k in FIELDS})
    for r in rows:
        r["concurrency"] = int(r["concurrency"])
    return rows


def load_lockstep(path, where):
    """{(policy, batch): row}. A lock-step CSV may hold several rows per (policy, batch)
    (ferry moe bench sweeps device-memory budgets): --lockstep-where must then pick one."""
    out = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if any(r.get(k) != v for k, v in where):
                continue
            key = (r["policy"], int(r["batch"]))
            if key in out:
                sys.exit(f"report.py: error: {path} has several rows for policy {key[0]} batch {key[1]}; "
                         f"pick one with --lockstep-where COLUMN=VALUE (e.g. budget=25%)")
            out[key] = {k: num(r[k]) for k in ("tokens_per_s", "tpot_ms", "ttft_ms")}
    return out


def tables(rows, labels, levels, lockstep, lockstep_tokens=0):
    at = {(r["label"], r["concurrency"]): r for r in rows}
    md = ["## Server throughput and latency", "",
          "| policy | concurrency | tokens/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | TPOT p99 ms | errors |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label in labels:
        for c in levels:
            r = at.get((label, c))
            if r:
                md.append(f"| {label} | {c} | {f(r['tokens_per_s'])} | {f(r['ttft_p50_ms'])} | "
                          f"{f(r['ttft_p99_ms'])} | {f(r['tpot_p50_ms'], '.2f')} | {f(r['tpot_p99_ms'], '.2f')} | "
                          f"{int(r['errors'])} |")

    # Each policy against the strongest baseline at that concurrency, so "prescope wins" means it
    # beats every baseline, not an average of them; its tail latency is set against that same one.
    pres = [l for l in labels if is_prescope(l)]
    md += ["", "## Against the best baseline", "",
           "Best baseline: the non-prescope policy with the highest tokens/s at that concurrency. "
           "Ratios > 1 are faster than it; TTFT ratio < 1 is a lower p99 time to first token.", "",
           "| concurrency | best baseline | " + " | ".join(f"{l} tokens/s ratio" for l in labels) +
           "".join(f" | {p} TTFT p99 ratio" for p in pres) + " |",
           "|---:|---|" + "---:|" * (len(labels) + len(pres))]
    for c in levels:
        base = [at[(l, c)] for l in labels if not is_prescope(l) and (l, c) in at
                and at[(l, c)]["tokens_per_s"] is not None]
        best = max(base, key=lambda r: r["tokens_per_s"]) if base else None
        cells = [f(ratio(at[(l, c)]["tokens_per_s"], best["tokens_per_s"]) if best and (l, c) in at else None,
                   ".2f") for l in labels]
        cells += [f(ratio(at[(p, c)]["ttft_p99_ms"], best["ttft_p99_ms"]) if best and (p, c) in at else None,
                    ".2f") for p in pres]
        md.append(f"| {c} | {best['label'] if best else '–'} | " + " | ".join(cells) + " |")

    if lockstep is not None:
        # ferry moe bench's tokens/s is decode only (B x steps / decode time); the server's counts
        # every token over the wall time, prefill and arrival included. The lock-step end-to-end
        # rate, B x T / (TTFT + (T - 1) TPOT) with T = --lockstep-tokens, is the like-for-like
        # figure; TPOT compares the decode steps themselves.
        T = lockstep_tokens
        md += ["", "## Server vs lock-step decoding", "",
               f"Lock-step: `ferry moe bench`, B sequences of equal length decoded together, {T} new tokens each; "
               "end-to-end = B x T / (TTFT + (T - 1) x TPOT).", "",
               "| policy | B | server tokens/s (concurrency B) | lock-step decode tokens/s | lock-step end-to-end tokens/s "
               "| server / lock-step end-to-end | server TPOT p50 ms | lock-step TPOT ms |",
               "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for label in labels:
            for c in levels:
                if (label, c) in at and (label, c) in lockstep:
                    s, l = at[(label, c)], lockstep[(label, c)]
                    e2e = c * T / ((l["ttft_ms"] + (T - 1) * l["tpot_ms"]) / 1000.0) if l["tpot_ms"] else None
                    md.append(f"| {label} | {c} | {f(s['tokens_per_s'])} | {f(l['tokens_per_s'])} | {f(e2e)} | "
                              f"{f(ratio(s['tokens_per_s'], e2e), '.2f')} | {f(s['tpot_p50_ms'], '.2f')} | "
                              f"{f(l['tpot_ms'], '.2f')} |")
    return "\n".join(md) + "\n"


def gnuplot_script(rows, labels, terminal):
    """Data inline ('-' blocks), so the script needs nothing but itself; paths relative to DIR."""
    at = {(r["label"], r["concurrency"]): r for r in rows}

    def panel(key, ylabel, title):
        lines = [f"set ylabel '{ylabel}'", f"set title '{title}'",
                 "plot " + ", ".join(f"'-' using 1:2 with linespoints title '{l}'" for l in labels)]
        for label in labels:
            pts = sorted((c, r[key]) for (l, c), r in at.items() if l == label and r[key] is not None)
            lines += [f"{c} {v:.6g}" for c, v in pts] or ["nan nan"]  # an empty block would end the plot
            lines.append("e")
        return lines

    return "\n".join([f"set terminal {terminal} size 1120,500 noenhanced", "set output 'serve.png'",
                      "set multiplot layout 1,2", "set logscale x 2", "set logscale y",
                      "set xlabel 'concurrency (clients)'", "set key below horizontal font ',9'", "set grid"]
                     + panel("tokens_per_s", "completion tokens/s", "server throughput")
                     + panel("ttft_p99_ms", "TTFT p99 (ms)", "time to first token, p99")
                     + ["unset multiplot", ""])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="directory holding loadgen.py's serve_LABEL.csv files")
    p.add_argument("--lockstep", help="ferry moe bench's bench.csv (policy,batch,tokens_per_s,tpot_ms,ttft_ms)")
    p.add_argument("--lockstep-tokens", type=int, default=40, help="new tokens per sequence of the lock-step run")
    p.add_argument("--lockstep-where", action="append", default=[], metavar="COLUMN=VALUE",
                   help="keep only lock-step rows with this value (repeatable), e.g. budget=25%%")
    args = p.parse_args()
    where = []
    for w in args.lockstep_where:
        if "=" not in w:
            p.error(f"--lockstep-where needs COLUMN=VALUE, got {w!r}")
        where.append(tuple(w.split("=", 1)))
    rows = load_serve(args.dir)
    if not rows:
        print(f"report.py: error: no serve_*.csv in {args.dir}", file=sys.stderr)
        return 1
    lockstep = load_lockstep(args.lockstep, where) if args.lockstep else None

    # Baselines first in name order, then the prescope variants, so the tables read left to right.
    labels = sorted({r["label"] for r in rows}, key=lambda l: (is_prescope(l), l))
    levels = sorted({r["concurrency"] for r in rows})
    rows.sort(key=lambda r: (labels.index(r["label"]), r["concurrency"]))
    with open(os.path.join(args.dir, "serve.csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(FIELDS)
        for r in rows:
            w.writerow(["" if r[k] is None else format(r[k], ".6g") if isinstance(r[k], float) else r[k]
                        for k in FIELDS])
    with open(os.path.join(args.dir, "serve.md"), "w") as fh:
        fh.write(tables(rows, labels, levels, lockstep, args.lockstep_tokens))

    gnuplot = shutil.which("gnuplot")
    terminal = "pngcairo"
    if gnuplot:  # gnuplot-nox may lack cairo; `set terminal` lists the terminals it was built with
        listing = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True, text=True)
        if "pngcairo" not in listing.stdout + listing.stderr:
            terminal = "png"
    with open(os.path.join(args.dir, "serve.gp"), "w") as fh:
        fh.write(gnuplot_script(rows, labels, terminal))
    made = ["serve.csv", "serve.md", "serve.gp"]
    if gnuplot:
        run = subprocess.run([gnuplot, "serve.gp"], cwd=args.dir, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"report.py: warning: gnuplot failed: {run.stderr.strip()}", file=sys.stderr)
        else:
            made.append("serve.png")
    print(f"wrote {', '.join(os.path.join(args.dir, m) for m in made)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
