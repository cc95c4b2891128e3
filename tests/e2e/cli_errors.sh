#!/usr/bin/env bash
# Bad input to `ferry train` gives exactly one clear line on stderr and exit code 2.
set -u
ferry="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fmnist=/usr/share/datasets/fashion-mnist
source "$(dirname "$0")/../cli_expect.sh"
# expect_error "<substring of the message>" args...
expect_error() { expect_cli_error "$1" "$ferry" train --max-steps 1 --no-progress "${@:2}"; }

expect_error "unknown --algo 'sgdx'" --algo sgdx
expect_error "unknown --model 'resnet'" --model resnet
expect_error "--servers 1 makes no sense with --topology allreduce" --servers 1
expect_error "unknown --topology 'ring'" --topology ring
expect_error "asgd does not run on --topology allreduce" --algo asgd --topology allreduce
expect_error "invalid --link '1Gbs,50us'" --link 1Gbs,50us
expect_error "invalid --link '1Gbps,fast'" --link 1Gbps,fast
expect_error "--np must be at least 1" --np 0
expect_error "invalid --codec 'fourbit'" --codec fourbit
expect_error "--epochs" --epochs abc
expect_error "no such directory" --data "$tmp/nowhere"
expect_error "--delay-steps must be at least 1" --algo ssdsgd --servers 1 --delay-steps 0
expect_error "--glu-coef must be at least 0" --algo ssdsgd --servers 1 --glu-coef -0.5
expect_error "--local-update must be glu or sgd" --algo ssdsgd --servers 1 --local-update adam
expect_error "--correction-steps must be at least 1" --algo cdsgd --servers 1 --correction-steps 0
expect_error "cdsgd does not run on --topology allreduce" --algo cdsgd --topology allreduce
expect_error "odsgd does not run on --topology allreduce" --algo odsgd --topology allreduce
expect_error "--sync-every must be at least 1" --algo localsgd --sync-every 0
expect_error "wfbp does not compress" --algo wfbp --codec twobit
expect_error "--algo asgd on --topology ps steps SGD at a constant --lr" --algo asgd --servers 1 --optimizer adamw
expect_error "--lr-schedule cosine:warmup_steps=0,min_ratio=0.1,steps=1: --algo ssdsgd" --algo ssdsgd --servers 1 --lr-schedule cosine
expect_error "unknown --optimizer 'adam'" --optimizer adam
expect_cli_error "--lr-schedule cosine decays over --max-steps" "$ferry" train --no-progress --lr-schedule cosine
expect_error "--warm-start-steps must be at least 0" --algo diloco --warm-start-steps -1
expect_error "--eval-every must be at least 0" --eval-every -5
expect_cli_error "FERRY_MPI_WAIT must be auto, spin or sleep, got 'busy'" env FERRY_MPI_WAIT=busy "$ferry" train --max-steps 1 --no-progress
expect_error "--lr must be finite and greater than 0" --lr inf
expect_error "--wd must be finite and at least 0" --wd nan
expect_error "--train-limit must be at least 0" --train-limit -1
expect_error "latency '1e99us' is above one hour" --link 1Gbps,1e99us
# Far more ranks or threads than cores: refused unless asked for (it looked like a hang).
expect_error "give --oversubscribe to run it anyway" --np 1000
expect_error "--threads 1000 on" --threads 1000
expect_error "cannot write --out '/dev/null/out'" --out /dev/null/out
# MNIST-format files the models cannot take, found before mpirun starts: 8 x 8 images, and a
# training set smaller than one global batch.
be32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)))"; }
write_idx() {  # DIR N SIDE: train and t10k IDX files of N images of SIDE x SIDE
  mkdir -p "$1"
  for split in train t10k; do
    { be32 2051; be32 "$2"; be32 "$3"; be32 "$3"; head -c $(($2 * $3 * $3)) /dev/zero; } >"$1/$split-images-idx3-ubyte"
    { be32 2049; be32 "$2"; head -c "$2" /dev/zero; } >"$1/$split-labels-idx1-ubyte"
  done
}
write_idx "$tmp/small8" 100 8
expect_error "holds images of 1 x 8 x 8 (channels x height x width); --model mlp is built for 1 x 28 x 28" \
  --model mlp --np 1 --data "$tmp/small8"
write_idx "$tmp/few" 10 28
expect_error "fewer than one global batch (--batch 64 x --np 2 = 128)" --np 2 --batch 64 --data "$tmp/few"
# ferry run: the launcher of Python scripts.
expect_cli_error "command is required" "$ferry" run --np 2
expect_cli_error "--np must be at least 1" "$ferry" run --np 0 -- /bin/true
expect_cli_error "invalid --link '1Gbs'" "$ferry" run --link 1Gbs -- /bin/true
expect_cli_error "give --oversubscribe" "$ferry" run --np 1000 -- /bin/true
"$ferry" run --np 2 --servers 1 -- /bin/sh -c 'test "$FERRY_SERVERS" = 1 && test "$FERRY_LINK" = none' >/dev/null 2>&1 \
  || { echo "FAIL: ferry run does not start the command with FERRY_SERVERS and FERRY_LINK"; failures=$((failures + 1)); }
expect_cli_error "--threshold must be greater than 0" "$ferry" compare --threshold 0 --out "$tmp/cmp"
# compare refuses, before any run, flags that ferry train does not have and those it sets itself.
expect_cli_error "--bogus" "$ferry" compare --bogus 3 --out "$tmp/cmp"
expect_cli_error "--algo is set by ferry compare" "$ferry" compare --algo ssgd --out "$tmp/cmp"
expect_cli_error "--codec is set by ferry compare" "$ferry" compare --codec twobit --out "$tmp/cmp"
expect_cli_error "'ef=0' is an option without a codec before it" "$ferry" compare --codecs ef=0,none --out "$tmp/cmp"
expect_cli_error "'inner_steps=2' is an option without an algorithm before it" "$ferry" compare --algos inner_steps=2,diloco --out "$tmp/cmp"
[ -e "$tmp/cmp/runs" ] && { echo "FAIL: compare started runs before refusing its flags"; failures=$((failures + 1)); }
# A run that fails makes compare exit non-zero and name it.
"$ferry" compare --algos ssgd --np 1 --model mlp --data "$tmp/nowhere" --out "$tmp/cmpfail" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ] || ! grep -q "runs failed: ssgd" "$tmp/err"; then
  echo "FAIL: compare with failing runs -> rc=$rc:"; cat "$tmp/err"; failures=$((failures + 1))
else
  echo "ok: compare with failing runs -> rc=$rc, $(grep 'runs failed' "$tmp/err")"
fi
# Help is printed, with exit code 0, for every command.
for c in "" train compare units moe "moe generate" "moe simulate"; do
  out=$("$ferry" $c --help 2>/dev/null); rc=$?
  if [ $rc -ne 0 ] || [ -z "$out" ]; then echo "FAIL: ferry $c --help -> rc=$rc, ${#out} bytes"; failures=$((failures + 1)); fi
done

if [ -d "$fmnist" ]; then
  # Missing file.
  mkdir "$tmp/missing"; cp "$fmnist"/train-* "$tmp/missing/"
  expect_error "t10k-images" --data "$tmp/missing"
  # Wrong magic: labels where images belong.
  mkdir "$tmp/magic"; cp "$fmnist"/* "$tmp/magic/"
  cp "$fmnist/t10k-labels-idx1-ubyte.gz" "$tmp/magic/t10k-images-idx3-ubyte.gz"
  expect_error "wrong IDX magic" --data "$tmp/magic"
  # Size mismatch: a truncated plain images file.
  mkdir "$tmp/short"; cp "$fmnist"/train-* "$tmp/short/"; cp "$fmnist"/t10k-labels* "$tmp/short/"
  gzip -dc "$fmnist/t10k-images-idx3-ubyte.gz" | head -c 100000 >"$tmp/short/t10k-images-idx3-ubyte"
  expect_error "t10k-images-idx3-ubyte" --data "$tmp/short"
  # Corrupt gzip.
  mkdir "$tmp/corrupt"; cp "$fmnist"/* "$tmp/corrupt/"
  head -c 5000 "$fmnist/t10k-labels-idx1-ubyte.gz" >"$tmp/corrupt/t10k-labels-idx1-ubyte.gz"
  expect_error "t10k-labels-idx1-ubyte.gz" --data "$tmp/corrupt"
  # Image and label counts disagree.
  mkdir "$tmp/count"; cp "$fmnist"/train-* "$tmp/count/"; cp "$fmnist"/t10k-images* "$tmp/count/"
  cp "$fmnist/train-labels-idx1-ubyte.gz" "$tmp/count/t10k-labels-idx1-ubyte.gz"
  expect_error "t10k" --data "$tmp/count"
fi

"$ferry" nosuchcommand >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -ne 2 ]; then echo "FAIL: unknown command rc=$rc"; failures=$((failures + 1)); fi

[ $failures -eq 0 ] && echo "all bad inputs rejected cleanly" && exit 0
exit 1
