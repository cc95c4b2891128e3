#!/usr/bin/env bash
# The installed C++ library, used as a user's project uses it: installs the build tree into a
# temporary prefix, builds examples/custom_loop.cc (copied out of the source tree) against the
# installed package alone (find_package(ferry), ferry::train) and runs it under mpirun; builds a
# program linking ferry::moe and checks that it opens the SentencePiece shim from the prefix.
# Fails when a header, library, exported target or dependency of the package is missing, or when
# the program's compile or link lines still point into the source or build tree.
# Usage: install_package.sh CMAKE BUILD_DIR SOURCE_DIR MPIEXEC CXX [COMPILER_LAUNCHER]
set -euo pipefail
cmake="$1"; build_dir=$(realpath "$2"); source_dir=$(realpath "$3"); mpiexec="$4"; cxx="$5"; launcher="${6:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

"$cmake" --install "$build_dir" --prefix "$prefix" > "$tmp/install.log"
config=$(find "$prefix" -path '*/cmake/ferry/ferryConfig.cmake')
[ -n "$config" ] || { echo "no ferryConfig.cmake under $prefix"; exit 1; }
for f in ferryConfigVersion.cmake ferryTargets.cmake; do
  [ -f "$(dirname "$config")/$f" ] || { echo "$f missing next to $config"; exit 1; }
done
[ -f "$prefix/include/train/distributed_optimizer.h" ] || { echo "headers not installed under $prefix/include"; exit 1; }
[ -x "$prefix/bin/ferry" ] || { echo "bin/ferry not installed"; exit 1; }
spm=$(find "$prefix" -name 'libferry_moe_spm.so')

mkdir "$tmp/app"
cp "$source_dir/examples/custom_loop.cc" "$tmp/app/"
cat > "$tmp/app/spm_check.cc" <<'EOF'
// Opens a file that is not a SentencePiece model: the message says whether the shim was loaded.
#include <cstdio>
#include <exception>

#include "moe/tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  try {
    ferry::moe::make_sentencepiece_tokenizer(argv[1]);
  } catch (const std::exception& e) {
    std::puts(e.what());
    return 0;
  }
  return 1;
}
EOF
cat > "$tmp/app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.22)
project(ferry_app LANGUAGES CXX)
find_package(ferry 0.1 REQUIRED)
add_executable(custom_loop custom_loop.cc)
target_link_libraries(custom_loop PRIVATE ferry::train)
if(TARGET ferry::moe)
  add_executable(spm_check spm_check.cc)
  target_link_libraries(spm_check PRIVATE ferry::moe)
endif()
EOF

# Compiles of the same file in two runs share the compiler cache although the directory differs.
export CCACHE_BASEDIR="$tmp"
"$cmake" -S "$tmp/app" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} > "$tmp/configure.log" \
  || { cat "$tmp/configure.log"; exit 1; }
"$cmake" --build "$tmp/build" -j 2

# Nothing of the program's build may come from the ferry tree: only from the prefix.
lines=$(find "$tmp/build/CMakeFiles" -name flags.make -o -name link.txt)
if grep -lF -e "$source_dir" -e "$build_dir" $lines; then
  echo "the program's compile or link lines use the ferry tree ($source_dir, $build_dir)"; exit 1
fi

out=$(OMP_NUM_THREADS=1 "$mpiexec" --allow-run-as-root --oversubscribe -np 3 "$tmp/build/custom_loop")
echo "$out"
grep -Eq 'final loss 0\.0[0-4]' <<< "$out" || { echo "custom_loop did not reach its loss"; exit 1; }

if [ ! -x "$tmp/build/spm_check" ]; then
  echo "installed package OK (built without the MoE modules)"; exit 0
fi
msg=$("$tmp/build/spm_check" "$tmp/app/CMakeLists.txt")
echo "spm_check: $msg"
if [ -n "$spm" ]; then
  grep -q "cannot load SentencePiece model" <<< "$msg" || { echo "the installed shim $spm was not loaded"; exit 1; }
else
  grep -q "built without libsentencepiece" <<< "$msg" || { echo "unexpected: $msg"; exit 1; }
fi
echo "installed package OK"
