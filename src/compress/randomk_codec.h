// Random-k sparsification: k uniformly chosen entries as (index, value) pairs.
#pragma once

#include <vector>

#include "compress/codec.h"
#include "compress/codec_spec.h"
#include "compress/rng.h"

namespace ferry::compress {

struct RandomkOptions {
  double ratio = 0.01;     // fraction kept, in (0, 1]: k = max(1, round(ratio * n)) (spec: ratio)
  std::uint64_t seed = 0;  // mixed with tensor_id and rank (spec key: seed)
};
RandomkOptions parse_randomk_options(SpecReader& spec);

// Random-k sparsification with memory (Stich, Cordonnier, Jaggi, "Sparsified SGD with Memory",
// NeurIPS 2018): C(x)_i = x_i for i in a uniformly random k-subset S, else 0 (not rescaled by
// n/k: with error feedback, on by default, the unsent mass stays in the residual).
// S is drawn with Floyd's algorithm (Bentley & Floyd, CACM 1987) into a bitmap, so the indices
// come out ascending in O(k + n/64).
// Wire: sparse_payload.h, size 16 + 8k bytes.
class RandomkCodec final : public Codec {
 public:
  RandomkCodec(RandomkOptions options, TensorInfo info);

  std::string name() const override { return "randomk"; }
  void save_state(std::vector<std::byte>& out) const override;  // the random stream's position
  void load_state(std::span<const std::byte> state) override;
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override;
  void encode_with_feedback(std::span<const float> grad, std::span<float> residual,
                            std::vector<std::byte>& out, std::vector<float>& scratch) override;

  std::size_t k() const { return k_; }

 private:
  // Fills idx_ with a fresh random k-subset, ascending.
  void draw();

  RandomkOptions options_;
  std::size_t k_;
  SplitMix64 rng_;
  std::vector<std::uint64_t> bitmap_;
  std::vector<std::uint32_t> idx_;
};

}  // namespace ferry::compress
