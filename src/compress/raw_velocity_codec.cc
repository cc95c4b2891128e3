#include "compress/raw_velocity_codec.h"

#include "compress/codec_state.h"
#include "core/error.h"

namespace ferry::compress {

RawVelocityCodec::RawVelocityCodec(TensorInfo info, float momentum)
    : Codec(info), wire_(std::move(info)), momentum_(momentum), velocity_(info_.numel, 0.0f) {
  FERRY_REQUIRE_IN(momentum_, 0, 1, "[)", "momentum");
}

void RawVelocityCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  float* u = velocity_.data();
  for (std::size_t i = 0; i < grad.size(); ++i) u[i] = momentum_ * u[i] + grad[i];
  wire_.encode(velocity_, out);
}

void RawVelocityCodec::save_state(std::vector<std::byte>& out) const { save_float_vector(*this, velocity_, out); }

void RawVelocityCodec::load_state(std::span<const std::byte> state) {
  load_float_vector(*this, velocity_, state, "velocity");
}

}  // namespace ferry::compress
