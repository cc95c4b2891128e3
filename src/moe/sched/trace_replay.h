// Replays recorded routing through a Policy against a bookkeeping-only device cache (no bytes,
// no time): the hit rate a policy reaches on real routing. The per-layer steps are the engine's own
// (layer_protocol.h: route, pin hits, access, demand loads, dispatched, layer done), one token per
// step in decode order.
#pragma once

#include <cstdint>

#include "moe/sched/policy.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {

struct ReplayOptions {
  std::uint64_t capacity_experts = 4;  // device cache size in experts
  bool include_prefill = false;        // also replay prompt tokens (granite traces)
  CostModel cost;                      // for policies that weigh times (fiddler)
};

struct ReplayResult {
  std::uint64_t accesses = 0;  // (token, layer, expert) activations
  std::uint64_t hits = 0;      // device-placed and resident (or prefetched) when needed
  std::uint64_t loads = 0;     // demand transfers
  std::uint64_t prefetches = 0;
  std::uint64_t host_execs = 0;
  std::uint64_t peak_experts = 0;
  double hit_rate() const { return accesses ? static_cast<double>(hits) / accesses : 0.0; }
};

ReplayResult replay_trace(const RoutingTrace& trace, Policy& policy, const ReplayOptions& options);

}  // namespace ferry::moe
