// Error feedback as a decorator: residual memory per tensor around any stateless codec.
#pragma once

#include <memory>
#include <vector>

#include "compress/codec.h"

namespace ferry::compress {

// Error feedback / memory (Seide et al. 2014, "1-bit SGD"; Stich, Cordonnier, Jaggi 2018;
// Karimireddy et al. 2019, "Error Feedback Fixes SignSGD", Algorithm 2):
//   e += g;   payload = C(e);   e -= decode(payload)
// Whatever C drops is kept and sent later, so over T steps
//   sum_t decode(payload_t) + e_T = sum_t g_t   (exactly, up to fp rounding).
// The payload format is the inner codec's; decode and encoded_size_bytes forward to it. The
// step itself is the inner codec's encode_with_feedback (sparsifiers fuse it).
// Spec: "<codec>:...,ef=1" (see codec_registry.h).
class ErrorFeedbackCodec final : public Codec {
 public:
  explicit ErrorFeedbackCodec(std::unique_ptr<Codec> inner);

  std::string name() const override { return inner_->name() + "+ef"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override {
    inner_->decode(payload, out);
  }
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override {
    inner_->decode_add(payload, acc);
  }
  std::size_t encoded_size_bytes() const override { return inner_->encoded_size_bytes(); }
  std::span<const float> residual() const override { return residual_; }
  // The residual, then the inner codec's own state as a nested blob.
  void save_state(std::vector<std::byte>& out) const override;
  void load_state(std::span<const std::byte> state) override;

  const Codec& inner() const { return *inner_; }

 private:
  std::unique_ptr<Codec> inner_;
  std::vector<float> residual_;
  std::vector<float> scratch_;  // decode buffer of the generic step
};

// Wraps `inner` in error feedback.
std::unique_ptr<Codec> with_error_feedback(std::unique_ptr<Codec> inner);

}  // namespace ferry::compress
