// OD-SGD, one-step-delay SGD (Xu et al. 2020, "OD-SGD: One-step Delay Stochastic Gradient
// Descent for Distributed Training"). After W warm-up iterations of S-SGD, worker i at
// iteration t waits only for the global weights of version t (all workers' g(0..t−1) applied,
// pulled in the background during iteration t), and starts iteration t+1 at once from
//   w_i(t+1) = w_global(t) − η_l · Opt_l(g_i(t))
// while the push of g_i(t) and the pull of version t+1 run on the communication thread.
// The server applies the usual synchronous update w_global(t+1) = w_global(t) − η·Opt(mean g(t)).
// With --codec the post-warm-up pushes travel compressed (CD-SGD without its correction).
#pragma once

#include "train/delayed_ps_strategy.h"

namespace ferry::train {

class OdSgdStrategy final : public DelayedPsStrategy {
 public:
  explicit OdSgdStrategy(const StrategyContext& context);
};

}  // namespace ferry::train
