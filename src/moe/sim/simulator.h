// Trace-driven simulator of MoE offloading: a discrete-event model of the GPU, the host CPU and the
// PCIe link (time_model.h) that runs the very policies and predictors of the engine on recorded
// routing, through the engine's own per-layer protocol (sched/layer_protocol.h: route, pin hits,
// access, demand loads, dispatched, compute, layer done). The device cache is the ExpertStore's
// own slots (store/device_slots.h: slots reserved when a transfer is queued, victims chosen by the
// policy among resident experts first) with the AsyncIO thread's rules in simulated time (demand
// loads overtake queued prefetches, a running transfer finishes — or stops at its next chunk when
// evicted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moe/trace/future_routing.h"
#include "moe/sched/policy.h"
#include "moe/trace/routing_trace.h"
#include "moe/sim/time_model.h"

namespace ferry::moe {

struct SimOptions {
  int batch = 1;                       // sequences per step (for the time model; routing comes formed)
  std::uint64_t capacity_experts = 0;  // device slots for routed experts
  std::uint64_t chunk_bytes = 1u << 20;  // transfer chunk: an evicted transfer stops at its next one
  bool warm_start = true;              // what a policy loads in attach() is in place at time 0 (static placements)
};

struct SimResult {
  std::string policy;
  int batch = 0;
  std::uint64_t steps = 0, tokens = 0;
  double time_s = 0;            // simulated decode time
  double io_wait_s = 0;         // device idle waiting for a transfer
  double link_busy_s = 0;
  std::uint64_t accesses = 0, hits = 0, host_execs = 0, loads = 0, prefetches = 0, prefetches_used = 0;
  std::uint64_t cancelled = 0, bytes_moved = 0, capacity_experts = 0;
  std::uint64_t preempted = 0;  // prefetches a demand load stopped at a chunk boundary (resumed later)
  double max_prefetch_delay_s = 0;  // the longest a demand load waited for a prefetch (at most one chunk)
  std::uint64_t needed = 0;     // accesses of experts not resident through an earlier use (prefetch hits + loads + cold host runs)
  double planner_s_per_plan = 0;     // PreSched planning time (prescope, oracle): CPU time on this machine
  double device_layer_compute_s = 0; // mean modelled device compute of one decoder layer
  double tokens_per_s() const { return time_s > 0 ? tokens / time_s : 0; }
  double tpot_ms() const { return steps ? time_s / steps * 1e3 : 0; }
  double hit_rate() const { return accesses ? static_cast<double>(hits) / accesses : 0; }
  double io_wait_fraction() const { return time_s > 0 ? io_wait_s / time_s : 0; }
  // Prefetches used before they left / prefetches; prefetch hits / the accesses that needed a load.
  double prediction_precision() const { return prefetches ? static_cast<double>(prefetches_used) / prefetches : 0; }
  double prediction_recall() const { return needed ? static_cast<double>(prefetches_used) / needed : 0; }
};

// Runs `policy` (attached here) over `routing`, one step per decode step.
SimResult simulate(const FutureRouting& routing, Policy& policy, const TimeModel& time, const SimOptions& options);

}  // namespace ferry::moe
