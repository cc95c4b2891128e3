// The policy's work, timed: the engine reports its per-token overhead (EngineStats::policy_s and
// predictor_s), so the predictor a policy is given and the victim choices it makes inside the
// store's demand loads run behind these wrappers.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "moe/predict/predictor.h"
#include "moe/store/expert_cache.h"

namespace ferry::moe {

// Accumulates steady-clock time into *total while alive.
class ScopedTimer {
 public:
  explicit ScopedTimer(double* total);
  ~ScopedTimer();
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  double* total_;  // the engine's stats field; the engine outlives every timer
  double t0_;
};

// A predictor whose predict() and observe() add their time into *total.
class TimedPredictor : public Predictor {
 public:
  TimedPredictor(std::unique_ptr<Predictor> inner, double* total) : inner_(std::move(inner)), total_(total) {}
  std::string name() const override { return inner_->name(); }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override;
  void observe(int layer, std::span<const int> experts, std::span<const float> weights) override;
  void reset_sequence() override { inner_->reset_sequence(); }
  bool sees_past_token() const override { return inner_->sees_past_token(); }

 private:
  std::unique_ptr<Predictor> inner_;
  double* total_;  // as ScopedTimer's
};

// An eviction advisor whose choices add their time into *total.
class TimedAdvisor : public EvictionAdvisor {
 public:
  TimedAdvisor(EvictionAdvisor* inner, double* total) : inner_(inner), total_(total) {}
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override;

 private:
  EvictionAdvisor* inner_;  // the engine's policy, which outlives this wrapper (both are the engine's)
  double* total_;           // as ScopedTimer's
};

}  // namespace ferry::moe
