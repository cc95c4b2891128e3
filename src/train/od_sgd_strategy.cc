#include "train/od_sgd_strategy.h"

namespace ferry::train {

OdSgdStrategy::OdSgdStrategy(const StrategyContext& context)
    : DelayedPsStrategy(context, "odsgd", DelayedPsSchedule{1, false, 0.0f, context.options.codec, 0}) {}

}  // namespace ferry::train
