#include "moe/sched/trace_replay.h"

#include <algorithm>

#include "core/error.h"
#include "moe/sched/layer_protocol.h"
#include "moe/store/device_slots.h"

namespace ferry::moe {
namespace {

// The device cache as bookkeeping, in the ExpertStore's slots (DeviceSlots): transfers complete at
// once (an expert has arrived as soon as it is reserved; leaving stops nothing), and a slot counts
// as one byte: sizes are in experts.
class ReplayCache : public ExpertCache, private SlotTransfers {
 public:
  explicit ReplayCache(std::uint64_t capacity) : slots_({capacity, 1}, this) {}
  bool contains(ExpertId id) const override { return slots_.contains(id); }
  bool prefetch(ExpertId id, int) override {
    if (contains(id) || slots_.reserve(id, true) < 0) return false;
    ++prefetches;
    return true;
  }
  bool evict(ExpertId id) override { return slots_.evict(id); }
  std::vector<ExpertId> evictable() const override { return slots_.evictable(); }
  std::uint64_t budget_bytes() const override { return slots_.budget_bytes(); }
  std::uint64_t used_bytes() const override { return slots_.used_bytes(); }
  std::uint64_t expert_bytes() const override { return slots_.slot_bytes(); }

  bool load(ExpertId id, EvictionAdvisor& advisor) {
    if (!slots_.make_room(id, &advisor)) return false;
    slots_.reserve(id, false);
    return true;
  }
  void pin(ExpertId id) { slots_.pin(id); }
  void unpin(ExpertId id) { slots_.unpin(id); }
  std::uint64_t peak() const { return slots_.peak(); }

  std::uint64_t prefetches = 0;

 private:
  bool arrived(ExpertId, int) const override { return true; }
  void release(ExpertId, int) override {}

  DeviceSlots slots_;
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
  r.peak_experts = cache.peak();
  return r;
}

}  // namespace ferry::moe
