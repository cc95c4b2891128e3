#include "core/memory_room.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/units.h"

namespace ferry {
namespace {

// A limit at or above this is "no limit" (v1 writes 2^63 rounded down to a page).
constexpr std::uint64_t kUnlimited = std::uint64_t{1} << 62;

std::optional<std::uint64_t> read_number(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  if (word == "max") return kUnlimited;
  try {
    std::size_t used = 0;
    const std::uint64_t v = std::stoull(word, &used);
    if (used != word.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The value of `key` in a "key value" file (memory.stat), or in /proc/meminfo's "Key: value kB".
std::optional<std::uint64_t> read_key(const std::filesystem::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string k, unit;
    std::uint64_t v = 0;
    if (!(s >> k >> v)) continue;
    if (!k.empty() && k.back() == ':') k.pop_back();
    if (k != key) continue;
    s >> unit;
    return unit == "kB" ? v * 1024 : v;
  }
  return std::nullopt;
}

// The process's path in the hierarchy of `controller` ("memory" for v1, "" for v2's "0::" line).
std::optional<std::string> cgroup_path(const std::string& self_cgroup, const std::string& controller) {
  std::ifstream in(self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string list = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controller.empty() ? (line.substr(0, a) == "0" && list.empty()) : ("," + list + ",").find("," + controller + ",") != std::string::npos)
      return path;
  }
  return std::nullopt;
}

struct CgroupRoom {
  std::uint64_t limit = 0, room = 0;
  std::string version;
};

std::optional<CgroupRoom> cgroup_v1(const MemoryRoomPaths& p) {
  const auto rel = cgroup_path(p.self_cgroup, "memory");
  if (!rel) return std::nullopt;
  const std::filesystem::path dir = std::filesystem::path(p.cgroup_root) / "memory" / std::filesystem::path(*rel).relative_path();
  auto limit = read_key(dir / "memory.stat", "hierarchical_memory_limit");
  if (!limit) limit = read_number(dir / "memory.limit_in_bytes");
  const auto usage = read_number(dir / "memory.usage_in_bytes");
  if (!limit || !usage || *limit >= kUnlimited) return std::nullopt;
  const std::uint64_t cache = read_key(dir / "memory.stat", "total_inactive_file").value_or(0);
  const std::uint64_t held = *usage - std::min(*usage, cache);
  return CgroupRoom{*limit, *limit - std::min(*limit, held), "v1"};
}

std::optional<CgroupRoom> cgroup_v2(const MemoryRoomPaths& p) {
  const auto rel = cgroup_path(p.self_cgroup, "");
  if (!rel) return std::nullopt;
  for (const char* base : {"", "unified"}) {
    const std::filesystem::path root = std::filesystem::path(p.cgroup_root) / base;
    const std::filesystem::path dir = root / std::filesystem::path(*rel).relative_path();
    const auto usage = read_number(dir / "memory.current");
    if (!usage) continue;
    std::uint64_t limit = kUnlimited;
    for (std::filesystem::path d = dir;; d = d.parent_path()) {  // the smallest limit up to the root
      if (auto v = read_number(d / "memory.max")) limit = std::min(limit, *v);
      if (d == root || d.parent_path() == d || !d.string().starts_with(root.string())) break;
    }
    if (limit >= kUnlimited) return std::nullopt;
    const std::uint64_t cache = read_key(dir / "memory.stat", "inactive_file").value_or(0);
    const std::uint64_t held = *usage - std::min(*usage, cache);
    return CgroupRoom{limit, limit - std::min(limit, held), "v2"};
  }
  return std::nullopt;
}

}  // namespace

MemoryRoom memory_room(const MemoryRoomPaths& paths) {
  MemoryRoom r;
  if (auto avail = read_key(paths.meminfo, "MemAvailable")) {
    r.bytes = *avail;
    r.source = "MemAvailable " + format_bytes(static_cast<double>(*avail));
  }
  for (auto cg : {cgroup_v1(paths), cgroup_v2(paths)}) {
    if (!cg || (!r.source.empty() && cg->room >= r.bytes)) continue;
    r.bytes = cg->room;
    r.source = "cgroup " + cg->version + " limit " + format_bytes(static_cast<double>(cg->limit)) + ", " +
               format_bytes(static_cast<double>(cg->room)) + " of it free";
  }
  if (r.source.empty()) r.source = "unknown (neither /proc/meminfo nor a cgroup limit could be read)";
  return r;
}

}  // namespace ferry
