#!/usr/bin/python3
"""Summarises bench/moe_disk/peers.sh: DIR/disk.csv (one row per run and test) -> DIR/disk.json,
DIR/disk.md and DIR/disk.png (gnuplot).

  report.py DIR

Per cell (part, model, format, memory limit): llama.cpp's best load mode and ferry's best policy
(the median of a cell's repetitions, with their range),
decode and prefill tokens/s, the ratio ferry / llama.cpp, each one's peak memory (the cgroup's max
usage, page cache included), ferry's hit rate, and the disk roofline: the disk's O_DIRECT bandwidth
(DIR/dd.txt) divided by the expert bytes ferry moved per token of the run (prompt and decode), so
ferry's fraction of it = (bytes moved / bandwidth) / the run's wall time (1 = the disk never idle,
every read useful). For the forced-routing part: every policy at every batch against the best
baseline (on-demand, LRU, static-hot).
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def disk_bandwidth(d):
    """Bytes/s of dd's O_DIRECT read (its last line: '... copied, 1.7 s, 1.5 GB/s')."""
    try:
        line = open(os.path.join(d, "dd.txt")).read()
    except OSError:
        return None
    m = re.search(r"([0-9.]+) ([kMG])B/s", line)
    return float(m.group(1)) * {"k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)] if m else None


def main():
    d = sys.argv[1]
    rows = list(csv.DictReader(open(os.path.join(d, "disk.csv"))))
    bw = disk_bandwidth(d)
    # Repetitions of a cell (the rep column): the row of the median tokens/s stands for them, with
    # their range beside it.
    reps = defaultdict(list)
    for r in rows:
        reps[(r["part"], r["model"], r["format"], r["over"], r["batch"], r["engine"], r["mode"], r["test"])].append(r)
    cells = defaultdict(lambda: defaultdict(dict))  # (part, model, format, over, batch) -> engine -> mode -> {test: row}
    for (part, model, f, over, batch, engine, mode, test), rs in reps.items():
        timed = sorted((r for r in rs if num(r["tokens_per_s"])), key=lambda r: num(r["tokens_per_s"]))
        r = dict(timed[(len(timed) - 1) // 2] if timed else rs[0])
        r["range"] = (num(timed[0]["tokens_per_s"]), num(timed[-1]["tokens_per_s"]), len(timed)) if len(timed) > 1 else None
        cells[(part, model, f, over, batch)][engine].setdefault(mode, {})[test] = r

    def with_range(v, row):
        """'v' or 'v (lo-hi, n runs)' for a repeated cell."""
        rg = row.get("range") if row else None
        return fmt(v, "%.3f") if not rg else "%s (%.3f-%.3f, %d runs)" % (fmt(v, "%.3f"), rg[0], rg[1], rg[2])

    def best(modes, test):
        ok = [(num(t[test]["tokens_per_s"]), m) for m, t in modes.items() if test in t and num(t[test]["tokens_per_s"])]
        return max(ok) if ok else (None, None)

    def roofline_fraction(by_test):
        dec, pre = by_test.get("decode"), by_test.get("prefill")
        if not (bw and dec and pre):
            return None
        d_ts, p_ts, moved = num(dec["tokens_per_s"]), num(pre["tokens_per_s"]), num(dec["moved_bytes"])
        if not (d_ts and p_ts and moved):
            return None
        wall = num(dec["decode_tokens"]) / d_ts + int(dec["batch"]) * num(dec["prompt_tokens"]) / p_ts
        return moved / bw / wall

    out = []
    lines = []
    if bw:
        lines.append("Disk: O_DIRECT sequential read %.2f GB/s (dd, 8 MiB blocks)" % (bw / 1e9))
        lines.append("")
    # Engine against engine: parts over and big.
    lines.append("| part | format | file GiB | limit GiB | test | llama.cpp tok/s (mode) | ferry tok/s (policy) | ferry / llama.cpp | "
                 "peak GiB llama.cpp / ferry | ferry hit rate | ferry disk-roofline fraction |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(cells, key=lambda k: (k[0], k[2], int(k[3]))):
        part, model, f, over, batch = key
        if part == "trace":
            continue
        e = cells[key]
        for test in ("decode", "prefill"):
            lt, lm = best(e.get("llama.cpp", {}), test)
            ft, fm = best(e.get("ferry", {}), test)
            any_row = next(iter(next(iter(e.values())).values()))[test]
            fb, limit = num(any_row["file_bytes"]), num(any_row["limit_bytes"])
            status = {m: t[test]["status"] for m, t in e.get("llama.cpp", {}).items() if test in t}
            lpeak = num(e["llama.cpp"][lm][test]["peak_bytes"]) if lm else None
            fpeak = num(e["ferry"][fm][test]["peak_bytes"]) if fm else None
            fr = e["ferry"][fm] if fm else {}
            hit = num(fr[test]["hit_rate"]) if fm else None
            rf = roofline_fraction(fr) if fm else None
            ratio = ft / lt if ft and lt else None
            failed = ", ".join("%s %s" % (m, s) for m, s in sorted(status.items()) if s != "ok")
            cell = dict(part=part, format=f, over=int(over), file_bytes=fb, limit_bytes=limit, test=test,
                        llama_tok_s=lt, llama_mode=lm, ferry_tok_s=ft, ferry_policy=fm, ratio=ratio, llama_failed=failed,
                        llama_peak=lpeak, ferry_peak=fpeak, ferry_hit_rate=hit, ferry_roofline_fraction=rf)
            out.append(cell)
            lt_s = "%s %s" % (with_range(lt, e["llama.cpp"][lm][test]), lm) if lt else "-"
            if failed:
                lt_s += "; " + failed
            lines.append("| %s | %s | %s | %s | %s | %s | %s | **%s** | %s / %s | %s | %s |" % (
                part, f, fmt(fb / 2**30 if fb else None, "%.1f"), fmt(limit / 2**30 if limit else None, "%.2f") if limit else "RAM",
                test, lt_s, "%s %s" % (with_range(ft, fr[test]), fm) if ft else "-", fmt(ratio),
                fmt(lpeak / 2**30 if lpeak else None), fmt(fpeak / 2**30 if fpeak else None), fmt(hit), fmt(rf)))
    # Forced routing: policies at each batch.
    trace = [(k, v) for k, v in cells.items() if k[0] == "trace"]
    if trace:
        lines += ["", "Routing forced from the real Mixtral-8x7B trace (decode tokens/s; hit rate):", "",
                  "| batch | policy | decode tok/s | hit rate | MiB moved per token | vs best baseline | of prescope-perfect | "
                  "predictor % of a token |",
                  "|---|---|---|---|---|---|---|---|"]
        for key, e in sorted(trace, key=lambda kv: int(kv[0][4])):
            policies = e.get("ferry", {})
            base = [num(t["decode"]["tokens_per_s"]) for p, t in policies.items()
                    if p in ("lru", "ondemand", "static-hot") and num(t["decode"]["tokens_per_s"])]
            best_base = max(base) if base else None
            bound = num(policies["prescope-perfect"]["decode"]["tokens_per_s"]) if "prescope-perfect" in policies else None
            for p, t in sorted(policies.items()):
                r = t["decode"]
                ts = num(r["tokens_per_s"])
                per_tok = num(r["moved_bytes"]) / max(1.0, num(r["decode_tokens"]) or 1) / 2**20 if num(r["moved_bytes"]) else None
                vs = ts / best_base if ts and best_base else None
                of_bound = ts / bound if ts and bound else None
                # The predictor's time per generated token (bench.csv's predictor_us_per_token, the
                # prompt's predictions included) over a generated token's share of the decode
                # (1 / tokens per second, the batch's tokens counted).
                pred_us = num(r.get("predictor_us_per_token") or "")
                share = pred_us * 1e-6 * ts if pred_us is not None and ts else None
                out.append(dict(part="trace", batch=int(key[4]), policy=p, decode_tok_s=ts, hit_rate=num(r["hit_rate"]),
                                vs_best_baseline=vs, of_prescope_perfect=of_bound, predictor_share=share))
                lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    key[4], p, fmt(ts, "%.3f"), fmt(num(r["hit_rate"])), fmt(per_tok, "%.0f"), fmt(vs), fmt(of_bound),
                    fmt(share * 100 if share is not None else None, "%.1f")))
    with open(os.path.join(d, "disk.json"), "w") as fh:
        json.dump({"disk_bytes_per_s": bw, "cells": out}, fh, indent=1)
    with open(os.path.join(d, "disk.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    dat = os.path.join(d, "disk.dat")
    with open(dat, "w") as fh:
        for c in out:
            if c.get("ratio") is not None:
                fh.write('"%s %s %s %s" %.4f\n' % (c["part"], c["format"], "x%d" % c["over"], c["test"], c["ratio"]))
    gp = os.path.join(d, "disk.gp")
    with open(gp, "w") as fh:
        fh.write('set terminal pngcairo size 1200,600\nset output "%s"\n' % os.path.join(d, "disk.png"))
        fh.write('set title "ferry (disk tier) / llama.cpp (best load mode) tokens/s, model larger than memory; 1 = parity"\n')
        fh.write('set style data histograms\nset style fill solid 0.7\nset boxwidth 0.8\nset xtics rotate by -60\n'
                 'set yrange [0:*]\nset grid ytics\nset key off\n')
        fh.write('plot "%s" using 2:xtic(1) lc rgb "#3060c0", 1 with lines lc rgb "black" dt 2\n' % dat)
    if shutil.which("gnuplot") and os.path.getsize(dat) > 0:
        subprocess.run(["gnuplot", gp], check=False)


if __name__ == "__main__":
    main()
