// PreSched: prefetch-aware cross-layer scheduling (PreScope). Given the predicted activations of
// the next D layers, what is on the device, the link and the compute times and the room left, it
// chooses for every (layer, expert) of the window: prefetch (and in which order), load on demand,
// or run on the host, minimising the expected time to the end of the window. The plan is exact
// over the whole window (a Pareto dynamic programme over layers, below), not greedy per layer.
#pragma once

#include <cstdint>
#include <vector>

namespace ferry::moe {

// One (layer, expert) of the window that may be activated.
struct PreSchedCandidate {
  int expert = 0;
  double p = 0;             // probability that it is activated
  double device_s = 0;      // device compute if it runs there (tokens included)
  double host_s = 0;        // host compute if it runs there (linear in its routed tokens)
  bool resident = false;    // on the device or on its way: it runs there at no transfer cost
};

struct PreSchedLayer {
  int layer = 0;            // model layer (for the caller)
  double dense_s = 0;       // device time of the layer before its experts (attention, router)
  std::vector<PreSchedCandidate> candidates;
};

// Time 0 is the moment of planning (the current layer's experts are dispatched).
struct PreSchedInstance {
  std::vector<PreSchedLayer> layers;    // the window, in execution order
  double lead_s = 0;                    // device time until the first window layer starts
  double link_free_s = 0;               // when the link has finished what is already queued
  double transfer_s = 0;                // one expert over the link, latency included
  int free_slots = 0;                   // prefetches that fit without evicting
  std::vector<double> evict_cost_s;     // expected later cost of the i-th eviction (ascending);
                                        // size = experts that may be evicted for prefetches
  bool host_only_if_cheaper = true;     // host allowed only when host_s <= transfer_s + device_s
};

enum class PreSchedAction { kResident, kPrefetch, kOnDemand, kHost };

struct PreSchedPlan {
  std::vector<std::vector<PreSchedAction>> action;  // [window layer][candidate]
  double cost_s = 0;                                // presched_cost of this plan
  int prefetches = 0;
  std::uint64_t states = 0;                         // DP states expanded (for the runtime report)
};

// The planning model (docs/moe.md, "PreSched"). With T the transfer time, layer j starts its
// experts at s_j = t_{j-1} + dense_j; prefetches run back to back on the link in layer order from
// link_free_s, so layer j's last one is ready at R_j = link_free + T * (prefetches of layers <= j)
// + (on-demand link time of layers < j, which overtakes queued prefetches). Then
//   device_j = stall_j + sum_{resident, prefetch} p d + sum_{on-demand} p (T + d),
//   stall_j  = max(0, R_j - s_j) if layer j prefetches anything,
//   host_j   = sum_{host} p h,          t_j = s_j + max(device_j, host_j),
//   cost     = t_D + sum of the first max(0, prefetches - free_slots) eviction costs.
// Infinite when the prefetches exceed free_slots + evict_cost_s.size(), or a resident candidate is
// not kResident, or a non-resident one is, or host is used where host_only_if_cheaper forbids it.
double presched_cost(const PreSchedInstance& inst, const std::vector<std::vector<PreSchedAction>>& action);

// The plan of least presched_cost. Exact: after layer j the rest of the window depends only on the
// prefetch count K and the link lag L - t, and grows with both and with t, so states are kept per K
// as a Pareto front of (t, L - t); within a layer, for a chosen host set and prefetch count, the
// prefetches go to the most probable of the others (exchange argument: a prefetch costs T whatever
// p, an on-demand load p T on the device and on the link).
PreSchedPlan presched_solve(const PreSchedInstance& inst);

}  // namespace ferry::moe
