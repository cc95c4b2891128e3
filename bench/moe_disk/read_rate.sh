#!/usr/bin/env bash
# The file link's read rate against the disk's, side by side on one GGUF file: dd's sequential
# O_DIRECT rate (the ceiling) and ferry's effective rate while it generates (bytes the kernel read
# from storage for the run / seconds the link was busy), for each number of reads in flight
# (--link file:reads=N), alternating, REPS times; prints every command and the medians.
#   bench/moe_disk/read_rate.sh MODEL.gguf [ferry binary] [output dir]
# READS (default 1,4): the depths compared. BUDGET (default auto: what fits; a file larger than
# RAM streams), POLICY (lru), PROMPT (16) and TOKENS (4): the `ferry moe bench` run. DD_BS (1M and
# 8M) and DD_MIB (2048): dd's read sizes and length, from the middle of the file (the experts).
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL="$1"
FERRY="$(realpath "${2:-build/default/apps/ferry}")"
OUT="${3:-runs/moe-disk-read-rate}"
READS="${READS:-1,4}"
BUDGET="${BUDGET:-auto}"
POLICY="${POLICY:-lru}"
PROMPT="${PROMPT:-16}"
TOKENS="${TOKENS:-4}"
DD_BS="${DD_BS:-1M,8M}"
DD_MIB="${DD_MIB:-2048}"
REPS="${REPS:-3}"
mkdir -p "$OUT"
size_mib=$(($(stat -c %s "$MODEL") / 1048576))
rows="$OUT/rates.csv"
echo "what,rep,rate_gb_per_s,ttft_ms,tokens_per_s,command" >"$rows"
for rep in $(seq 1 "$REPS"); do
  for bs in ${DD_BS//,/ }; do
    bs_mib=$(numfmt --from=iec "$bs" | awk '{print $1 / 1048576}')
    skip=$(awk -v s="$size_mib" -v b="$bs_mib" 'BEGIN {print int(s / 2 / b)}')
    count=$(awk -v n="$DD_MIB" -v b="$bs_mib" 'BEGIN {print int(n / b)}')
    cmd="dd if=$MODEL of=/dev/null bs=$bs skip=$skip count=$count iflag=direct"
    line=$($cmd 2>&1 | tail -1)
    # "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 1.16703 s, 1.8 GB/s": bytes / seconds.
    rate=$(echo "$line" | awk '{for (i = 2; i <= NF; i++) if ($i == "s,") t = $(i - 1); printf "%.3f", $1 / t / 1e9}')
    echo "dd bs=$bs,$rep,$rate,,,\"$cmd\"" >>"$rows"
  done
  for r in ${READS//,/ }; do
    dir="$OUT/reads$r-rep$rep"
    cmd=("$FERRY" moe bench --model "$MODEL" --policies "$POLICY" --device-mem "$BUDGET" --link "file:reads=$r"
      --threads 2 --batch 1 --prompt-tokens "$PROMPT" --tokens "$TOKENS" --corpus '' --out "$dir")
    "${cmd[@]}" >"$dir.log" 2>&1 || { echo "failed: ${cmd[*]}"; tail -5 "$dir.log"; exit 1; }
    /usr/bin/python3 - "$dir/bench.csv" "reads=$r" "$rep" "$(printf '%q ' "${cmd[@]}")" >>"$rows" <<'EOF'
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
rate = float(row["storage_read_bytes"]) / max(1e-9, float(row["link_busy_s"])) / 1e9
print(f'ferry {sys.argv[2]},{sys.argv[3]},{rate:.3f},{float(row["ttft_ms"]):.0f},{float(row["tokens_per_s"]):.3f},"{sys.argv[4]}"')
EOF
  done
done
/usr/bin/python3 - "$rows" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("commands:")
for r in rows:
    if r["rep"] == "1": print("  " + r["command"])
print(f'{"":16} {"GB/s (median)":>14} {"runs":>22} {"TTFT ms":>9} {"tok/s":>7}')
for what in dict.fromkeys(r["what"] for r in rows):
    rs = [r for r in rows if r["what"] == what]
    rate = statistics.median(float(r["rate_gb_per_s"]) for r in rs)
    runs = " ".join(r["rate_gb_per_s"] for r in rs)
    ttft = statistics.median(float(r["ttft_ms"]) for r in rs) if rs[0]["ttft_ms"] else float("nan")
    tps = statistics.median(float(r["tokens_per_s"]) for r in rs) if rs[0]["tokens_per_s"] else float("nan")
    print(f"{what:16} {rate:14.3f} {runs:>22} {ttft:9.0f} {tps:7.3f}")
EOF
echo "rows: $rows"
