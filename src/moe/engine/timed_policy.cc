#include "moe/engine/timed_policy.h"

#include "core/clock.h"

namespace ferry::moe {

ScopedTimer::ScopedTimer(double* total) : total_(total), t0_(now_s()) {}
ScopedTimer::~ScopedTimer() { *total_ += now_s() - t0_; }

void TimedPredictor::predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) {
  ScopedTimer t(total_);
  inner_->predict(in, lookahead, out);
}

void TimedPredictor::observe(int layer, std::span<const int> experts, std::span<const float> weights) {
  ScopedTimer t(total_);
  inner_->observe(layer, experts, weights);
}

ExpertId TimedAdvisor::choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) {
  ScopedTimer t(total_);
  return inner_->choose_victim(candidates, incoming);
}

}  // namespace ferry::moe
