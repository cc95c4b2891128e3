// The optimizer a worker steps itself, SGD or AdamW (optimizer_choice.h), at the learning rate of
// the run's schedule (lr_schedule.h): S-SGD's on allreduce (on the mean gradient), local SGD's,
// DiLoCo's inner one, compute-only's. One object per worker and block of weights; its state
// (SGD's velocity, AdamW's moments) stays on the worker and goes into its checkpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "comm/communicator.h"
#include "ps/sgd_optimizer.h"
#include "train/adamw_optimizer.h"
#include "train/lr_schedule.h"
#include "train/optimizer_choice.h"

namespace ferry::train {

class FlatParams;
class StateReader;
class StateWriter;

class WorkerOptimizer {
 public:
  // `optimizer` and `lr_schedule`: canonical specs (StrategyOptions::optimizer, ::lr_schedule);
  // `sgd`: the learning rate, SGD's momentum, the weight decay and the rescale of the incoming
  // gradient (1/N for a sum of N workers' gradients).
  WorkerOptimizer(std::size_t numel, const std::string& optimizer, const ps::SgdOptions& sgd,
                  const std::string& lr_schedule);
  ~WorkerOptimizer();

  // One step of `weights` with `grad` at the scheduled learning rate of `iteration` (0-based),
  // times `lr_scale`. AdamW multiplies `grad` by the rescale in place first (SGD folds it into
  // its update).
  void step(std::span<float> weights, std::span<float> grad, std::int64_t iteration, float lr_scale = 1.0f);

  // The state, for checkpoints: SGD's velocity under `velocity_key` (empty without momentum),
  // AdamW's moments and step count under adamw_m, adamw_v and adamw_steps.
  void save_state(StateWriter& out, const std::string& velocity_key) const;
  void load_state(const StateReader& in, const std::string& velocity_key);

 private:
  float base_lr_;
  float rescale_;
  LrSchedule schedule_;
  std::unique_ptr<ps::SgdOptimizer> sgd_;
  std::unique_ptr<AdamWOptimizer> adamw_;
};

// One S-SGD step on the allreduce, as local SGD's post-local phase and DiLoCo's warm start run it
// with the workers' own optimizer: the gradients summed over `comm`'s workers, divided by their
// number (a rescale of 1 left to `optimizer`), one step of it on every worker; NaN and Inf survive
// the sum, so a bad gradient anywhere skips the step everywhere. The allreduce's time is added to
// `comm_wait_s`.
void allreduce_mean_step(comm::Communicator& comm, FlatParams& params, WorkerOptimizer& optimizer,
                         std::int64_t iteration, double& comm_wait_s);

}  // namespace ferry::train
