#include "train/od_sgd_strategy.h"

namespace ferry::train {

OdSgdStrategy::OdSgdStrategy(const StrategyContext& context)
    : DelayedPsStrategy(context, "odsgd",
                        DelayedPsSchedule{.delayed = DelayedPsOptions::of_spec(strategy_spec(context.options, "odsgd")),
                                          .codec = context.options.codec}) {}

}  // namespace ferry::train
