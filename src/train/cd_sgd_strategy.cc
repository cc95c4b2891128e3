#include "train/cd_sgd_strategy.h"

namespace ferry::train {
namespace {

DelayedPsSchedule cd_schedule(const CdSgdOptions& o, const std::string& codec) {
  DelayedPsSchedule s;
  s.delayed = o.delayed;
  s.codec = codec;
  s.full_precision_every = static_cast<int>(o.correction_steps);
  return s;
}

}  // namespace

CdSgdStrategy::CdSgdStrategy(const StrategyContext& context)
    : DelayedPsStrategy(context, "cdsgd",
                        cd_schedule(CdSgdOptions::of_spec(strategy_spec(context.options, "cdsgd")),
                                    context.options.codec)) {}

}  // namespace ferry::train
