// 1-bit sign compression with error feedback, scaled by the mean magnitude (EF-signSGD).
#pragma once

#include <vector>

#include "compress/codec.h"
#include "compress/codec_spec.h"

namespace ferry::compress {

// EF-signSGD (Karimireddy, Rebjock, Stich, Jaggi, "Error Feedback Fixes SignSGD and other
// Gradient Compression Schemes", ICML 2019, Algorithm 1; 1-bit SGD of Seide et al. 2014):
//   p = g + e;   scale = ||p||_1 / n;   delta = scale * sign(p);   e = p - delta
// sign(0) = +1. Bits are packed 32 per little-endian word, bit (i % 32) of word i/32 is 1 for
// a negative value. Wire: header (aux = bits of scale, numel) + ceil(n/32) words, padding bits
// zero. Size 16 + 4*ceil(n/32) bytes.
class OnebitCodec final : public Codec {
 public:
  explicit OnebitCodec(TensorInfo info);

  std::string name() const override { return "onebit"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override { return size_bytes(info_.numel); }
  std::span<const float> residual() const override { return residual_; }
  void save_state(std::vector<std::byte>& out) const override;  // the residual
  void load_state(std::span<const std::byte> state) override;

  static std::size_t size_bytes(std::size_t numel);

 private:
  float check(std::span<const std::byte> payload) const;

  std::vector<float> residual_;
};

}  // namespace ferry::compress
