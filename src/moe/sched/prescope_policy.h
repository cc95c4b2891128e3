// PreScope (predictor + PreSched + AsyncIO + host execution) and the oracle built on the same
// scheduler; see prescope_policy.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "moe/sched/policy.h"
#include "moe/sched/presched.h"
#include "moe/sched/recency_tracker.h"

namespace ferry::moe {

using PreSchedTiming = PlanTiming;  // policy.h

class PreScopePolicy : public Policy {
 public:
  explicit PreScopePolicy(const PolicyOptions& options);
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
  // One layer of the window: the model layer and, per expert, its probability and the tokens it
  // would get if activated.
  struct WindowLayer {
    int layer = 0;
    std::vector<float> p;
    std::vector<float> tokens;
  };
  // The predictions for the layers after route.layer (at most options.window of them).
  virtual void predict_window(const RouteInfo& route, std::vector<WindowLayer>& out);
  // Evictable experts outside the window (`keep`), in the order they should leave, with the
  // expected cost of evicting each (ascending).
  virtual void victims(const std::vector<ExpertId>& keep, std::vector<std::pair<ExpertId, double>>& out);
  // How likely `id` is to be used in the next step: 1 - exp(-token share x tokens per step).
  double reuse(ExpertId id) const;
  // Share of the tokens routed to `id` so far, with the calibration as prior (the eviction order:
  // the least routed leave first).
  double token_rate(ExpertId id) const;
  // Estimated link work queued now (what the plans and background prefetches queued, less the
  // device time since).
  double link_backlog_s() const { return backlog_after_plan_s_; }
  void add_link_backlog(double s) { backlog_after_plan_s_ += s; }

  PolicyContext ctx_;
  RecencyTracker recency_;
  PolicyOptions options_;
  std::unique_ptr<Predictor> predictor_;
  std::vector<std::uint64_t> activations_;  // [layer * E + e] -> tokens routed to it so far
  std::uint64_t steps_ = 0;
  std::uint64_t tokens_seen_ = 0;     // tokens of the steps so far
  int batch_ = 1;                     // tokens of the current step
  std::vector<double> prior_;         // [layer * E + e] -> calibration share of tokens (empty: top_k / E)
  std::unordered_map<std::uint32_t, float> window_p_;  // the last plan's predictions (kept out of eviction)

 private:
  PreSchedTiming timing_;
  double backlog_after_plan_s_ = 0;  // estimated link work queued when the last plan was made
  double plan_lead_s_ = 0;           // device time from that plan to the next layer
  int misses_ = 0;                   // demand loads of the current layer
  double layer_device_s_ = 0;        // the current layer's expert time on the device (estimate)
  double layer_host_s_ = 0;          // ... and on the host
  std::vector<std::vector<float>> scores_;
};

}  // namespace ferry::moe
