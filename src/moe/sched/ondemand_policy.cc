// On-demand loading: every active expert is moved to the device when its layer needs it and
// dropped when the layer is done; nothing is cached across layers. The bound with no reuse.
#include "moe/sched/builtin_policies.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {
namespace {

class OnDemandPolicy : public Policy {
 public:
  std::string name() const override { return "ondemand"; }
  void attach(const PolicyContext& ctx) override {
    ctx_ = ctx;
    recency_.set_shape(ctx.num_layers, ctx.num_experts);
  }
  void on_route(const RouteInfo&, std::span<Placement>) override {}
  void on_access(ExpertId id, bool) override { recency_.touch(id); }
  void on_layer_done(int layer) override {
    for (ExpertId id : ctx_.cache->evictable())
      if (id.layer == layer) ctx_.cache->evict(id);
  }
  // Least recently used.
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId) override {
    return recency_.least_recent(candidates);
  }

 private:
  PolicyContext ctx_;
  RecencyTracker recency_;
};

}  // namespace

PolicyEntry ondemand_policy_entry() {
  return {.name = "ondemand",
          .summary = "load each missed expert when it is needed; no cache policy",
          .make = [](SpecReader&, const PolicyInputs&) -> std::unique_ptr<Policy> {
            return std::make_unique<OnDemandPolicy>();
          }};
}

}  // namespace ferry::moe
