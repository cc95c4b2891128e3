#include "train/cd_sgd_strategy.h"

namespace ferry::train {

CdSgdStrategy::CdSgdStrategy(const StrategyContext& context)
    : DelayedPsStrategy(context, "cdsgd",
                        DelayedPsSchedule{1, false, 0.0f, context.options.codec,
                                          context.options.delayed.correction_steps}) {}

}  // namespace ferry::train
