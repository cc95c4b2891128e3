// MoE-Infinity (Xue et al. 2024, "MoE-Infinity: Offloading-Efficient MoE Model Serving"): each
// request keeps an expert activation matrix (EAM, [layer x expert] routed-token counts); the EAMs of
// past requests are stored. At layer l the current EAM's rows 0..l are matched against the stored
// ones by cosine similarity; the best match's rows l+1.. give activation probabilities
// (p = count / tokens of that row x top_k, at most 1). Prefetch priority is
//   p x (1 - (d - 1) / L)      (d = layer distance, L = layers),
// highest first, over the next kLookahead layers; eviction keeps the most frequently activated
// experts (LFU over all requests).
// The Policy interface sees decode steps, not requests: a request here is kStepsPerRequest steps of
// the batch (all its sequences together); calibration counts, when given, seed the store.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "moe/sched/builtin_policies.h"
#include "moe/sched/prefetch_room.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {
namespace {

constexpr int kStepsPerRequest = 16;
constexpr int kLookahead = 3;
constexpr std::size_t kMaxStored = 128;
constexpr double kMinProbability = 0.1;

class MoeInfinityPolicy : public Policy {
 public:
  explicit MoeInfinityPolicy(std::vector<std::uint64_t> counts) : calibration_(std::move(counts)) {}
  std::string name() const override { return "moe-infinity"; }

  void attach(const PolicyContext& ctx) override {
    ctx_ = ctx;
    recency_.set_shape(ctx.num_layers, ctx.num_experts);
    const std::size_t n = static_cast<std::size_t>(ctx.num_layers) * ctx.num_experts;
    current_.assign(n, 0);
    frequency_.assign(n, 0);
    stored_.clear();
    if (calibration_.size() == n) stored_.push_back(std::vector<double>(calibration_.begin(), calibration_.end()));
    steps_ = 0;
  }

  void on_route(const RouteInfo& route, std::span<Placement>) override {
    for (std::size_t i = 0; i < route.experts.size(); ++i) {
      const std::size_t k = index({route.layer, route.experts[i]});
      current_[k] += route.tokens_per_expert[i];
      frequency_[k] += route.tokens_per_expert[i];
    }
  }
  void on_access(ExpertId id, bool) override { recency_.touch(id); }

  void on_dispatched(const RouteInfo& route) override {
    const std::vector<double>* match = best_match(route.layer);
    if (!match) return;
    const int E = ctx_.num_experts, L = ctx_.num_layers;
    std::vector<std::pair<double, PrefetchWant>> scored;  // priority, want
    for (int d = 1; d <= kLookahead && route.layer + d < L; ++d) {
      const int layer = route.layer + d;
      double tokens = 0;
      for (int e = 0; e < E; ++e) tokens += (*match)[index({layer, e})];
      if (tokens <= 0) continue;
      for (int e = 0; e < E; ++e) {
        const double p = std::min(1.0, (*match)[index({layer, e})] / tokens * ctx_.top_k);
        if (p >= kMinProbability) scored.push_back({p * (1.0 - (d - 1.0) / L), {{layer, e}, kPriorityPrefetch + d}});
      }
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<PrefetchWant> wants;
    for (const auto& s : scored) wants.push_back(s.second);
    // Room: the least frequently activated expert that is not wanted now.
    auto unwanted = [&](ExpertId c, ExpertId) {
      return std::none_of(wants.begin(), wants.end(), [c](const PrefetchWant& w) { return w.id == c; });
    };
    auto least_frequent = [this](std::span<const ExpertId> c, ExpertId incoming) { return choose_victim(c, incoming); };
    const VictimRule rule{unwanted, least_frequent};
    prefetch_with_room(*ctx_.cache, wants, rule);
  }

  void on_step_done() override {
    if (++steps_ % kStepsPerRequest != 0) return;
    if (stored_.size() == kMaxStored) stored_.erase(stored_.begin() + (calibration_.empty() ? 0 : 1));
    stored_.push_back(current_);
    std::fill(current_.begin(), current_.end(), 0.0);
  }

  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId) override {
    return *std::min_element(candidates.begin(), candidates.end(), [&](ExpertId a, ExpertId b) {
      const double fa = frequency_[index(a)], fb = frequency_[index(b)];
      return fa != fb ? fa < fb : recency_.last_use(a) < recency_.last_use(b);
    });
  }

 private:
  std::size_t index(ExpertId id) const { return static_cast<std::size_t>(id.layer) * ctx_.num_experts + id.expert; }

  // The stored EAM whose rows 0..layer are most similar (cosine) to the current request's.
  const std::vector<double>* best_match(int layer) const {
    const std::size_t n = static_cast<std::size_t>(layer + 1) * ctx_.num_experts;
    double cur = 0;
    for (std::size_t i = 0; i < n; ++i) cur += current_[i] * current_[i];
    const std::vector<double>* best = nullptr;
    double best_sim = -1;
    for (const auto& m : stored_) {
      double dot = 0, norm = 0;
      for (std::size_t i = 0; i < n; ++i) dot += current_[i] * m[i], norm += m[i] * m[i];
      const double sim = cur > 0 && norm > 0 ? dot / std::sqrt(cur * norm) : 0.0;
      if (sim > best_sim) best_sim = sim, best = &m;
    }
    return best;
  }

  PolicyContext ctx_;
  RecencyTracker recency_;
  std::vector<std::uint64_t> calibration_;
  std::vector<double> current_;    // this request's EAM
  std::vector<double> frequency_;  // all requests' counts (eviction)
  std::vector<std::vector<double>> stored_;
  std::uint64_t steps_ = 0;
};

}  // namespace

PolicyEntry moe_infinity_policy_entry() {
  return counts_policy_entry<MoeInfinityPolicy>("moe-infinity", "activation-matrix prefetch (MoE-Infinity)");
}

}  // namespace ferry::moe
