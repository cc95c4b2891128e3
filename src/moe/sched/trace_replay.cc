#include "moe/sched/trace_replay.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "moe/sched/layer_protocol.h"

namespace ferry::moe {
namespace {

// The device cache as bookkeeping: every expert is one byte, transfers complete at once.
class ReplayCache : public ExpertCache {
 public:
  explicit ReplayCache(std::uint64_t capacity) : capacity_(capacity) {}
  bool contains(ExpertId id) const override { return pins_.count(id) > 0; }
  bool prefetch(ExpertId id, int) override {
    if (contains(id) || pins_.size() >= capacity_) return false;
    pins_[id] = 0;
    ++prefetches;
    peak = std::max<std::uint64_t>(peak, pins_.size());
    return true;
  }
  bool evict(ExpertId id) override {
    auto it = pins_.find(id);
    if (it == pins_.end() || it->second > 0) return false;
    pins_.erase(it);
    return true;
  }
  std::vector<ExpertId> evictable() const override {
    std::vector<ExpertId> out;
    for (const auto& [id, p] : pins_)
      if (p == 0) out.push_back(id);
    return out;
  }
  std::uint64_t budget_bytes() const override { return capacity_; }
  std::uint64_t used_bytes() const override { return pins_.size(); }
  std::uint64_t expert_bytes() const override { return 1; }

  bool load(ExpertId id, EvictionAdvisor& advisor) {
    while (pins_.size() >= capacity_) {
      auto c = evictable();
      if (c.empty()) return false;
      ExpertId v = advisor.choose_victim(c, id);
      FERRY_CHECK(evict(v), "policy chose a victim outside the candidates");
    }
    pins_[id] = 0;
    peak = std::max<std::uint64_t>(peak, pins_.size());
    return true;
  }
  void pin(ExpertId id) { ++pins_.at(id); }
  void unpin(ExpertId id) { --pins_.at(id); }

  std::uint64_t prefetches = 0, peak = 0;

 private:
  std::uint64_t capacity_;
  std::map<ExpertId, int> pins_;  // resident expert -> pin count
};

// The replay's side of the layer protocol: transfers complete at once, compute takes no time.
class ReplayLayer : public LayerBackend {
 public:
  ReplayLayer(ReplayCache& cache, EvictionAdvisor& advisor) : cache_(cache), advisor_(advisor) {}
  bool contains(ExpertId id) override { return cache_.contains(id); }
  void pin_hit(ExpertId id) override { cache_.pin(id); }
  bool load(ExpertId id) override {
    FERRY_CHECK(cache_.load(id, advisor_), "replay: no room for a demand load");
    cache_.pin(id);
    return true;
  }
  void compute(const LayerDispatch& d) override {
    for (std::size_t i = 0; i < d.fate.size(); ++i)
      if (d.fate[i] == ExpertFate::kHit || d.fate[i] == ExpertFate::kLoading)
        cache_.unpin({d.route->layer, d.route->experts[i]});
  }

 private:
  ReplayCache& cache_;
  EvictionAdvisor& advisor_;  // the policy, outlives the replay
};

}  // namespace

ReplayResult replay_trace(const RoutingTrace& trace, Policy& policy, const ReplayOptions& options) {
  FERRY_REQUIRE(options.capacity_experts >= static_cast<std::uint64_t>(trace.top_k),
                "replay cache of ", options.capacity_experts, " experts is smaller than top_k ", trace.top_k);
  ReplayCache cache(options.capacity_experts);
  policy.attach(PolicyContext{&cache, nullptr, trace.num_layers, trace.num_experts, trace.top_k, options.cost});
  ReplayLayer replay(cache, policy);
  LayerProtocol protocol(policy);
  std::vector<int> experts, counts;
  for (const auto& tok : trace.tokens) {
    if (tok.prefill && !options.include_prefill) continue;
    for (int l = 0; l < static_cast<int>(tok.experts.size()); ++l) {
      experts.assign(tok.experts[l].begin(), tok.experts[l].end());
      std::sort(experts.begin(), experts.end());
      experts.erase(std::unique(experts.begin(), experts.end()), experts.end());
      counts.assign(experts.size(), 1);
      protocol.run_layer(RouteInfo{l, experts, counts, nullptr, 1, 0}, replay);
    }
    protocol.step_done();
  }
  ReplayResult r;
  r.accesses = protocol.counts().accesses;
  r.hits = protocol.counts().hits;
  r.loads = protocol.counts().loads;
  r.host_execs = protocol.counts().host_placed;
  r.prefetches = cache.prefetches;
  r.peak_experts = cache.peak;
  return r;
}

}  // namespace ferry::moe
