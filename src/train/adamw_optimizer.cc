#include "train/adamw_optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ferry::train {

AdamWOptimizer::AdamWOptimizer(std::size_t numel, AdamWOptions o) : options_(o), m_(numel, 0.0f), v_(numel, 0.0f) {
  FERRY_REQUIRE_FINITE(o.lr, >=, 0, "AdamW: lr");
  FERRY_REQUIRE_IN(o.beta1, 0, 1, "[)", "AdamW: beta1");
  FERRY_REQUIRE_IN(o.beta2, 0, 1, "[)", "AdamW: beta2");
  FERRY_REQUIRE_OP(o.eps, >, 0, "AdamW: eps");
  FERRY_REQUIRE_OP(o.weight_decay, >=, 0, "AdamW: weight decay");
}

void AdamWOptimizer::step(std::span<float> w, std::span<const float> g) {
  FERRY_CHECK(w.size() == m_.size() && g.size() == m_.size(), "AdamW built for ", m_.size(), " elements, stepped with ",
              w.size(), " weights and ", g.size(), " gradients");
  ++steps_;
  const AdamWOptions& o = options_;
  // The bias corrections in double, rounded once, as torch computes them in Python floats.
  const double bc1 = 1.0 - std::pow(static_cast<double>(o.beta1), static_cast<double>(steps_));
  const double bc2 = 1.0 - std::pow(static_cast<double>(o.beta2), static_cast<double>(steps_));
  const float step_size = static_cast<float>(o.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float decay = 1.0f - o.lr * o.weight_decay;
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] *= decay;
    m_[i] = o.beta1 * m_[i] + (1.0f - o.beta1) * g[i];
    v_[i] = o.beta2 * v_[i] + (1.0f - o.beta2) * g[i] * g[i];
    w[i] -= step_size * m_[i] / (std::sqrt(v_[i]) / bc2_sqrt + o.eps);
  }
}

void AdamWOptimizer::restore(std::span<const float> m, std::span<const float> v, std::int64_t steps) {
  FERRY_CHECK(m.size() == m_.size() && v.size() == v_.size(), "AdamW state of ", m.size(), " elements for ",
              m_.size());
  std::copy(m.begin(), m.end(), m_.begin());
  std::copy(v.begin(), v.end(), v_.begin());
  steps_ = steps;
}

}  // namespace ferry::train
