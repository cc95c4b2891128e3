// Static hot experts (llama.cpp --n-cpu-moe, ktransformers): the most frequently routed experts
// of a calibration run fill the device once and never move; every other expert runs on the host.
// No transfers after the start, at the price of host compute for cold experts.
#include <unordered_set>

#include "moe/sched/policy.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {
namespace {

class StaticHotPolicy : public Policy {
 public:
  explicit StaticHotPolicy(const PolicyOptions& options) : counts_(options.expert_counts) {}
  std::string name() const override { return "static-hot"; }

  void attach(const PolicyContext& ctx) override {
    ctx_ = ctx;
    recency_.set_shape(ctx.num_layers, ctx.num_experts);
    hot_.clear();
    for (ExpertId id : hottest_experts(ctx, counts_, ctx.cache->capacity_slots())) {
      hot_.insert(id.key());
      ctx.cache->prefetch(id, kPriorityPrefetch + id.layer);
    }
  }

  void on_route(const RouteInfo& route, std::span<Placement> placement) override {
    for (std::size_t i = 0; i < route.experts.size(); ++i) {
      ExpertId id{route.layer, route.experts[i]};
      placement[i] = hot_.count(id.key()) && ctx_.cache->contains(id) ? Placement::kDevice : Placement::kHost;
    }
  }
  void on_access(ExpertId id, bool) override { recency_.touch(id); }
  // Least recently used.
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId) override {
    return recency_.least_recent(candidates);
  }

 private:
  PolicyContext ctx_;
  RecencyTracker recency_;
  std::vector<std::uint64_t> counts_;
  std::unordered_set<std::uint32_t> hot_;
};

}  // namespace

std::unique_ptr<Policy> make_static_hot_policy(const PolicyOptions& options) {
  return std::make_unique<StaticHotPolicy>(options);
}

}  // namespace ferry::moe
