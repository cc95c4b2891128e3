#include "train/ssd_sgd_strategy.h"

namespace ferry::train {
namespace {

DelayedPsSchedule ssd_schedule(const SsdSgdOptions& o, const std::string& codec) {
  DelayedPsSchedule s;
  s.delayed = o.delayed;
  s.pull_every = static_cast<int>(o.delay_steps);
  s.glu = o.glu;
  s.glu_coef = o.glu_coef;
  s.codec = codec;
  return s;
}

}  // namespace

SsdSgdStrategy::SsdSgdStrategy(const StrategyContext& context)
    : DelayedPsStrategy(context, "ssdsgd",
                        ssd_schedule(SsdSgdOptions::of_spec(strategy_spec(context.options, "ssdsgd")),
                                     context.options.codec)) {}

}  // namespace ferry::train
