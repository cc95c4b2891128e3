#include "train/worker_optimizer.h"

#include "core/clock.h"
#include "core/error.h"
#include "core/finite.h"
#include "train/checkpoint.h"
#include "train/flat_params.h"

namespace ferry::train {

WorkerOptimizer::WorkerOptimizer(std::size_t numel, const std::string& optimizer, const ps::SgdOptions& sgd,
                                 const std::string& lr_schedule)
    : base_lr_(sgd.lr), rescale_(sgd.rescale), schedule_(LrSchedule::of_spec(lr_schedule)) {
  const OptimizerChoice choice = OptimizerChoice::of_spec(optimizer);
  if (choice.kind == OptimizerKind::kSgd) {
    sgd_ = std::make_unique<ps::SgdOptimizer>(numel, sgd);
    return;
  }
  FERRY_REQUIRE(!sgd.integrate, "--optimizer adamw cannot integrate increments (ef21's aggregate)");
  adamw_ = std::make_unique<AdamWOptimizer>(
      numel, AdamWOptions{sgd.lr, static_cast<float>(choice.beta1), static_cast<float>(choice.beta2),
                          static_cast<float>(choice.eps), sgd.weight_decay});
}

WorkerOptimizer::~WorkerOptimizer() = default;

void WorkerOptimizer::step(std::span<float> weights, std::span<float> grad, std::int64_t iteration, float lr_scale) {
  const float lr = schedule_.lr_at(base_lr_, iteration) * lr_scale;
  if (sgd_) {
    sgd_->set_lr(lr);
    sgd_->step(weights, grad);
    return;
  }
  if (rescale_ != 1.0f)
    for (float& g : grad) g *= rescale_;
  adamw_->set_lr(lr);
  adamw_->step(weights, grad);
}

void WorkerOptimizer::save_state(StateWriter& out, const std::string& velocity_key) const {
  if (sgd_) {
    out.put(velocity_key, sgd_->velocity());
    return;
  }
  out.put("adamw_m", adamw_->first_moment());
  out.put("adamw_v", adamw_->second_moment());
  out.put_u64("adamw_steps", static_cast<std::uint64_t>(adamw_->steps()));
}

void WorkerOptimizer::load_state(const StateReader& in, const std::string& velocity_key) {
  if (sgd_) {
    in.floats_into(velocity_key, sgd_->mutable_velocity());
    return;
  }
  adamw_->restore(in.floats("adamw_m"), in.floats("adamw_v"), static_cast<std::int64_t>(in.u64("adamw_steps")));
}

void allreduce_mean_step(comm::Communicator& comm, FlatParams& params, WorkerOptimizer& optimizer,
                         std::int64_t iteration, double& comm_wait_s) {
  auto g = params.grads();
  {
    ScopedTimer wait(&comm_wait_s);
    comm.allreduce_sum(g);
  }
  if (!all_finite(g)) return;
  const float inv = 1.0f / static_cast<float>(comm.size());
  for (float& x : g) x *= inv;
  optimizer.step(params.weights(), g, iteration);
}

}  // namespace ferry::train
