// The 1-D parameters of a codec that keeps the momentum itself (DGC), sent raw: the velocity in
// fp32, so that biases and normalisation parameters keep the optimizer's momentum.
#pragma once

#include <vector>

#include "compress/codec.h"
#include "compress/none_codec.h"

namespace ferry::compress {

// u <- m u + g;  payload = u (NoneCodec's wire: header + n fp32). The aggregate applies
// w <- w - lr mean_i(u_i), which for every worker's u is momentum SGD exactly: what DGC's
// reference implementation does with the tensors it leaves dense (momentum correction without
// accumulation, Lin et al., ICLR 2018; github.com/synxlin/deep-gradient-compression, which
// compresses only parameters of more than one dimension). Built by the registry
// (codec_registry.h, raw_1d), not by a spec name of its own.
class RawVelocityCodec final : public Codec {
 public:
  RawVelocityCodec(TensorInfo info, float momentum);

  std::string name() const override { return "none+velocity"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override {
    wire_.decode(payload, out);
  }
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override {
    wire_.decode_add(payload, acc);
  }
  std::size_t encoded_size_bytes() const override { return wire_.encoded_size_bytes(); }
  void save_state(std::vector<std::byte>& out) const override;  // the velocity
  void load_state(std::span<const std::byte> state) override;

  std::span<const float> velocity() const { return velocity_; }

 private:
  NoneCodec wire_;
  float momentum_;
  std::vector<float> velocity_;
};

}  // namespace ferry::compress
