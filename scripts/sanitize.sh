#!/usr/bin/env bash
# Runs the tests under a sanitizer build (see docs/reliability.md, "Sanitizers").
#
#   scripts/sanitize.sh asan [CTEST ARGS...]   the whole suite, AddressSanitizer + UBSan
#                                              (preset asan: build/asan, Debug, gcc)
#   scripts/sanitize.sh tsan [GTEST FILTER]    the threaded modules, ThreadSanitizer (preset
#                                              tsan: build/tsan): core (queues), comm (threads
#                                              as ranks, link shaping), ps, the training
#                                              strategies with their communication threads
#                                              (threads as ranks) and MoE (the expert I/O
#                                              thread, prefetching engine)
#
# libtorch and OpenMPI are not instrumented: their known false positives are suppressed by
# tests/sanitizers/{lsan,tsan,ubsan}.supp. Any UBSan report fails the test (halt_on_error).
# Tests that assert wall-clock pacing (LinkEmulation.*) are left out: instrumentation slows
# the copies they time by 2-10x, so they measure the sanitizer, not the link model.
# Building build/asan from scratch takes tens of minutes on two cores; run it in the background.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
[ $# -gt 0 ] && shift
supp="$PWD/tests/sanitizers"
timing='LinkEmulation\.'
# Keep OpenMPI's plugins loaded until exit, so that leak reports name them (and match lsan.supp).
export OMPI_MCA_mca_base_component_disable_dlclose=1
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export FERRY_SOURCE_DIR="$PWD" OMP_NUM_THREADS=1
jobs="${FERRY_JOBS:-2}"

case "$mode" in
  asan)
    bash scripts/setup.sh
    export ASAN_OPTIONS="fast_unwind_on_malloc=0:detect_leaks=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    [ -f build/asan/CMakeCache.txt ] || cmake --preset asan >/dev/null
    cmake --build build/asan -j "$jobs"
    ctest --test-dir build/asan -j "$jobs" --timeout 1800 --output-on-failure -E "$timing" "$@"
    ;;
  tsan)
    bash scripts/setup.sh
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
    [ -f build/tsan/CMakeCache.txt ] || cmake --preset tsan >/dev/null
    tests=(core/core_test comm/comm_test ps/ps_test train/train_test train/train_delayed_test
           train/train_checkpoint_test train/compressed_training_test moe/moe_test)
    targets=()
    for t in "${tests[@]}"; do targets+=("$(basename "$t")"); done
    cmake --build build/tsan -j "$jobs" --target "${targets[@]}"
    filter="${1:--LinkEmulation.*}"
    failed=0
    for t in "${tests[@]}"; do
      echo "== tsan: $t"
      if ! "build/tsan/tests/$t" --gtest_filter="$filter" --gtest_brief=1; then failed=1; fi
    done
    exit $failed
    ;;
  *)
    sed -n '2,16p' "$0"
    exit 2
    ;;
esac
