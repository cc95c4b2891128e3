// The compute-only reference: every worker steps its own optimizer on its own gradient and
// nothing is ever communicated (not even the initial weights). Not a training algorithm:
// its iteration time is the floor every distributed algorithm is measured against.
#pragma once

#include <memory>

#include "train/strategy.h"
#include "train/worker_optimizer.h"

namespace ferry::train {

class ComputeOnlyStrategy final : public Strategy {
 public:
  explicit ComputeOnlyStrategy(const StrategyContext& context) : context_(context) {}
  std::string name() const override { return "compute-only"; }
  void setup(FlatParams& params) override;
  void step(FlatParams& params, std::int64_t iteration) override;
  void skip_step(FlatParams& params, std::int64_t iteration) override;
  void finish(FlatParams& params) override {}
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override;
  void load_state(const StateReader& in, FlatParams& params) override;

 private:
  StrategyContext context_;
  std::unique_ptr<WorkerOptimizer> optimizer_;
};

}  // namespace ferry::train
