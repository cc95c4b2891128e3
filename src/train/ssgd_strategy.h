// S-SGD, synchronous data parallel SGD: every step uses the mean of all N workers' gradients,
//   w_{t+1} = w_t − η · Opt( (1/N) Σ_i g_i(w_t) )
// so N workers with batch B follow single-process SGD with batch N·B exactly.
//   allreduce: ring allreduce of the flat gradient, then the same optimizer step on every worker.
//   ps:        push the gradient, the servers sum and step (sync mode), pull version t+1.
// With a codec (StrategyOptions::codec) the gradients travel compressed, per tensor or key (see
// gradient_codecs.h); the mean is then the mean of the decoded gradients. With a codec with error
// feedback the momentum and weight decay move to the workers by default (worker_momentum.h):
// each worker compresses its velocity u_i <- m u_i + g_i + wd w and the optimizer applies
// w <- w - lr (1/N) sum_i decode(C(u_i)) without momentum of its own. On allreduce the optimizer is
// the run's --optimizer at its --lr-schedule (worker_optimizer.h); AdamW keeps its moments and its
// decoupled weight decay on the mean gradient, so nothing moves to the workers with it.
#pragma once

#include <memory>

#include "ps/key_layout.h"
#include "ps/kv_worker.h"
#include "train/gradient_codecs.h"
#include "train/strategy.h"
#include "train/worker_momentum.h"
#include "train/worker_optimizer.h"

namespace ferry::train {

class SsgdStrategy final : public Strategy {
 public:
  explicit SsgdStrategy(const StrategyContext& context);
  std::string name() const override { return "ssgd"; }
  void setup(FlatParams& params) override;
  void step(FlatParams& params, std::int64_t iteration) override;
  void skip_step(FlatParams& params, std::int64_t iteration) override;
  void finish(FlatParams& params) override;
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override;
  void load_state(const StateReader& in, FlatParams& params) override;

 private:
  void exchange(FlatParams& params, std::int64_t iteration, bool finite);

  StrategyContext context_;
  std::unique_ptr<WorkerOptimizer> optimizer_;   // allreduce: the worker-side optimizer (--optimizer)
  std::unique_ptr<ps::KeyLayout> layout_;        // ps
  std::unique_ptr<ps::KVWorker> kv_;             // ps
  std::unique_ptr<TensorAllreduceCodecs> allreduce_codecs_;  // allreduce with a codec
  std::unique_ptr<KeyPushCodecs> push_codecs_;               // ps with a codec
  std::unique_ptr<WorkerMomentum> momentum_;                 // momentum on the worker (codec with error feedback)
  std::int64_t steps_ = 0;
};

}  // namespace ferry::train
