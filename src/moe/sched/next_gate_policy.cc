// Next-gate speculative prefetch (Pre-gated MoE; mixtral-offloading's speculative loading): while
// layer l computes, the experts the next-gate predictor expects at layers l+1..l+lookahead are
// prefetched at low priority, evicting least recently used experts not needed now; misses load on
// demand; eviction is LRU.
#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "moe/sched/builtin_policies.h"
#include "moe/sched/lru_policy.h"
#include "moe/sched/prefetch_room.h"

namespace ferry::moe {
namespace {

struct NextGateOptions {
  LruOptions lru;     // the eviction rule's scope (spec key scope)
  int lookahead = 1;  // spec key lookahead: layers ahead to speculate, 1 to 64
};

NextGateOptions parse_next_gate_options(SpecReader& spec) {
  NextGateOptions o;
  o.lru = parse_lru_options(spec);
  const std::int64_t k = spec.get_int("lookahead", o.lookahead);
  FERRY_REQUIRE(k >= 1 && k <= 64, "policy '", spec.name(), "': lookahead=", k, ": expected 1 to 64 layers");
  o.lookahead = static_cast<int>(k);
  return o;
}

class NextGatePolicy : public LruPolicy {
 public:
  explicit NextGatePolicy(const NextGateOptions& options) : LruPolicy(options.lru), lookahead_(options.lookahead) {}
  std::string name() const override { return "next-gate"; }

  void attach(const PolicyContext& ctx) override {
    LruPolicy::attach(ctx);
    predictor_ = ctx.routers ? make_next_gate_predictor(ctx.routers) : nullptr;
  }

  void on_dispatched(const RouteInfo& route) override {
    if (!predictor_) return;
    PredictInput in{route.layer, route.hidden, route.num_tokens, route.hidden_size, route.experts};
    predictor_->predict(in, lookahead_, scores_);
    wants_.clear();
    for (std::size_t d = 0; d < scores_.size(); ++d) {
      const int layer = route.layer + 1 + static_cast<int>(d);
      std::vector<int> order(scores_[d].size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores_[d][a] > scores_[d][b]; });
      for (int e : order) {
        if (scores_[d][e] <= 0) break;
        wants_.push_back({{layer, e}, kPriorityPrefetch + static_cast<int>(d)});
      }
    }
    // Room: the least recently used unpinned expert not of the layer being prefetched. A prefetch
    // counts as recently used, so that the next one does not evict it.
    const VictimRule rule{[](ExpertId c, ExpertId incoming) { return c.layer != incoming.layer; },
                          [this](std::span<const ExpertId> c, ExpertId) { return recency_.least_recent(c); }};
    prefetch_with_room(*ctx_.cache, wants_, rule, [this](ExpertId id) { recency_.touch(id); });
  }

 private:
  int lookahead_;
  std::unique_ptr<Predictor> predictor_;
  std::vector<std::vector<float>> scores_;
  std::vector<PrefetchWant> wants_;
};

}  // namespace

PolicyEntry next_gate_policy_entry() {
  return {.name = "next-gate",
          .summary = "prefetch what the next layers' gates predict, LRU eviction",
          .keys = {{"scope", "global/layer"}, {"lookahead", "1..64"}},
          .needs_routers = true,
          .make = [](SpecReader& spec, const PolicyInputs&) -> std::unique_ptr<Policy> {
            return std::make_unique<NextGatePolicy>(parse_next_gate_options(spec));
          }};
}

}  // namespace ferry::moe
