// A test-only training strategy delivered as a plugin (core/plugin.h): "test-scaled", S-SGD whose
// gradients are multiplied by its spec key `scale` before they are exchanged. Its option is read
// in this file and nowhere else, yet it reaches `ferry train --algo test-scaled:scale=0.5`,
// Python's DistributedOptimizer(..., algo="test-scaled", scale=0.5), the job sent to the
// parameter servers and checkpoints (tests/e2e/plugin_strategy.sh, python/tests/test_plugin.py).
//
// With SGD with momentum and no weight decay, and a power-of-two scale s, test-scaled at lr η is
// S-SGD at lr s·η bit for bit: multiplying by s is exact, so the velocity is s times S-SGD's
// and η·(s·v) = (s·η)·v exactly.
#include <memory>
#include <string>

#include "core/error.h"
#include "core/spec.h"
#include "train/algo_spec.h"
#include "train/strategy.h"

namespace {

using namespace ferry;
using namespace ferry::train;

constexpr const char* kName = "test-scaled";

double read_scale(SpecReader& r) {
  const double scale = r.get_double("scale", 1.0);
  FERRY_REQUIRE_OP(scale, >, 0, "--algo ", r.name(), ": scale");
  return scale;
}

class ScaledSgdStrategy final : public Strategy {
 public:
  explicit ScaledSgdStrategy(const StrategyContext& context)
      : scale_(static_cast<float>(read_algo_spec(strategy_spec(context.options, kName), read_scale))) {
    StrategyContext inner = context;
    inner.options.algo = "ssgd";
    ssgd_ = strategy_info("ssgd").make(inner);
  }
  std::string name() const override { return kName; }
  void setup(FlatParams& params) override { ssgd_->setup(params); }
  void step(FlatParams& params, std::int64_t iteration) override {
    for (float& g : params.grads()) g *= scale_;
    ssgd_->step(params, iteration);
    comm_wait_s_ = ssgd_->comm_wait_s();
  }
  void complete(FlatParams& params) override { ssgd_->complete(params); }
  void skip_step(FlatParams& params, std::int64_t iteration) override { ssgd_->skip_step(params, iteration); }
  void finish(FlatParams& params) override { ssgd_->finish(params); }
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override {
    ssgd_->save_state(out, params, iterations);
  }
  void load_state(const StateReader& in, FlatParams& params) override { ssgd_->load_state(in, params); }

 private:
  float scale_;
  std::unique_ptr<Strategy> ssgd_;
};

}  // namespace

extern "C" void ferry_plugin_register() {
  register_strategy({.name = kName, .summary = "test plugin: S-SGD of the gradients times scale",
                     .topologies = {Topology::kAllreduce, Topology::kParameterServer},
                     .read_options = [](SpecReader& r) { read_scale(r); },
                     .make = [](const StrategyContext& c) -> std::unique_ptr<Strategy> {
                       return std::make_unique<ScaledSgdStrategy>(c);
                     }});
}
