// CD-SGD (Yu, Dong et al. 2021, "CD-SGD: Distributed Stochastic Gradient Descent with
// Compression and Delay Compensation"): OD-SGD whose pushes are compressed, by default with
// MXNet-style 2-bit quantisation with error feedback (threshold; any --codec may replace
// it), off the critical path on the communication thread:
//   iterations W+k−1, W+2k−1, ... (k = correction_steps): push g_i(t) in full precision
//     (k-step correction); the residual of the codec is kept and sent with later pushes;
//   other post-warm-up iterations: push Q(g_i(t) + r_i), r_i ← g_i(t) + r_i − Q(·);
//   local step, delay compensation with the full-precision local gradient:
//     w_i(t+1) = w_global(t) − η_l·Opt_l(g_i(t)).
// Warm-up iterations are uncompressed S-SGD. With --codec none it is OD-SGD.
#pragma once

#include "train/delayed_ps_strategy.h"

namespace ferry::train {

class CdSgdStrategy final : public DelayedPsStrategy {
 public:
  explicit CdSgdStrategy(const StrategyContext& context);
};

}  // namespace ferry::train
