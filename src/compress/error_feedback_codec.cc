#include "compress/error_feedback_codec.h"

#include "core/error.h"

namespace ferry::compress {

ErrorFeedbackCodec::ErrorFeedbackCodec(std::unique_ptr<Codec> inner)
    : Codec(inner ? inner->info() : TensorInfo{}), inner_(std::move(inner)) {
  FERRY_CHECK(inner_ != nullptr, "error feedback needs an inner codec");
  residual_.assign(info_.numel, 0.0f);
}

void ErrorFeedbackCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  inner_->encode_with_feedback(grad, residual_, out, scratch_);
}

std::unique_ptr<Codec> with_error_feedback(std::unique_ptr<Codec> inner) {
  return std::make_unique<ErrorFeedbackCodec>(std::move(inner));
}

}  // namespace ferry::compress
