#include "train/ssd_sgd_strategy.h"

namespace ferry::train {
namespace {

DelayedPsSchedule ssd_schedule(const DelayedOptions& d, const std::string& codec) {
  DelayedPsSchedule s;
  s.pull_every = d.delay_steps;
  s.glu = d.local_update == "glu";
  s.glu_coef = d.glu_coef;
  s.codec = codec;
  return s;
}

}  // namespace

SsdSgdStrategy::SsdSgdStrategy(const StrategyContext& context)
    : DelayedPsStrategy(context, "ssdsgd", ssd_schedule(context.options.delayed, context.options.codec)) {}

}  // namespace ferry::train
