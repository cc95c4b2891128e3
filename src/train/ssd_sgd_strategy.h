// SSD-SGD, several-steps-delay SGD (Xu, Dong et al. 2020, "SSD-SGD: Communication
// Sparsification for Distributed Deep Learning Training"). After W warm-up iterations of
// S-SGD, every iteration pushes g_i(t) in the background, but the global weights are pulled
// only every k iterations (delay_steps); in between the worker runs on its local weights:
//   pull iterations (after W+k−1, W+2k−1, ...): launch pull of version t+1; at iteration t+1
//     the local weights are REPLACED by it before the local step;
//   every iteration: w_i ← w_i − η_l·Opt_l(g_i(t)) − c·(w_prev − w_last)/Δ        (GLU)
// where w_prev, w_last are the last two pulled global weights, Δ the server updates between
// them and c = glu_coef ("global gradient for local update": the global direction
// compensates the staleness of the local weights; local_update=sgd drops the term).
// With k = 1 and GLU off it is OD-SGD. With --codec the post-warm-up pushes travel compressed.
#pragma once

#include "train/delayed_ps_strategy.h"

namespace ferry::train {

class SsdSgdStrategy final : public DelayedPsStrategy {
 public:
  explicit SsdSgdStrategy(const StrategyContext& context);
};

}  // namespace ferry::train
