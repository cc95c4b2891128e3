#include "train/compute_only_strategy.h"

#include "train/checkpoint.h"

namespace ferry::train {

void ComputeOnlyStrategy::setup(FlatParams& params) {
  ps::SgdOptions sgd = context_.options.sgd;
  sgd.rescale = 1.0f;
  optimizer_ = std::make_unique<ps::SgdOptimizer>(params.size(), sgd);
}

void ComputeOnlyStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t) {
  out.put("weights", params.weights());
  out.put("velocity", optimizer_->velocity());
}

void ComputeOnlyStrategy::load_state(const StateReader& in, FlatParams& params) {
  in.floats_into("weights", params.weights());
  in.floats_into("velocity", optimizer_->mutable_velocity());
}

void ComputeOnlyStrategy::step(FlatParams& params, std::int64_t) { optimizer_->step(params.weights(), params.grads()); }

void ComputeOnlyStrategy::skip_step(FlatParams&, std::int64_t) {}

}  // namespace ferry::train
