// The per-layer protocol of offloaded MoE inference, written once. The engine, the simulator and
// the trace replay all drive it, so "the simulator runs the engine's protocol" holds by
// construction. For each MoE layer, in this order:
//
//   1. route       Policy::on_route decides device or host for every active expert
//   2. pin hits    device-placed experts already resident (or on their way) are pinned
//   3. access      Policy::on_access for every device-placed expert, in expert order
//   4. demand load the missing device-placed experts are requested (victims: the policy), pinned
//   5. dispatched  Policy::on_dispatched: the moment to prefetch for later layers
//   6. compute     the driver runs the experts and unpins what it pinned
//   7. layer done  Policy::on_layer_done
//
// and Policy::on_step_done once per forward. What differs between the drivers (how the device
// cache is asked, how experts compute and what it costs) is a LayerBackend.
#pragma once

#include <cstdint>
#include <vector>

#include "moe/sched/policy.h"

namespace ferry::moe {

// What became of one active expert of the layer once its loads were queued.
enum class ExpertFate {
  kHost,     // placed on the host by the policy
  kHit,      // device-placed, resident or on its way: pinned
  kLoading,  // device-placed, missing: a demand load was queued and the expert pinned
  kNoRoom,   // device-placed, missing, and every slot is pinned by this layer: the driver decides
};

// The layer as dispatched, handed to LayerBackend::compute. Entries follow route.experts.
struct LayerDispatch {
  const RouteInfo* route = nullptr;  // the caller's, valid during compute()
  std::vector<Placement> placement;
  std::vector<ExpertFate> fate;
  std::vector<char> was_resident;    // in the cache when the route was known, before any demand load
};

// Counted over every layer run since the last reset_counts().
struct ProtocolCounts {
  std::uint64_t accesses = 0;     // (layer, expert) activations
  std::uint64_t hits = 0;         // device-placed and resident or on its way
  std::uint64_t host_placed = 0;  // placed on the host by the policy
  std::uint64_t loads = 0;        // demand loads queued
  std::uint64_t no_room = 0;      // demand loads refused because every slot was pinned
};

// How one driver's device cache and compute behave.
class LayerBackend {
 public:
  virtual ~LayerBackend() = default;
  // Resident on the device or on its way there.
  virtual bool contains(ExpertId id) = 0;
  // Step 2: pins a resident expert for this layer.
  virtual void pin_hit(ExpertId id) = 0;
  // Step 4: demand load (victims chosen by the policy); pins the expert and returns true, or
  // returns false when every slot is pinned.
  virtual bool load(ExpertId id) = 0;
  // Step 6: runs the layer's experts and unpins every expert it pinned in steps 2 and 4.
  virtual void compute(const LayerDispatch& layer) = 0;
};

class LayerProtocol {
 public:
  // `policy` outlives the protocol (the driver owns both). When `policy_s` is given, the steady-
  // clock time spent in the policy's callbacks is added to it (the engine's overhead report).
  // `host_available` false: there is no host copy to compute from (experts stream from disk), so a
  // host placement is loaded instead, whatever the policy chose.
  explicit LayerProtocol(Policy& policy, double* policy_s = nullptr, bool host_available = true)
      : policy_(policy), policy_s_(policy_s), host_available_(host_available) {}

  // Steps 1 to 7 for one layer.
  void run_layer(const RouteInfo& route, LayerBackend& backend);
  // After the last layer of a forward.
  void step_done();

  const ProtocolCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = ProtocolCounts{}; }

 private:
  Policy& policy_;
  double* policy_s_;  // the driver's counter, outlives the protocol; null: not timed
  bool host_available_;
  ProtocolCounts counts_;
  LayerDispatch layer_;  // reused across layers
};

}  // namespace ferry::moe
