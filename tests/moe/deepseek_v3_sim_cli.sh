#!/usr/bin/env bash
# DeepSeek-V3's shape end to end. A make-tiny deepseek_v3 model with V3's depth (61 layers, the
# first 3 dense), 256 experts and top-8 within the 4 best of 8 groups (random weights, the real
# routing) is traced; every predictor fits and predicts on that trace above the base rate 8/256;
# `ferry moe simulate --model-shape deepseek-v3` runs every policy it offers over it.
set -eu
ferry="$1"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# V3's groups: 8 of 32 experts, a token's top-8 from the 4 best.
"$ferry" moe make-tiny --family deepseek_v3 --out m --layers 61 --dense-layers 0,1,2 --experts 256 --top-k 8 \
  --expert-groups 8 --groups-used 4 --hidden 64 --intermediate 8 --heads 2 --head-dim 16 --vocab 256 --dtype bf16 >/dev/null
"$ferry" moe trace --model m --out t.jsonl --sequences 6 --tokens 24 >/dev/null
# A shorter one for the simulator (its policies' bookkeeping grows with 58 x 256 experts).
"$ferry" moe trace --model m --out s.jsonl --sequences 2 --tokens 12 --no-hidden >/dev/null
# Every predictor: LLaPor, the co-occurrence and previous-token baselines, next-gate on the routers.
"$ferry" moe fit-predictor --trace t.jsonl --model m --out p --epochs 20 >/dev/null 2>fit.err || { cat fit.err; exit 1; }
# Every policy the simulator offers (its --policies help), each at batch 1 and 4 on the A100's
# memory with the experts in BF16 (about 100 of 14848 fit), and every expert resident in Q4_K.
policies=$("$ferry" moe simulate --help | $py -c '
import re, sys
line = next(l for l in sys.stdin if "comma-separated policies" in l)
print(",".join(re.sub(r"\[.*", "", p).strip() for p in line.split("]: ", 1)[1].split(" | ")))')
predictors=$("$ferry" moe simulate --help | $py -c '
import sys
line = next(l for l in sys.stdin if "predictor spec" in l)
print(",".join(p.strip() for p in line.split(": ", 1)[1].split(" | ")))')
"$ferry" moe simulate --trace s.jsonl --model-shape deepseek-v3 --profile a100-pcie4 --batch 1,4 \
  --policies "$policies" --out bf16 >/dev/null
"$ferry" moe simulate --trace s.jsonl --model-shape deepseek-v3 --profile a100-pcie4 --batch 1 --weights Q4_K \
  --device-mem 1TiB --policies "$policies" --out resident >/dev/null
$py - "$policies" "$predictors" <<'PY'
import csv, json, math, sys
policies, predictors = sys.argv[1].split(","), sys.argv[2].split(",") + ["next-gate"]
failures = []
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok: failures.append(what)

# The trace: V3's routing shape, and the group limit at work (a token's 8 experts in at most 4 of
# the 8 groups, while the tokens together reach more).
rows = [json.loads(l) for l in open("t.jsonl")]
layers = {r["layer"] for r in rows}
check(layers == set(range(58)), f"the trace records the 58 MoE layers (got {len(layers)})")
check(all(len(r["experts"]) == 8 for r in rows), "top-8 in every row")
groups = [{e // 32 for e in r["experts"]} for r in rows]
check(max(len(g) for g in groups) <= 4, f"a token's experts lie in at most 4 groups (max {max(len(g) for g in groups)})")
used = {}
for r, g in zip(rows, groups): used.setdefault(r["layer"], set()).update(g)
check(max(len(g) for g in used.values()) > 4, "the tokens of a layer reach more than 4 groups")

# Predictors: held-out next-layer recall@8 above random (8/256) by five standard errors of a
# random guess over the held-out predictions; each reports its time per token.
report = json.load(open("p/llapor.json"))
scores = {s["predictor"]: s for s in report["report"]["evaluation"] if s["split"] == "test"}
base = 8 / 256
for name in predictors:
    s = scores.get(name)
    check(s is not None, f"predictor {name} was scored")
    if s is None: continue
    margin = 5 * math.sqrt(base * (1 - base) / (8 * 57 * s["tokens"]))
    check(s["recall"][0] > base + margin, f"{name}: held-out recall@8 {s['recall'][0]:.3f} > {base:.4f} + {margin:.4f}")
    check(s.get("us_per_token", 0) > 0, f"{name}: time per token reported ({s.get('us_per_token')} us)")

def table(path):
    return [dict(r, **{k: float(r[k]) for k in r if k not in ("policy", "profile")}) for r in csv.DictReader(open(path))]
bf16 = 3 * 7168 * 2048 * 2
q4k = 3 * 7168 * 2048 // 256 * 144
for r in table("bf16/simulate.csv") + table("resident/simulate.csv"):
    size = q4k if r["device_mem_bytes"] > 1e12 else bf16
    what = f"{r['policy']} batch {r['batch']:.0f} ({'Q4_K resident' if size == q4k else 'BF16'})"
    check(r["tokens_per_s"] > 0, f"{what}: tokens/s {r['tokens_per_s']:.3f}")
    # Demand loads move whole experts; a prefetch may stop at a chunk when its slot is taken back.
    lo, hi = r["loads"] * size, (r["loads"] + r["prefetches"]) * size
    check(lo <= r["bytes_moved"] <= hi, f"{what}: {r['bytes_moved']:.0f} bytes moved within {lo:.0f}..{hi:.0f}")
    if r["prefetches"] == 0:
        check(r["bytes_moved"] % size == 0, f"{what}: bytes moved a multiple of the expert ({size})")
bf = table("bf16/simulate.csv")
for b in (1, 4):
    at = {r["policy"]: r for r in bf if r["batch"] == b}
    check(sorted(at) == sorted(policies), f"batch {b}: a row per policy")
    check(0 < at["oracle"]["capacity_experts"] < 58 * 256, f"batch {b}: {at['oracle']['capacity_experts']:.0f} BF16 experts fit")
    for p, r in at.items():  # within 1 %: the oracle's plan is PreScope's, fed the future (measured 0.002 % behind prescope-perfect)
        check(at["oracle"]["tokens_per_s"] >= r["tokens_per_s"] * 0.99,
              f"batch {b}: the oracle's {at['oracle']['tokens_per_s']:.3f} tokens/s >= {p}'s {r['tokens_per_s']:.3f}")
distinct = len({(r["layer"], e) for r in map(json.loads, open("s.jsonl")) for e in r["experts"]})
res = {r["policy"]: r for r in table("resident/simulate.csv")}
check(res["oracle"]["capacity_experts"] >= 58 * 256, "1 TiB holds every Q4_K expert")
for p in ("static-hot", "fiddler", "oracle"):
    check(res[p]["bytes_moved"] == 0 and res[p]["hit_rate"] == 1, f"resident: {p} places every expert at the start, moves nothing")
check(res["lru"]["bytes_moved"] == distinct * q4k, f"resident: lru moves each of the {distinct} experts used once")
for p, r in res.items():  # ondemand drops each layer's experts when the layer is done
    check(p == "ondemand" or r["bytes_moved"] <= 58 * 256 * q4k, f"resident: {p} moves no expert twice")
    check(r["bytes_moved"] >= res["oracle"]["bytes_moved"], f"resident: {p} moves no fewer bytes than the oracle")
sys.exit(1 if failures else 0)
PY
