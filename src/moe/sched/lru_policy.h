// The LRU policy (also the eviction rule of next-gate); see lru_policy.cc.
#pragma once

#include "moe/sched/policy.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {

enum class LruScope {
  kGlobal,  // one LRU over all layers
  kLayer,   // each layer keeps at most slots / layers experts, evicting within itself
};

struct LruOptions {
  LruScope scope = LruScope::kGlobal;  // spec key scope=global|layer
};
// Reads scope (next-gate's reader reads it too).
LruOptions parse_lru_options(SpecReader& spec);

class LruPolicy : public Policy {
 public:
  explicit LruPolicy(LruOptions options = {});
  std::string name() const override { return "lru"; }
  void attach(const PolicyContext& ctx) override;
  void on_route(const RouteInfo&, std::span<Placement>) override {}
  void on_access(ExpertId id, bool hit) override;
  void on_layer_done(int layer) override;
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override;

 protected:
  PolicyContext ctx_;
  RecencyTracker recency_;

 private:
  bool per_layer_;
  int pending_layer_ = -1;  // layer whose misses are being announced
  std::uint64_t pending_ = 0;  // misses of that layer announced but not loaded yet
};

}  // namespace ferry::moe
