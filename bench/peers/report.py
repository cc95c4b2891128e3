#!/usr/bin/python3
"""Summarises bench/peers/run.sh: DIR/peers.csv (one row per measurement) -> DIR/peers.json,
DIR/peers.md (median tokens/s of each engine, the ratio ferry / llama.cpp, and each engine's
fraction of the memory-bandwidth roofline at decode batch 1) and DIR/peers.png (gnuplot).

  report.py DIR --models MODELS_DIR

Roofline: decoding one token at batch 1 reads every dense weight and top_k experts of every MoE
layer once, so tokens/s x bytes read per token <= read bandwidth (DIR/roofline/kernels.csv, measured
by bench_moe_kernels). Bytes per token come from the GGUF file's tensors: llama.cpp reads every
tensor in the file's format; ferry too, except F16/BF16 dense projections,
which it holds in float32.
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import struct
import subprocess
from collections import defaultdict

# ggml type id -> (elements per block, bytes per block)
GGML_TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 6: (32, 22), 7: (32, 24), 8: (32, 34), 12: (256, 144), 13: (256, 176),
              14: (256, 210), 30: (1, 2), 39: (32, 17)}


def gguf_tensors(path):
    """(name, dims, type) of every tensor of a GGUF v3 file."""
    with open(path, "rb") as f:
        magic, version, n_tensors, n_kv = struct.unpack("<IIQQ", f.read(24))
        assert magic == 0x46554747 and version == 3, path

        def string():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode()

        scalar = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

        def skip(t):
            if t == 8:
                string()
            elif t == 9:
                et, n = struct.unpack("<IQ", f.read(12))
                for _ in range(n):
                    skip(et)
            else:
                f.read(scalar[t])

        meta = {}
        for _ in range(n_kv):
            key = string()
            (t,) = struct.unpack("<I", f.read(4))
            if t == 4:
                (meta[key],) = struct.unpack("<I", f.read(4))
            else:
                skip(t)
        out = []
        for _ in range(n_tensors):
            name = string()
            (nd,) = struct.unpack("<I", f.read(4))
            dims = struct.unpack("<%dQ" % nd, f.read(8 * nd))
            t, _offset = struct.unpack("<IQ", f.read(12))
            out.append((name, dims, t))
        return out, meta


def bytes_per_token(path):
    """Bytes one decode step reads at batch 1: (llama.cpp, ferry)."""
    tensors, meta = gguf_tensors(path)
    arch_used = [v for k, v in meta.items() if k.endswith(".expert_used_count")]
    arch_count = [v for k, v in meta.items() if k.endswith(".expert_count")]
    used = arch_used[0] / arch_count[0] if arch_used and arch_count else 1.0
    llama = ferry = 0.0
    for name, dims, t in tensors:
        n = 1
        for d in dims:
            n *= d
        if name == "token_embd.weight":
            n //= dims[-1]  # one row is read
        per, size = GGML_TYPES[t]
        stored = n / per * size
        if "_exps." in name:
            llama += stored * used
            ferry += stored * used
        else:
            llama += stored
            float_in_ferry = t in (1, 30)  # F16, BF16: dequantized at load (the embedding stays as stored)
            ferry += n * 4 if float_in_ferry else stored
    return llama, ferry


def breakdown_table(path):
    """Where ferry's time per token goes (run.sh's breakdown.csv, medians over the repetitions):
    microseconds per token of the phase, each part's share of the forward in parentheses."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return []
    parts = [k[:-3] for k in rows[0] if k.endswith("_us")]
    runs = defaultdict(list)
    for r in rows:
        runs[(r["shape"], r["format"], r["test"], int(r["batch"]))].append(r)
    lines = ["", "Where ferry's time goes, microseconds per token of the phase (share of the forward): "
             "`experts` = the expert calls, `moe_other` = the MoE blocks' norm, router, dispatch and shared "
             "experts, `head` = final norm and output projection, `other` = embedding and joins.", "",
             "| shape | format | test | batch | " + " | ".join(parts) + " |",
             "|---|---|---|---|" + "---|" * len(parts)]
    for key in sorted(runs):
        med = {p: statistics.median(float(r[p + "_us"]) for r in runs[key]) for p in parts}
        total = med.get("forward") or 0
        cells = ["%.0f" % med[p] + ("" if p == "forward" or not total else " (%.0f%%)" % (100 * med[p] / total))
                 for p in parts]
        lines.append("| %s | %s | %s | %d | " % key + " | ".join(cells) + " |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--models", required=True)
    a = ap.parse_args()
    runs = defaultdict(list)
    with open(os.path.join(a.dir, "peers.csv")) as f:
        for r in csv.DictReader(f):
            runs[(r["shape"], r["format"], r["test"], int(r["batch"]), r["engine"])].append(float(r["tokens_per_s"]))
    roof = None
    kcsv = os.path.join(a.dir, "roofline", "kernels.csv")
    if os.path.exists(kcsv):
        with open(kcsv) as f:
            rows = list(csv.DictReader(f))
        roof = {int(r["threads"]): float(r["roofline_GBps"]) * 1e9 for r in rows}
    threads = int(os.environ.get("THREADS", "2"))
    bw = roof.get(threads) if roof else None
    cells = sorted({k[:4] for k in runs}, key=lambda k: (k[0], ["F32", "Q8_0", "Q4_0", "Q4_K_M"].index(k[1])
                                                         if k[1] in ["F32", "Q8_0", "Q4_0", "Q4_K_M"] else 9,
                                                         ["decode", "prefill64", "prefill512"].index(k[2]), k[3]))
    out = []
    for shape, fmt, test, batch in cells:
        ferry = runs.get((shape, fmt, test, batch, "ferry"), [])
        llama = runs.get((shape, fmt, test, batch, "llama.cpp"), [])
        row = {"shape": shape, "format": fmt, "test": test, "batch": batch,
               "ferry_tok_s": statistics.median(ferry) if ferry else None,
               "llama_tok_s": statistics.median(llama) if llama else None, "reps": min(len(ferry), len(llama))}
        row["ratio"] = row["ferry_tok_s"] / row["llama_tok_s"] if ferry and llama else None
        gguf = os.path.join(a.models, shape, fmt + ".gguf")
        if bw and test == "decode" and batch == 1 and os.path.exists(gguf):
            lb, fb = bytes_per_token(gguf)
            row["llama_roofline_fraction"] = row["llama_tok_s"] * lb / bw if llama else None
            row["ferry_roofline_fraction"] = row["ferry_tok_s"] * fb / bw if ferry else None
            row["llama_MB_per_token"], row["ferry_MB_per_token"] = lb / 1e6, fb / 1e6
        out.append(row)
    with open(os.path.join(a.dir, "peers.json"), "w") as f:
        json.dump({"roofline_GBps": {str(k): v / 1e9 for k, v in (roof or {}).items()}, "cells": out}, f, indent=1)

    def fmt_num(v, spec="%.1f"):
        return spec % v if v is not None else "-"

    lines = ["| shape | format | test | batch | ferry tok/s | llama.cpp tok/s | ferry / llama.cpp | "
             "roofline fraction ferry / llama.cpp |", "|---|---|---|---|---|---|---|---|"]
    for r in out:
        rf = "-"
        if "ferry_roofline_fraction" in r:
            rf = "%s / %s" % (fmt_num(r["ferry_roofline_fraction"], "%.2f"), fmt_num(r["llama_roofline_fraction"], "%.2f"))
        lines.append("| %s | %s | %s | %d | %s | %s | **%s** | %s |" % (
            r["shape"], r["format"], r["test"], r["batch"], fmt_num(r["ferry_tok_s"]), fmt_num(r["llama_tok_s"]),
            fmt_num(r["ratio"], "%.2f"), rf))
    if roof:
        lines.append("")
        lines.append("Read bandwidth (roofline): " + ", ".join("%d thread%s %.1f GB/s" % (t, "s" if t > 1 else "", v / 1e9)
                                                            for t, v in sorted(roof.items())))
    lines += breakdown_table(os.path.join(a.dir, "breakdown.csv"))
    with open(os.path.join(a.dir, "peers.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    # Plot: ferry / llama.cpp per cell (1 = parity).
    dat = os.path.join(a.dir, "peers.dat")
    with open(dat, "w") as f:
        for r in out:
            if r["ratio"] is not None:
                label = "%s %s %s%s" % (r["shape"], r["format"], r["test"], "" if r["batch"] == 1 else " b%d" % r["batch"])
                f.write('"%s" %.4f\n' % (label, r["ratio"]))
    gp = os.path.join(a.dir, "peers.gp")
    with open(gp, "w") as f:
        f.write('set terminal pngcairo size 1400,600\nset output "%s"\n' % os.path.join(a.dir, "peers.png"))
        f.write('set title "ferry / llama.cpp tokens/s (same GGUF blocks, %d threads; 1 = parity)"\n' % threads)
        f.write('set style data histograms\nset style fill solid 0.7\nset boxwidth 0.8\nset xtics rotate by -60\n'
                'set yrange [0:*]\nset grid ytics\nset key off\n')
        f.write('plot "%s" using 2:xtic(1) lc rgb "#3060c0", 1 with lines lc rgb "black" dt 2\n' % dat)
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", gp], check=False)


if __name__ == "__main__":
    main()
