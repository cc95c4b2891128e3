// Local SGD with periodic model averaging (Stich 2019, "Local SGD Converges Fast and
// Communicates Little"), and post-local SGD (Lin et al. 2020, "Don't Use Large Mini-Batches,
// Use Local SGD"): the first K iterations (post_local) are S-SGD; after them every worker
// steps its own optimizer on its own gradient,
//   w_i ← w_i − η·Opt_i(g_i(w_i))
// and every H iterations (sync_every) the models are averaged over the allreduce,
//   w_i ← (1/N) Σ_j w_j .
// Momentum is linear, so with H = 1 the averaged weights follow S-SGD exactly (the velocity
// buffers stay local; their mean is S-SGD's velocity). Options: the keys of its --algo spec,
// "localsgd:sync_every=4,post_local=0" (local_sgd_options.h).
#pragma once

#include <memory>

#include "train/local_sgd_options.h"
#include "train/strategy.h"
#include "train/worker_optimizer.h"

namespace ferry::train {

class LocalSgdStrategy final : public Strategy {
 public:
  explicit LocalSgdStrategy(const StrategyContext& context);
  std::string name() const override { return "localsgd"; }
  void setup(FlatParams& params) override;
  void step(FlatParams& params, std::int64_t iteration) override;
  void skip_step(FlatParams& params, std::int64_t iteration) override;
  void finish(FlatParams& params) override;
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override;
  void load_state(const StateReader& in, FlatParams& params) override;

 private:
  void update(FlatParams& params, std::int64_t iteration, bool local_finite);
  void average_weights(FlatParams& params);

  StrategyContext context_;
  LocalSgdOptions options_;
  std::unique_ptr<WorkerOptimizer> optimizer_;  // the run's --optimizer
  std::int64_t steps_ = 0;
  std::int64_t last_average_ = 0;  // steps_ at the last averaging
};

}  // namespace ferry::train
