// Next-gate speculative prefetch (Pre-gated MoE; mixtral-offloading's speculative loading): while
// layer l computes, the experts the next-gate predictor expects at layers l+1..l+lookahead are
// prefetched at low priority, evicting least recently used experts not needed now; misses load on
// demand; eviction is LRU.
#include <algorithm>
#include <numeric>

#include "moe/sched/lru_policy.h"

namespace ferry::moe {
namespace {

class NextGatePolicy : public LruPolicy {
 public:
  explicit NextGatePolicy(const PolicyOptions& options) : LruPolicy(options), lookahead_(std::max(1, options.lookahead)) {}
  std::string name() const override { return "next-gate"; }

  void attach(const PolicyContext& ctx) override {
    LruPolicy::attach(ctx);
    predictor_ = ctx.routers ? make_next_gate_predictor(ctx.routers) : nullptr;
  }

  void on_dispatched(const RouteInfo& route) override {
    if (!predictor_) return;
    PredictInput in{route.layer, route.hidden, route.num_tokens, route.hidden_size, route.experts};
    predictor_->predict(in, lookahead_, scores_);
    for (std::size_t d = 0; d < scores_.size(); ++d) {
      const int layer = route.layer + 1 + static_cast<int>(d);
      std::vector<int> order(scores_[d].size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores_[d][a] > scores_[d][b]; });
      for (int e : order) {
        if (scores_[d][e] <= 0) break;
        ExpertId id{layer, e};
        if (ctx_.cache->contains(id)) continue;
        if (ctx_.cache->free_slots() == 0 && !make_room(layer)) return;
        ctx_.cache->prefetch(id, kPriorityPrefetch + static_cast<int>(d));
        recency_.touch(id);  // counts as recently used so that the next prefetch does not evict it
      }
    }
  }

 private:
  // Evicts the least recently used unpinned expert not of `layer` (the one being prefetched).
  bool make_room(int layer) {
    std::vector<ExpertId> c;
    for (ExpertId id : ctx_.cache->evictable())
      if (id.layer != layer) c.push_back(id);
    if (c.empty()) return false;
    return ctx_.cache->evict(recency_.least_recent(c));
  }

  int lookahead_;
  std::unique_ptr<Predictor> predictor_;
  std::vector<std::vector<float>> scores_;
};

}  // namespace

std::unique_ptr<Policy> make_next_gate_policy(const PolicyOptions& options) {
  return std::make_unique<NextGatePolicy>(options);
}

}  // namespace ferry::moe
