// Fiddler (Kamahori et al. 2024): experts that fit start on the device (the most popular of a
// calibration run); a missing expert runs on the host when that is cheaper than moving it,
//   host_token_s x tokens  <  transfer_s,
// and is loaded (LRU eviction) otherwise, as happens for large batches.
#include "moe/sched/builtin_policies.h"
#include "moe/sched/prefetch_room.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {
namespace {

class FiddlerPolicy : public Policy {
 public:
  explicit FiddlerPolicy(std::vector<std::uint64_t> counts) : counts_(std::move(counts)) {}
  std::string name() const override { return "fiddler"; }

  void attach(const PolicyContext& ctx) override {
    ctx_ = ctx;
    recency_.set_shape(ctx.num_layers, ctx.num_experts);
    prefetch_hottest(ctx, counts_, ctx.cache->capacity_slots());
  }

  void on_route(const RouteInfo& route, std::span<Placement> placement) override {
    for (std::size_t i = 0; i < route.experts.size(); ++i) {
      ExpertId id{route.layer, route.experts[i]};
      if (ctx_.cache->contains(id)) continue;
      const double host = ctx_.cost.host_expert_s(route.tokens_per_expert[i]);
      if (host < ctx_.cost.transfer_s) placement[i] = Placement::kHost;
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
};

}  // namespace

PolicyEntry fiddler_policy_entry() {
  return counts_policy_entry<FiddlerPolicy>("fiddler", "hot experts resident, misses run on the host (Fiddler)");
}

}  // namespace ferry::moe
