// Static hot experts (llama.cpp --n-cpu-moe, ktransformers): the most frequently routed experts
// of a calibration run fill the device once and never move; every other expert runs on the host.
// No transfers after the start, at the price of host compute for cold experts.
// Where no expert runs on the host (they stream from disk: cost.host_available is false) a cold
// expert must come into a slot too: the hot set then leaves one layer's worth of slots (E) to
// them, and evictions take cold experts first, so the hot set stays put. (Filling every slot
// with hot experts made each cold load evict a hot one: at batch 4 and more, where a layer
// routes to most of its experts, the hot set was gone after one token and its hit rate fell
// to 0.)
#include <unordered_set>
#include <vector>

#include "moe/sched/builtin_policies.h"
#include "moe/sched/prefetch_room.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {
namespace {

class StaticHotPolicy : public Policy {
 public:
  explicit StaticHotPolicy(std::vector<std::uint64_t> counts) : counts_(std::move(counts)) {}
  std::string name() const override { return "static-hot"; }

  void attach(const PolicyContext& ctx) override {
    ctx_ = ctx;
    recency_.set_shape(ctx.num_layers, ctx.num_experts);
    hot_.clear();
    std::uint64_t slots = ctx.cache->capacity_slots();
    if (!ctx.cost.host_available) {
      const std::uint64_t reserve = static_cast<std::uint64_t>(ctx.num_experts);
      slots = slots > reserve ? slots - reserve : 0;
    }
    for (ExpertId id : prefetch_hottest(ctx, counts_, slots)) hot_.insert(id.key());
  }

  void on_route(const RouteInfo& route, std::span<Placement> placement) override {
    for (std::size_t i = 0; i < route.experts.size(); ++i) {
      ExpertId id{route.layer, route.experts[i]};
      placement[i] = hot_.count(id.key()) && ctx_.cache->contains(id) ? Placement::kDevice : Placement::kHost;
    }
  }
  void on_access(ExpertId id, bool) override { recency_.touch(id); }
  // The least recently used cold expert; a hot one only when every candidate is hot.
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId) override {
    cold_.clear();
    for (ExpertId id : candidates)
      if (!hot_.count(id.key())) cold_.push_back(id);
    return recency_.least_recent(cold_.empty() ? candidates : std::span<const ExpertId>(cold_));
  }

 private:
  PolicyContext ctx_;
  RecencyTracker recency_;
  std::vector<std::uint64_t> counts_;
  std::unordered_set<std::uint32_t> hot_;
  std::vector<ExpertId> cold_;  // choose_victim's scratch
};

}  // namespace

PolicyEntry static_hot_policy_entry() {
  return counts_policy_entry<StaticHotPolicy>("static-hot", "the calibration's most routed experts stay resident");
}

}  // namespace ferry::moe
