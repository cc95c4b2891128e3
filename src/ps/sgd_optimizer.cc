#include "ps/sgd_optimizer.h"

#include "core/error.h"

namespace ferry::ps {

SgdOptimizer::SgdOptimizer(std::size_t numel, SgdOptions options) : options_(options) {
  FERRY_REQUIRE_OP(options.lr, >=, 0, "learning rate");
  FERRY_REQUIRE_IN(options.momentum, 0, 1, "[)", "momentum");
  FERRY_REQUIRE(!options.integrate || (options.momentum == 0 && options.weight_decay == 0),
                "an integrating optimizer (EF21's aggregate) takes no momentum or weight decay of its own, got momentum ",
                options.momentum, ", weight decay ", options.weight_decay);
  if (options_.momentum > 0 || options_.integrate) velocity_.assign(numel, 0.0f);
}

void SgdOptimizer::step(std::span<float> w, std::span<const float> grad) {
  FERRY_CHECK_EQ(w.size(), grad.size(), "weights vs gradients");
  const float lr = options_.lr, wd = options_.weight_decay, rs = options_.rescale;
  const float mu = options_.integrate ? 1.0f : options_.momentum;
  const std::size_t n = w.size();
  if (mu == 0) {
    for (std::size_t i = 0; i < n; ++i) w[i] -= lr * (rs * grad[i] + wd * w[i]);
    return;
  }
  FERRY_CHECK_EQ(velocity_.size(), n, "elements the optimizer was built for vs stepped with");
  float* v = velocity_.data();
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] - lr * (rs * grad[i] + wd * w[i]);
    w[i] += v[i];
  }
}

}  // namespace ferry::ps
