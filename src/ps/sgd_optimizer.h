// SGD with momentum and weight decay as MXNet's KVStore server applies it (sgd_mom_update):
//
//   g   = rescale · g_sum + wd · w
//   v   = momentum · v − lr · g
//   w   = w + v
//
// With a constant learning rate this is the same trajectory as PyTorch's SGD (v' = μv' + g,
// w −= lr·v'), since v = −lr·v'. Used by the parameter server and by allreduce workers alike.
//
// `integrate` is the aggregate of EF21 (train/worker_momentum.h): the incoming gradient is an
// increment of the direction the workers hold, so the velocity sums them without decay,
// v = v − lr · rescale · g, w = w + v (μ = 1, no weight decay: the workers add it).
#pragma once

#include <span>
#include <vector>

namespace ferry::ps {

struct SgdOptions {
  float lr = 0.05f;           // learning rate η
  float momentum = 0.9f;      // μ; 0 disables the velocity buffer
  float weight_decay = 0.0f;  // L2 coefficient added to the gradient
  float rescale = 1.0f;       // multiplies the incoming gradient (1/N to average N workers' sums)
  bool integrate = false;     // EF21's aggregate: μ = 1 on increments; needs momentum = wd = 0
};

// Holds the velocity of one contiguous block of weights.
class SgdOptimizer {
 public:
  SgdOptimizer(std::size_t numel, SgdOptions options);
  // Applies one step to `weights` with gradient `grad` (same length as numel).
  void step(std::span<float> weights, std::span<const float> grad);
  void set_lr(float lr) { options_.lr = lr; }
  const SgdOptions& options() const { return options_; }
  std::span<const float> velocity() const { return velocity_; }
  std::span<float> mutable_velocity() { return velocity_; }

 private:
  SgdOptions options_;
  std::vector<float> velocity_;
};

}  // namespace ferry::ps
