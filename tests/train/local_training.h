// Shared by the strategy tests: run a strategy for a few steps with threads as ranks, and
// compare weight vectors.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/local/local_communicator.h"
#include "core/finite.h"
#include "train/data/data_loader.h"
#include "train/data/synthetic_dataset.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/models/model.h"
#include "train/ps_setup.h"
#include "train/strategy.h"

namespace ferry::train::testing {

// 1024 synthetic 28 x 28 images of 10 classes (seed 7), made once: the data of the short runs.
// `algo` with `keys` folded into its spec where its strategy has them, as ferry train folds its
// flags: with_keys("odsgd", {{"warmup_steps", "2"}}) sets odsgd's W, and is "ssgd" for "ssgd".
inline std::string with_keys(const std::string& algo, const std::vector<std::pair<std::string, std::string>>& keys) {
  register_builtin_strategies();
  std::vector<SpecShorthand> shorthands;
  for (const auto& [key, value] : keys) shorthands.push_back({key, key, value});
  return fold_shorthands(algo, shorthands);
}

inline const Dataset& small_dataset() {
  static const Dataset d = make_synthetic_dataset(SyntheticOptions{1024, 10, 1, 28, 28, 1.0f, 7, 0});
  return d;
}

// Step values the observer sees besides 0..steps-1.
inline constexpr int kAfterSetup = -2;
inline constexpr int kAfterFinish = -1;

// What a worker rank sees: called after setup() (kAfterSetup), after every step with its index,
// and after finish() (kAfterFinish).
using StepObserver = std::function<void(comm::Communicator& comm, int step, FlatParams& params, Strategy& strategy,
                                        Model& model)>;
// Wraps a rank's communicator in a decorator (to count or shape its traffic), owned by the rank.
using CommWrapper = std::function<std::unique_ptr<comm::Communicator>(comm::Communicator& raw)>;

// Worker rank, step -> whether that worker's loss (hence its gradient) is made NaN at that step.
using GradientFault = std::function<bool(int rank, int step)>;

// Runs `steps` iterations of `algo` with options `so` on so.world (servers serve with the same
// codec), every worker training make_model(model_name, 3) on its shard of `data`, batch `batch`.
// As `ferry train` does, a worker whose gradient is not finite calls skip_step() instead of step(),
// and the strategy's layer gate is installed on the model. Each `observe` of a step sees the
// weights after strategy->complete() unless complete_each_step is false (then a gated strategy
// such as wfbp finishes its updates in the next forward, as in `ferry train`).
inline void run_strategy_locally(const std::string& algo, const StrategyOptions& so, const Dataset& data,
                                 std::int64_t batch, int steps, const StepObserver& observe,
                                 const std::string& model_name = "mlp", const CommWrapper& wrap = {},
                                 const GradientFault& fault = {}, bool complete_each_step = true) {
  register_builtin_strategies();
  torch::set_num_threads(1);
  const WorldLayout world = so.world;
  comm::run_local_ranks(world.num_workers + world.num_servers, [&](comm::Communicator& raw) {
    // OpenMP's thread count is per thread: without this each rank thread's BLAS calls would
    // start as many threads as the machine has cores.
    torch::set_num_threads(1);
    std::unique_ptr<comm::Communicator> wrapped = wrap ? wrap(raw) : nullptr;
    comm::Communicator* c = wrapped ? wrapped.get() : &raw;
    auto model = make_model(model_name, 3);
    const auto& info = strategy_info(algo);
    if (world.is_server(c->rank())) {
      std::vector<std::size_t> numels;
      for (const auto& p : model->parameters()) numels.push_back(p.numel());
      run_parameter_server(*c, world, numels, info.server_mode, so.sgd, so.codec, shapes_of(model->parameters()),
                           so.pull_codec);
      return;
    }
    DataLoader loader(data, DataLoaderOptions{batch, world.num_workers, c->rank(), 5, true});
    FlatParams params(model->parameters());
    StrategyOptions options = so;  // the strategy reads its keys from so.algo, else from `algo`
    if (options.algo.empty()) options.algo = canonical_algo(algo);
    auto strategy = info.make(StrategyContext{c, options});
    strategy->setup(params);
    model->set_layer_gate(strategy->layer_gate());
    if (observe) observe(*c, kAfterSetup, params, *strategy, *model);
    for (int t = 0; t < steps; ++t) {
      Batch b = loader.batch(t / loader.steps_per_epoch(), t % loader.steps_per_epoch());
      params.zero_grads();
      auto loss = torch::nn::functional::cross_entropy(model->forward(b.images), b.labels);
      if (fault && fault(c->rank(), t)) loss = loss * std::nanf("");  // every gradient becomes NaN
      loss.backward();
      params.gather_grads();
      if (all_finite(params.grads()))
        strategy->step(params, t);
      else
        strategy->skip_step(params, t);
      if (complete_each_step) strategy->complete(params);
      if (observe) observe(*c, t, params, *strategy, *model);
    }
    strategy->finish(params);
    if (observe) observe(*c, kAfterFinish, params, *strategy, *model);
  });
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

}  // namespace ferry::train::testing
