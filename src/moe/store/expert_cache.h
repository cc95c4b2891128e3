// What a policy sees of the device cache. Implemented by the engine's ExpertStore (real copies
// over a Link), the simulator's cache (simulated time) and the trace-replay cache (bookkeeping
// only), all three on the same DeviceSlots (device_slots.h), so that one policy code path runs in
// each and meets the same victim rule.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "moe/trace/expert_id.h"

namespace ferry::moe {

// Transfer priorities: lower runs first. Demand loads overtake every prefetch still queued.
constexpr int kPriorityDemand = 0;
constexpr int kPriorityPrefetch = 100;  // + distance in layers, by convention

class ExpertCache {
 public:
  virtual ~ExpertCache() = default;
  // Resident on the device or on its way there.
  virtual bool contains(ExpertId id) const = 0;
  // Speculative load into free space (never evicts); false when there is no room or it is already there.
  virtual bool prefetch(ExpertId id, int priority) = 0;
  // Drops an unpinned expert (cancelling its transfer if still moving); false if pinned or absent.
  virtual bool evict(ExpertId id) = 0;
  // Experts that evict() would accept now (resident or loading, not pinned).
  virtual std::vector<ExpertId> evictable() const = 0;
  virtual std::uint64_t budget_bytes() const = 0;
  virtual std::uint64_t used_bytes() const = 0;
  virtual std::uint64_t expert_bytes() const = 0;
  // Experts that still fit without evicting.
  std::uint64_t free_slots() const { return (budget_bytes() - used_bytes()) / expert_bytes(); }
  std::uint64_t capacity_slots() const { return budget_bytes() / expert_bytes(); }
};

// Chooses which expert leaves when a demand load needs room. Implemented by every Policy.
class EvictionAdvisor {
 public:
  virtual ~EvictionAdvisor() = default;
  // `candidates` is non-empty; the answer must be one of them.
  virtual ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) = 0;
};

}  // namespace ferry::moe
