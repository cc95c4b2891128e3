// How much memory this process may still take before the kernel reclaims from it or kills it:
// MemAvailable of /proc/meminfo and, when the process sits in a memory cgroup with a limit, that
// limit minus what the cgroup holds now, not counting its reclaimable page cache (inactive file
// pages). cgroup v1: memory.stat's hierarchical_memory_limit (the smallest limit on the path) and
// memory.usage_in_bytes; cgroup v2: the smallest memory.max from the process's cgroup up to the
// root, and memory.current of its own. The expert budget of `ferry moe` (--device-mem auto) is
// sized from it, and an explicit budget is checked against it before anything is loaded.
#pragma once

#include <cstdint>
#include <string>

namespace ferry {

struct MemoryRoom {
  std::uint64_t bytes = 0;  // what may still be allocated
  std::string source;       // where the figure comes from, for messages: "MemAvailable" or "cgroup v1 limit 1.5 GiB"
};

// Where the files are read from (tests point them at a fake tree).
struct MemoryRoomPaths {
  std::string meminfo = "/proc/meminfo";
  std::string self_cgroup = "/proc/self/cgroup";
  std::string cgroup_root = "/sys/fs/cgroup";  // v1 controllers under memory/, v2 at the root or unified/
};

// The smaller of MemAvailable and the cgroup's room. A file that is absent or unreadable is left
// out; when nothing can be read, bytes is 0 and source says so.
MemoryRoom memory_room(const MemoryRoomPaths& paths = {});

}  // namespace ferry
