// Half-precision gradients.
#pragma once

#include "compress/codec.h"
#include "compress/codec_spec.h"

namespace ferry::compress {

// fp16 casting (Horovod's / BytePS's "fp16" compressor; Micikevicius et al. 2018 for fp16
// training): payload_i = half(x_i) with IEEE round-to-nearest-even, decode = float(payload_i).
// |x| >= 65520 becomes +-inf, |x| < 2^-25 becomes 0 (use ef=1 to keep what rounding loses).
// Wire: header + n little-endian binary16. Size 16 + 2n bytes.
class Fp16Codec final : public Codec {
 public:
  explicit Fp16Codec(TensorInfo info) : Codec(std::move(info)) {}

  std::string name() const override { return "fp16"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override { return size_bytes(info_.numel); }

  static std::size_t size_bytes(std::size_t numel);

 private:
  void check(std::span<const std::byte> payload) const;
};

}  // namespace ferry::compress
