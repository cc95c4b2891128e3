// Prefetching with room, the loop the prefetching policies share (next-gate, moe-infinity,
// prescope's plan and its speculation): filter the evictable experts, pick the victim by the
// policy's score, evict it, and queue the prefetch while there is room. Also the start the static
// placements share: the calibration's most routed experts fill the device.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "moe/sched/policy.h"

namespace ferry::moe {

// An expert a policy wants on the device, and the priority of its prefetch (kPriorityPrefetch +
// distance in layers, by convention).
struct PrefetchWant {
  ExpertId id;
  int priority = kPriorityPrefetch;
};

// Which expert leaves to make room for an incoming one: the policy's filter and score.
struct VictimRule {
  // Whether an evictable expert may leave for `incoming` (e.g. not one of the window's); empty: any.
  std::function<bool(ExpertId candidate, ExpertId incoming)> may_leave;
  // The victim among the candidates that may leave (non-empty, in ExpertId order).
  std::function<ExpertId(std::span<const ExpertId> candidates, ExpertId incoming)> pick;
};

// The expert `rule` evicts for `incoming` among the cache's evictable experts; nullopt when none
// may leave.
std::optional<ExpertId> find_victim(const ExpertCache& cache, const VictimRule& rule, ExpertId incoming);

// Queues `wants` in order: one resident or on its way is skipped; when no slot is free, the
// victim of `rule` is evicted first, and when none may leave the rest is dropped. `on_queued`
// (may be empty) is told of each prefetch queued, before the next want is looked at. Returns the
// number of prefetches queued.
std::size_t prefetch_with_room(ExpertCache& cache, std::span<const PrefetchWant> wants, const VictimRule& rule,
                               const std::function<void(ExpertId)>& on_queued = {});

// The start of the static placements (static-hot, fiddler, prescope): the `slots` experts with the
// highest calibration counts (ties and missing counts: spread evenly over layers) are prefetched,
// nearer layers first in the link's queue; evicts nothing. Returns them.
std::vector<ExpertId> prefetch_hottest(const PolicyContext& ctx, const std::vector<std::uint64_t>& counts,
                                       std::uint64_t slots);

}  // namespace ferry::moe
