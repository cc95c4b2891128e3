#!/usr/bin/env bash
# The moe modules include only themselves and the modules below them (../shared/DESIGN.md):
#   quant -> tokenizer -> model, trace -> store, predict -> sched -> engine, sim -> serve
# and never train/, ps/ or comm/. The CMake targets enforce the same at link time; this catches
# an upward include of a header-only type, which the linker cannot see.
set -u
src="${1:?usage: layering.sh SRC_DIR}/moe"
allowed() {
  case "$1" in
    quant) echo "quant" ;;
    tokenizer) echo "tokenizer quant" ;;
    model) echo "model tokenizer quant" ;;
    trace) echo "trace" ;;
    store) echo "store model tokenizer trace quant" ;;
    predict) echo "predict model tokenizer trace quant" ;;
    sched) echo "sched store predict model tokenizer trace quant" ;;
    engine) echo "engine sched store predict model tokenizer trace quant" ;;
    sim) echo "sim sched store predict model tokenizer trace quant" ;;
    serve) echo "serve engine sched store predict model tokenizer trace quant" ;;
    *) echo "" ;;
  esac
}
bad=0
for dir in "$src"/*/; do
  module=$(basename "$dir")
  ok=$(allowed "$module")
  if [ -z "$ok" ]; then
    echo "layering: unknown moe module '$module' (add it to tests/moe/layering.sh)"
    bad=1
    continue
  fi
  while IFS= read -r line; do
    file=${line%%:*}
    target=$(sed -E 's/.*#include "moe\/([^/]+)\/.*/\1/' <<<"$line")
    if [[ " $ok " != *" $target "* ]]; then
      echo "layering: ${file#$src/} includes moe/$target (moe/$module may include: $ok)"
      bad=1
    fi
  done < <(grep -H '#include "moe/' "$dir"*.h "$dir"*.cc 2>/dev/null)
  if grep -H -E '#include "(train|ps|comm)/' "$dir"*.h "$dir"*.cc 2>/dev/null; then
    echo "layering: moe/$module includes train, ps or comm"
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "layering: moe modules include only downward"
exit $bad
