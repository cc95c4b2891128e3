// The oracle: PreScope's scheduler fed the true routing to come (the next D layers, across step
// boundaries, with their exact token counts) and Belady's eviction (the expert whose next use is
// farthest leaves first; optimal for the number of misses, Belady 1966), plus one background
// prefetch per layer of the next expert needed beyond the window when Belady would admit it; it
// starts with the experts the future routes most. It needs the recorded
// future, so it runs only where that exists (the simulator, the trace replay): the bound every
// policy is measured against.
#include <algorithm>

#include "core/error.h"
#include "moe/trace/future_routing.h"
#include "moe/sched/oracle_predictor.h"
#include "moe/sched/prescope_policy.h"

namespace ferry::moe {
namespace {

class OraclePolicy : public PreScopePolicy {
 public:
  explicit OraclePolicy(const PolicyOptions& options) : PreScopePolicy(options), future_(options.future) {
    FERRY_REQUIRE(future_ != nullptr,
                  "policy 'oracle' needs the recorded routing to come: it runs in the simulator (ferry moe simulate)");
    options_.predictor = nullptr;  // its predictor is the recorded future
    // The start: the experts the recorded future routes most.
    options_.expert_counts.assign(static_cast<std::size_t>(future_->num_layers) * future_->num_experts, 0);
    for (std::int64_t pos = 0; pos < future_->positions(); ++pos)
      for (int e : future_->at(pos).experts)
        ++options_.expert_counts[static_cast<std::size_t>(pos % future_->num_layers) * future_->num_experts + e];
  }
  std::string name() const override { return "oracle"; }

  void attach(const PolicyContext& ctx) override {
    PreScopePolicy::attach(ctx);
    FERRY_REQUIRE(future_->num_layers == ctx.num_layers && future_->num_experts <= ctx.num_experts,
                  "oracle: the recorded routing has ", future_->num_layers, " layers x ", future_->num_experts,
                  " experts, the model ", ctx.num_layers, " x ", ctx.num_experts);
    predictor_ = std::make_unique<OraclePredictor>(future_, true);
  }

  // After the window's plan, one background prefetch: the next expert needed beyond the window
  // that is not on the device, if a victim is needed later than it (Belady with prefetching).
  // Only when the link is about idle, and only for an expert needed late enough that it arrives
  // in time (estimated layer times: resident experts on the device, missing ones at the cheaper of
  // host and transfer).
  void on_dispatched(const RouteInfo& route) override {
    PreScopePolicy::on_dispatched(route);
    const double T = ctx_.cost.transfer_s;
    if (link_backlog_s() > 0.5 * T) return;
    const std::int64_t now = oracle().position();
    const std::int64_t end = std::min(future_->positions(), now + 2 * static_cast<std::int64_t>(future_->num_layers));
    double until = 0;  // estimated device time from now to the start of position pos
    for (std::int64_t pos = now + 1; pos < end; ++pos) {
      const int layer = static_cast<int>(pos % future_->num_layers);
      const LayerRoute& r = future_->at(pos);
      const bool far_enough = pos > now + options_.window && until >= link_backlog_s() + T;
      until += ctx_.cost.device_layer_s;
      for (std::size_t i = 0; i < r.experts.size(); ++i)
        until += ctx_.cache->contains({layer, r.experts[i]})
                     ? ctx_.cost.device_expert_s
                     : std::min(ctx_.cost.host_expert_s(r.tokens[i]), T + ctx_.cost.device_expert_s);
      if (!far_enough) continue;
      for (int e : r.experts) {
        const ExpertId id{layer, e};
        if (ctx_.cache->contains(id)) continue;
        if (ctx_.cache->free_slots() == 0) {
          const auto c = ctx_.cache->evictable();
          if (c.empty()) return;
          const ExpertId victim = choose_victim(c, id);
          if (future_->next_use(victim, now) <= pos) return;
          ctx_.cache->evict(victim);
        }
        if (ctx_.cache->prefetch(id, kPriorityPrefetch + static_cast<int>(pos - now))) add_link_backlog(T);
        return;
      }
    }
  }

  // Belady weighted by what the next miss would cost (GreedyDual-like): the victim has the least
  // miss cost per layer until its next use, miss cost = min(host time of its tokens then, T + d);
  // an expert never used again goes first. At batch 1 every miss costs about the same, and this
  // is Belady's rule.
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId) override {
    const std::int64_t now = oracle().position();
    return *std::min_element(candidates.begin(), candidates.end(),
                             [&](ExpertId a, ExpertId b) { return keep_score(a, now) < keep_score(b, now); });
  }

 protected:
  void predict_window(const RouteInfo&, std::vector<WindowLayer>& out) override {
    out.clear();
    const std::int64_t now = oracle().position();
    for (int d = 1; d <= options_.window && now + d < future_->positions(); ++d) {
      WindowLayer w;
      w.layer = static_cast<int>((now + d) % future_->num_layers);
      w.p.assign(ctx_.num_experts, 0.0f);
      w.tokens.assign(ctx_.num_experts, 0.0f);
      const LayerRoute& r = future_->at(now + d);
      for (std::size_t i = 0; i < r.experts.size(); ++i) {
        w.p[r.experts[i]] = 1.0f;
        w.tokens[r.experts[i]] = static_cast<float>(r.tokens[i]);
      }
      out.push_back(std::move(w));
    }
  }

  // Farthest next use first; evicting one used again within a step costs a transfer later.
  void victims(const std::vector<ExpertId>& keep, std::vector<std::pair<ExpertId, double>>& out) override {
    out.clear();
    const std::int64_t now = oracle().position();
    std::vector<std::pair<ExpertId, double>> score;
    for (ExpertId id : ctx_.cache->evictable())
      if (std::find(keep.begin(), keep.end(), id) == keep.end()) score.push_back({id, keep_score(id, now)});
    std::sort(score.begin(), score.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [id, sc] : score) {
      const std::int64_t at = future_->next_use(id, now);
      out.push_back({id, at - now <= future_->num_layers ? miss_cost(id, at) : 0.0});
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  }

 private:
  double miss_cost(ExpertId id, std::int64_t at) const {
    return std::min(ctx_.cost.host_expert_s(future_->tokens_at(at, id.expert)),
                    ctx_.cost.transfer_s + ctx_.cost.device_expert_s);
  }
  double keep_score(ExpertId id, std::int64_t now) const {
    const std::int64_t at = future_->next_use(id, now);
    return at == FutureRouting::kNever ? -1.0 : miss_cost(id, at) / static_cast<double>(at - now);
  }
  const OraclePredictor& oracle() const { return static_cast<const OraclePredictor&>(*predictor_); }
  const FutureRouting* future_;  // owned by the caller, outlives the policy (PolicyOptions::future)
};

}  // namespace

std::unique_ptr<Policy> make_oracle_policy(const PolicyOptions& options) { return std::make_unique<OraclePolicy>(options); }

}  // namespace ferry::moe
