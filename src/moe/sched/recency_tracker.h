// Least-recently-used bookkeeping that several policies share (lru, next-gate, prescope's and
// moe-infinity's tie-breaks ...): a tick per access and the tick of each expert's last access.
// A member of the policies that use it, not part of the Policy interface.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "moe/store/expert_cache.h"

namespace ferry::moe {

class RecencyTracker {
 public:
  // The model's shape (from Policy::attach). Keeps what was recorded: a policy attached again
  // after a cache reset still remembers which experts it used recently.
  void set_shape(int num_layers, int num_experts) {
    num_layers_ = num_layers;
    num_experts_ = num_experts;
  }
  // `id` is accessed now.
  void touch(ExpertId id);
  // The tick of the last access of `id`; 0 when never accessed.
  std::uint64_t last_use(ExpertId id) const;
  // The candidate accessed longest ago (never accessed counts as oldest; ties: the first).
  // `candidates` is non-empty.
  ExpertId least_recent(std::span<const ExpertId> candidates) const;

 private:
  int num_layers_ = 0, num_experts_ = 0;
  std::uint64_t tick_ = 0;
  std::vector<std::uint64_t> last_use_;  // [layer * E + e] -> tick of the last access (0 = never)
};

}  // namespace ferry::moe
