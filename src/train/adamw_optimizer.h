// AdamW (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization") on one contiguous
// block of weights, step for step as torch.optim.AdamW computes it:
//
//   w   = w − lr · wd · w                      (decoupled weight decay)
//   m   = β1 · m + (1 − β1) · g
//   v   = β2 · v + (1 − β2) · g²
//   w   = w − (lr / (1 − β1^t)) · m / (√v / √(1 − β2^t) + ε)
//
// with t the number of steps taken, counting this one. The --optimizer adamw of the algorithms whose
// workers step their own optimizer (worker_optimizer.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ferry::train {

struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

class AdamWOptimizer {
 public:
  // InvalidArgument naming the option for lr < 0, betas outside [0, 1), eps <= 0, wd < 0.
  AdamWOptimizer(std::size_t numel, AdamWOptions options);
  void step(std::span<float> weights, std::span<const float> grad);
  // The learning rate of the next steps (a schedule's, lr_schedule.h).
  void set_lr(float lr) { options_.lr = lr; }
  const AdamWOptions& options() const { return options_; }
  std::int64_t steps() const { return steps_; }
  // The state, for checkpoints: first and second moments and the step count.
  std::span<const float> first_moment() const { return m_; }
  std::span<const float> second_moment() const { return v_; }
  void restore(std::span<const float> m, std::span<const float> v, std::int64_t steps);

 private:
  AdamWOptions options_;
  std::vector<float> m_, v_;
  std::int64_t steps_ = 0;
};

}  // namespace ferry::train
