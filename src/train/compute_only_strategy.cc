#include "train/compute_only_strategy.h"

#include "train/checkpoint.h"

namespace ferry::train {

void ComputeOnlyStrategy::setup(FlatParams& params) {
  ps::SgdOptions sgd = context_.options.sgd;
  sgd.rescale = 1.0f;
  optimizer_ = std::make_unique<WorkerOptimizer>(params.size(), context_.options.optimizer, sgd,
                                                 context_.options.lr_schedule);
}

void ComputeOnlyStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t) {
  out.put("weights", params.weights());
  optimizer_->save_state(out, "velocity");
}

void ComputeOnlyStrategy::load_state(const StateReader& in, FlatParams& params) {
  in.floats_into("weights", params.weights());
  optimizer_->load_state(in, "velocity");
}

void ComputeOnlyStrategy::step(FlatParams& params, std::int64_t iteration) {
  optimizer_->step(params.weights(), params.grads(), iteration);
}

void ComputeOnlyStrategy::skip_step(FlatParams&, std::int64_t) {}

}  // namespace ferry::train
