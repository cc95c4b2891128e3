#include "train/local_sgd_strategy.h"

#include "core/clock.h"
#include "core/error.h"
#include "train/checkpoint.h"

namespace ferry::train {

LocalSgdStrategy::LocalSgdStrategy(const StrategyContext& context)
    : context_(context), options_(LocalSgdOptions::of_spec(strategy_spec(context.options, name()))) {
  FERRY_REQUIRE(context.options.topology == Topology::kAllreduce,
                "localsgd needs --topology allreduce (it averages models with an allreduce)");
}

void LocalSgdStrategy::setup(FlatParams& params) {
  ps::SgdOptions sgd = context_.options.sgd;
  sgd.rescale = 1.0f;  // S-SGD iterations divide the gradient sum by N themselves
  optimizer_ = std::make_unique<WorkerOptimizer>(params.size(), context_.options.optimizer, sgd,
                                                 context_.options.lr_schedule);
  context_.comm->broadcast(std::as_writable_bytes(params.weights()), 0);
}

void LocalSgdStrategy::step(FlatParams& params, std::int64_t iteration) { update(params, iteration, true); }

// step() is called with a finite gradient, skip_step() with a non-finite one (run_training
// checked it); the S-SGD phase still checks the sum, which carries the other workers' too.
void LocalSgdStrategy::skip_step(FlatParams& params, std::int64_t iteration) { update(params, iteration, false); }

void LocalSgdStrategy::update(FlatParams& params, std::int64_t iteration, bool local_finite) {
  const LocalSgdOptions& d = options_;
  steps_ = iteration + 1;
  if (iteration < d.post_local) {
    allreduce_mean_step(*context_.comm, params, *optimizer_, iteration, comm_wait_s_);
    last_average_ = steps_;
  } else {
    if (local_finite) optimizer_->step(params.weights(), params.grads(), iteration);  // a local step: skipped alone
    if ((iteration - d.post_local + 1) % d.sync_every == 0) average_weights(params);
  }
}

void LocalSgdStrategy::average_weights(FlatParams& params) {
  auto w = params.weights();
  {
    ScopedTimer wait(&comm_wait_s_);
    context_.comm->allreduce_sum(w);
  }
  const float inv = 1.0f / static_cast<float>(context_.options.world.num_workers);
  for (auto& x : w) x *= inv;
  last_average_ = steps_;
}

void LocalSgdStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t) {
  out.put("weights", params.weights());  // this worker's own model between averagings
  optimizer_->save_state(out, "velocity");
  out.put_u64("steps", static_cast<std::uint64_t>(steps_));
  out.put_u64("last_average", static_cast<std::uint64_t>(last_average_));
}

void LocalSgdStrategy::load_state(const StateReader& in, FlatParams& params) {
  in.floats_into("weights", params.weights());
  optimizer_->load_state(in, "velocity");
  steps_ = static_cast<std::int64_t>(in.u64("steps"));
  last_average_ = static_cast<std::int64_t>(in.u64("last_average"));
}

void LocalSgdStrategy::finish(FlatParams& params) {
  // The final model is the average, as after a synchronisation.
  if (last_average_ != steps_) average_weights(params);
}

}  // namespace ferry::train
