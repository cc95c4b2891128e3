#include "moe/sched/recency_tracker.h"

#include <algorithm>

namespace ferry::moe {

void RecencyTracker::touch(ExpertId id) {
  const std::size_t k = static_cast<std::size_t>(id.layer) * num_experts_ + id.expert;
  if (last_use_.size() <= k) last_use_.resize(static_cast<std::size_t>(num_layers_) * num_experts_ + 1, 0);
  last_use_[k] = ++tick_;
}

std::uint64_t RecencyTracker::last_use(ExpertId id) const {
  const std::size_t k = static_cast<std::size_t>(id.layer) * num_experts_ + id.expert;
  return k < last_use_.size() ? last_use_[k] : 0;
}

ExpertId RecencyTracker::least_recent(std::span<const ExpertId> candidates) const {
  return *std::min_element(candidates.begin(), candidates.end(),
                           [&](ExpertId a, ExpertId b) { return last_use(a) < last_use(b); });
}

}  // namespace ferry::moe
