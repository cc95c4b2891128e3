#include "compress/error_feedback_codec.h"

#include "compress/codec_state.h"
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

void ErrorFeedbackCodec::save_state(std::vector<std::byte>& out) const {
  std::vector<std::byte> inner;
  inner_->save_state(inner);
  CodecStateWriter w(*this, out);
  w.put_floats(residual_);
  w.put_bytes(inner);
}

void ErrorFeedbackCodec::load_state(std::span<const std::byte> state) {
  CodecStateReader in(*this, state);
  std::vector<float> residual(residual_.size());
  in.floats_into(residual, "residual");
  const auto inner = in.bytes("inner codec state");
  in.finish();
  inner_->load_state(inner);  // all or nothing: throws before changing anything
  residual_.swap(residual);
}

}  // namespace ferry::compress
