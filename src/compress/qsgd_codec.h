// QSGD: unbiased stochastic quantisation to s levels per bucket.
#pragma once

#include "compress/codec.h"
#include "compress/codec_spec.h"
#include "compress/rng.h"

namespace ferry::compress {

struct QsgdOptions {
  std::uint32_t levels = 15;       // s >= 1 quantisation levels (spec key: levels), <= 65535
  std::uint32_t bucket_size = 128; // d >= 1 elements sharing one norm (spec key: bucket)
  std::uint64_t seed = 0;          // mixed with tensor_id and rank (spec key: seed)
};
QsgdOptions parse_qsgd_options(SpecReader& spec);

// QSGD (Alistarh, Grubic, Li, Tomioka, Vojnovic, "QSGD: Communication-Efficient SGD via
// Gradient Quantization and Encoding", NeurIPS 2017), with buckets of d elements (Sec. 3.1):
//   Q_s(v_i) = ||v||_2 * sign(v_i) * xi_i / s,   l = floor(s |v_i| / ||v||_2),
//   xi_i = l + 1 with probability s |v_i| / ||v||_2 - l, else l.
// E[Q_s(v)] = v (unbiased); E||Q_s(v) - v||^2 <= w ||v||^2 per bucket, w = min(d/s^2, sqrt(d)/s).
// With error feedback (ef=1) the residual stays bounded only if w < 1 (the compressor must
// be a contraction, Karimireddy et al. 2019); the defaults s = 15, d = 128 give w = 0.57.
// Each element is a field of 1 + bit_width(s) bits: (level << 1) | sign, packed LSB-first
// into 32-bit words (bit_stream.h); the Elias coding of the paper is not used.
// Wire: header (aux = s, numel) + u32 d + ceil(n/d) fp32 norms + the bit stream.
// Size 16 + 4 + 4*ceil(n/d) + 4*ceil(n*(1+bit_width(s))/32) bytes.
// Non-finite input: encode() throws InvalidArgument naming the first NaN or Inf element (and a
// bucket whose norm exceeds the fp32 range), because one Inf would make the whole bucket's
// norm Inf and every level NaN; the trainer never encodes such a gradient (it skips the step,
// docs/reliability.md). decode() refuses stored norms that are negative, NaN or Inf.
class QsgdCodec final : public Codec {
 public:
  QsgdCodec(QsgdOptions options, TensorInfo info);

  std::string name() const override { return "qsgd"; }
  void save_state(std::vector<std::byte>& out) const override;  // the random stream's position
  void load_state(std::span<const std::byte> state) override;
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override {
    return size_bytes(info_.numel, options_.levels, options_.bucket_size);
  }

  static std::size_t size_bytes(std::size_t numel, std::uint32_t levels, std::uint32_t bucket);

 private:
  struct Parsed {
    std::uint32_t levels;
    std::uint32_t bucket;
  };
  Parsed check(std::span<const std::byte> payload) const;
  template <bool kAdd>
  void unpack(std::span<const std::byte> payload, const Parsed& p, float* out) const;

  QsgdOptions options_;
  SplitMix64 rng_;
};

}  // namespace ferry::compress
