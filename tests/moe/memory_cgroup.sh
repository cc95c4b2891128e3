# Sourced by the tests that run ferry under a cgroup v1 memory limit (page cache included):
#   memory_cgroup_or_skip        exits 77 (skipped) unless root with a writable memory controller
#   in_memory_cgroup LIMIT CMD   runs CMD in a fresh cgroup of LIMIT bytes; sets rc (its exit code;
#                                137: killed for memory) and peak (the cgroup's most bytes), removes it
#   memory_cgroup_cleanup        removes a cgroup left by an interrupted run (for the caller's trap)
memory_cgroup_root=/sys/fs/cgroup/memory
memory_cgroup="$memory_cgroup_root/ferry-memory-test-$$"
memory_cgroup_or_skip() {
  if [ "$(id -u)" != 0 ] || [ ! -w "$memory_cgroup_root" ]; then
    echo "skipped: needs root and a writable cgroup v1 memory controller ($memory_cgroup_root)"
    exit 77
  fi
}
memory_cgroup_cleanup() { rmdir "$memory_cgroup" 2>/dev/null || true; }
in_memory_cgroup() {
  local limit=$1
  shift
  mkdir "$memory_cgroup"
  echo "$limit" >"$memory_cgroup/memory.limit_in_bytes"
  rc=0
  (echo "$BASHPID" >"$memory_cgroup/cgroup.procs"; exec "$@") || rc=$?
  peak=$(cat "$memory_cgroup/memory.max_usage_in_bytes")
  rmdir "$memory_cgroup"
}
