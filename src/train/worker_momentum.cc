#include "train/worker_momentum.h"

#include "core/error.h"
#include "train/gradient_codecs.h"

namespace ferry::train {

OptimizerSplit split_optimizer(const std::string& codec_spec, const ps::SgdOptions& sgd) {
  OptimizerSplit s;
  s.aggregate = sgd;
  if (is_uncompressed(codec_spec)) return s;
  const compress::CodecMomentum m = compress::codec_momentum(codec_spec);
  using P = compress::MomentumPlacement;
  if (m.placement == P::kAggregate) return s;
  float momentum = sgd.momentum;
  if (m.placement == P::kInCodec) {
    FERRY_REQUIRE(sgd.momentum == 0.0f || sgd.momentum == static_cast<float>(m.codec_momentum),
                  "the codec keeps its own momentum (", m.codec_momentum,
                  "), which replaces the optimizer's: --momentum must be 0 or ", m.codec_momentum, ", got ",
                  sgd.momentum, " (or add momentum_at=server to the codec to apply both)");
    momentum = 0.0f;  // the codec's own momentum correction takes its place
  }
  if (!m.increments && momentum == 0.0f && sgd.weight_decay == 0.0f && sgd.momentum == 0.0f)
    return s;  // nothing to move
  s.on_worker = true;
  s.momentum = momentum;
  s.weight_decay = sgd.weight_decay;
  s.mask = momentum > 0.0f ? m.mask_sent : compress::MomentumMaskFn{};
  s.increments = m.increments;
  s.aggregate.momentum = 0.0f;
  s.aggregate.weight_decay = 0.0f;
  s.aggregate.integrate = m.increments;
  return s;
}

WorkerMomentum::WorkerMomentum(std::size_t numel, const OptimizerSplit& split)
    : momentum_(split.momentum),
      weight_decay_(split.weight_decay),
      increments_(split.increments),
      mask_(split.mask),
      velocity_(numel, 0.0f) {
  FERRY_CHECK(split.on_worker, "WorkerMomentum for an optimizer that stays on the aggregate");
}

void WorkerMomentum::apply(std::span<float> grad, std::span<const float> weights) {
  FERRY_CHECK(grad.size() == velocity_.size() && (weight_decay_ == 0.0f || weights.size() == velocity_.size()),
              grad.size(), " gradients, ", weights.size(), " weights, velocity of ", velocity_.size());
  const float m = momentum_, wd = weight_decay_;
  float* u = velocity_.data();
  if (increments_) {
    for (std::size_t i = 0; i < grad.size(); ++i) {
      const float next = m * u[i] + (wd == 0.0f ? grad[i] : grad[i] + wd * weights[i]);
      grad[i] = next - u[i];
      u[i] = next;
    }
  } else if (wd == 0.0f) {
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = u[i] = m * u[i] + grad[i];
  } else {
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = u[i] = m * u[i] + (grad[i] + wd * weights[i]);
  }
}

void WorkerMomentum::mask(std::size_t offset, std::size_t length, std::span<const std::byte> payload) {
  if (!mask_) return;
  FERRY_CHECK(offset + length <= velocity_.size());
  mask_(payload, std::span<float>(velocity_).subspan(offset, length));
}

}  // namespace ferry::train
