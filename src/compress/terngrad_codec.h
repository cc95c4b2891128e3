// TernGrad: unbiased stochastic ternarisation.
#pragma once

#include "compress/codec.h"
#include "compress/codec_spec.h"
#include "compress/rng.h"

namespace ferry::compress {

struct TerngradOptions {
  std::uint64_t seed = 0;  // mixed with tensor_id and rank (spec key: seed)
};
TerngradOptions parse_terngrad_options(SpecReader& spec);

// TernGrad (Wen, Xu, Yan, Wu, Wang, Chen, Li, "TernGrad: Ternary Gradients to Reduce
// Communication in Distributed Deep Learning", NeurIPS 2017, Eq. 4), per tensor:
//   s_t = max_i |g_i|,   g~_i = s_t * sign(g_i) * b_i,   b_i ~ Bernoulli(|g_i| / s_t)
// E[g~] = g (unbiased). The paper's optional gradient clipping (2.5 sigma) is not applied.
// Codes as twobit (ternary_pack.h): 11 = +s_t, 10 = -s_t, 00 = 0.
// Wire: header (aux = bits of s_t, numel) + ceil(n/16) words. Size 16 + 4*ceil(n/16) bytes.
class TerngradCodec final : public Codec {
 public:
  TerngradCodec(TerngradOptions options, TensorInfo info);

  std::string name() const override { return "terngrad"; }
  void save_state(std::vector<std::byte>& out) const override;  // the random stream's position
  void load_state(std::span<const std::byte> state) override;
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override { return size_bytes(info_.numel); }

  static std::size_t size_bytes(std::size_t numel);

 private:
  float check(std::span<const std::byte> payload) const;

  TerngradOptions options_;
  SplitMix64 rng_;
};

}  // namespace ferry::compress
