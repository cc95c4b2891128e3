// One routed expert, (MoE layer, expert index in that layer): the unit of routing traces, the
// device cache and every policy.
#pragma once

#include <cstdint>
#include <functional>

namespace ferry::moe {

struct ExpertId {
  int layer = 0;
  int expert = 0;
  friend bool operator==(ExpertId a, ExpertId b) { return a.layer == b.layer && a.expert == b.expert; }
  friend bool operator<(ExpertId a, ExpertId b) { return a.layer != b.layer ? a.layer < b.layer : a.expert < b.expert; }
  std::uint32_t key() const { return (static_cast<std::uint32_t>(layer) << 16) | static_cast<std::uint32_t>(expert); }
};

struct ExpertIdHash {
  std::size_t operator()(ExpertId id) const { return std::hash<std::uint32_t>()(id.key()); }
};

}  // namespace ferry::moe
