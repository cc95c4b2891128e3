#include "train/compute_only_strategy.h"

namespace ferry::train {

void ComputeOnlyStrategy::setup(FlatParams& params) {
  ps::SgdOptions sgd = context_.options.sgd;
  sgd.rescale = 1.0f;
  optimizer_ = std::make_unique<ps::SgdOptimizer>(params.size(), sgd);
}

void ComputeOnlyStrategy::step(FlatParams& params, std::int64_t) { optimizer_->step(params.weights(), params.grads()); }

}  // namespace ferry::train
