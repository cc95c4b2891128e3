// The LRU policy (also the eviction rule of next-gate); see lru_policy.cc.
#pragma once

#include "moe/sched/policy.h"

namespace ferry::moe {

class LruPolicy : public Policy {
 public:
  explicit LruPolicy(const PolicyOptions& options);
  std::string name() const override { return "lru"; }
  void on_route(const RouteInfo&, std::span<Placement>) override {}
  void on_access(ExpertId id, bool hit) override;
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override;

 private:
  bool per_layer_;
};

}  // namespace ferry::moe
