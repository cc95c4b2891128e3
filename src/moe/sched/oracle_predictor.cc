#include "moe/sched/oracle_predictor.h"

namespace ferry::moe {

void OraclePredictor::observe(int layer, std::span<const int>, std::span<const float>) {
  const std::int64_t step = position_ < 0 ? 0 : position_ / future_->num_layers + (layer <= last_layer_ ? 1 : 0);
  position_ = step * future_->num_layers + layer;
  last_layer_ = layer;
}

void OraclePredictor::predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) {
  out.clear();
  const int L = future_->num_layers;
  const std::int64_t step = position_ < 0 ? 0 : position_ / L;
  for (int d = 0; d < lookahead; ++d) {
    const std::int64_t pos = step * L + in.layer + 1 + d;
    if ((!wrap_ && in.layer + 1 + d >= L) || pos >= future_->positions()) break;
    std::vector<float> row(future_->num_experts, 0.0f);
    for (int e : future_->at(pos).experts) row[e] = 1.0f;
    out.push_back(std::move(row));
  }
}

}  // namespace ferry::moe
