// PreScope (predictor + PreSched + AsyncIO + host execution + idle-link speculation) and the
// oracle built on the same scheduler; see prescope_policy.cc.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "moe/predict/cooccurrence_predictor.h"
#include "moe/sched/policy.h"
#include "moe/sched/presched.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {

using PreSchedTiming = PlanTiming;  // policy.h

// The keys of prescope and of the policies built on its scheduler (oracle, prescope-perfect).
struct PreScopeOptions {
  int window = 3;         // spec key window: layers PreSched plans ahead, 1 to 8; 0 (window=auto) = the
                          // layers one transfer lasts (ceil(T / layer time), 1 to 8)
  int horizon = 0;        // spec key horizon: layers idle-link speculation looks ahead, 0 to 1024; 0 = one
                          // token (the oracle and prescope-perfect: two)
  bool speculate = true;  // spec key speculate: fill the idle link (docs/moe.md)
  // spec key predictor (prescope only: the others' predictor is the recorded future): a predictor
  // spec (predictor_registry.h), built when the policy is attached; empty: the caller's
  // (PolicyInputs::predictor), else next-gate from the model's routers.
  std::string predictor;
};
// Reads window, speculate, horizon and, with `predictor_key`, predictor (an unknown predictor
// fails here, before any run).
PreScopeOptions parse_prescope_options(SpecReader& spec, bool predictor_key);
// The keys parse_prescope_options() reads, in its order, for the registry entries.
std::vector<PolicyKey> prescope_keys(bool predictor_key);

class PreScopePolicy : public Policy {
 public:
  static constexpr std::int64_t kNoUse = std::numeric_limits<std::int64_t>::max();  // no predicted use
  // `expert_counts`: calibration routing counts [layer * E + e] (the start and the prior; empty:
  // none); `predictor`: builds the predictor at attach (empty: next-gate from the model's routers).
  PreScopePolicy(PreScopeOptions options, std::vector<std::uint64_t> expert_counts, PredictorFactory predictor);
  std::string name() const override { return "prescope"; }
  void attach(const PolicyContext& ctx) override;
  void on_route(const RouteInfo& route, std::span<Placement> placement) override;
  void on_access(ExpertId id, bool hit) override;
  void on_dispatched(const RouteInfo& route) override;
  void on_step_done() override { ++steps_; }
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override;
  const PreSchedTiming& timing() const { return timing_; }
  PlanTiming plan_timing() const override { return timing_; }

 protected:
  // One predicted layer: the model layer, its position (step * layers + layer) and, per expert,
  // its probability and the tokens it would get if activated.
  struct WindowLayer {
    int layer = 0;
    std::int64_t position = 0;
    std::vector<float> p;
    std::vector<float> tokens;
  };
  // The predictions for the `depth` layers after route.layer, across the token boundary where the
  // predictor sees past it (else PreScope's own cross-token table fills the next token's rows).
  virtual void predict_window(const RouteInfo& route, int depth, std::vector<WindowLayer>& out);
  // Evictable experts outside the window (`keep`), in the order they should leave, with the
  // expected cost of evicting each (ascending), for the plan.
  virtual void victims(const std::vector<ExpertId>& keep, std::vector<std::pair<ExpertId, double>>& out);
  // Layers speculation looks ahead (horizon key, else one token plus the layers one transfer
  // lasts, at most two tokens: what arrives in time within the next token's layers).
  virtual int default_horizon() const;
  // True when the predictions are the recorded future (oracle, prescope-perfect): then what no row
  // predicts is not used, and no long-run share props up an expert's worth.
  virtual bool exact_future() const { return false; }
  // The position of the next use of `id` past every row (the oracle knows it; kNoUse otherwise).
  virtual std::int64_t use_past_rows(ExpertId) const { return kNoUse; }
  // How likely `id` is to be used in the next step: 1 - exp(-token share x tokens per step).
  double reuse(ExpertId id) const;
  // Share of the tokens routed to `id` so far, with the calibration as prior (the eviction order:
  // the least routed leave first).
  double token_rate(ExpertId id) const;
  // What a miss of `id` with `tokens` routed tokens costs over a hit: the cheaper of the host and
  // an on-demand load, less the device compute.
  double miss_saving(int tokens) const;
  // The tokens `id` is expected to get at its next use (exact with the recorded future).
  int miss_tokens(ExpertId id) const;
  // Estimated link work queued now (what the plans and speculation queued, less the device time since).
  double link_backlog_s() const { return backlog_after_plan_s_; }
  std::int64_t position() const { return position_; }

  PolicyContext ctx_;
  RecencyTracker recency_;
  PreScopeOptions options_;
  std::vector<std::uint64_t> expert_counts_;  // the calibration's (the oracle: the recorded future's)
  PredictorFactory predictor_factory_;        // see the constructor
  std::unique_ptr<Predictor> predictor_;
  std::vector<std::uint64_t> activations_;  // [layer * E + e] -> tokens routed to it so far
  std::uint64_t steps_ = 0;
  std::uint64_t tokens_seen_ = 0;     // tokens of the steps so far
  int batch_ = 1;                     // tokens of the current step
  std::vector<double> prior_;         // [layer * E + e] -> calibration share of tokens (empty: top_k / E)

 private:
  // The future as the last prediction saw it, per [layer * E + e]: probability of a use within the
  // horizon, the expected 1 / distance of the first use (sum_d P(first use at d) / d; what keeping
  // it is worth per layer, in misses), position of the first likely use (p >= 1/2; kNoUse: none),
  // tokens then.
  struct UseView {
    std::vector<float> p;
    std::vector<float> rate;
    std::vector<std::int64_t> at;
    std::vector<float> tokens;
  };
  void build_view(std::span<const WindowLayer> rows);
  // The order in which experts leave (smallest first): the expected loss (predicted: the chance of
  // a use within the rows, not below its share of a step, x its miss cost; recorded future: rate x
  // miss cost, Belady's order), then the farthest first use, the least routed, the least recent.
  using VictimKey = std::tuple<double, std::int64_t, double, std::uint64_t>;
  VictimKey victim_key(ExpertId id) const;
  // Idle-link speculation over the rows past the plan's window (docs/moe.md).
  void speculate(const std::vector<WindowLayer>& rows, int window, double lead_s, const std::vector<ExpertId>& keep);
  int window_layers() const;
  int transfer_layers() const;  // ceil(T / estimated layer time); 0 before the first estimate

  PreSchedTiming timing_;
  std::unique_ptr<CooccurrencePredictor> cross_;  // the next token's rows when the predictor stops at the last layer
  UseView view_;
  std::int64_t position_ = -1;       // step * layers + the layer being run
  double backlog_after_plan_s_ = 0;  // estimated link work queued when the last plan was made
  double plan_lead_s_ = 0;           // device time from that plan to the next layer
  double layer_s_ = 0;               // estimated time of one layer (moving average)
  double spec_used_ = 0;           // uses of experts speculation brought, while they stayed
  double spec_expected_ = 0;       // the predicted probabilities of its prefetches, summed
  double spec_victim_misses_ = 0;  // uses of experts it evicted, while they were gone
  std::unordered_set<std::uint32_t> spec_brought_;  // experts speculation brought (ExpertId::key), still resident
  std::unordered_set<std::uint32_t> spec_victims_;  // experts it evicted, not back yet
  int misses_ = 0;                   // demand loads of the current layer
  double layer_device_s_ = 0;        // the current layer's expert time on the device (estimate)
  double layer_host_s_ = 0;          // ... and on the host
  std::vector<std::vector<float>> scores_, cross_scores_;
};

}  // namespace ferry::moe
