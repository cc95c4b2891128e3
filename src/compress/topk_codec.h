// Top-k sparsification: the k largest-magnitude entries as (index, value) pairs.
#pragma once

#include <vector>

#include "compress/codec.h"
#include "compress/codec_spec.h"
#include "compress/topk_sampled_select.h"

namespace ferry::compress {

struct TopkOptions {
  double ratio = 0.01;  // fraction kept, in (0, 1]: k = max(1, round(ratio * n)) (spec: ratio)
};
TopkOptions parse_topk_options(SpecReader& spec);

// Top-k sparsification (Aji & Heafield, "Sparse Communication for Distributed Gradient
// Descent", EMNLP 2017; with memory: Stich, Cordonnier, Jaggi, "Sparsified SGD with Memory",
// NeurIPS 2018):  C(x)_i = x_i if |x_i| is among the k largest |x_j|, else 0.
// Used with error feedback by default (spec ef=1): e += g; send top_k(e); e -= sent, so the
// sent entries of e become exactly zero. Selection: SampledTopkSelector (exact; one pass
// with a sampled threshold, TopkSelector's two-pass radix select as its fallback).
// Wire: sparse_payload.h, size 16 + 8k bytes.
class TopkCodec final : public Codec {
 public:
  TopkCodec(TopkOptions options, TensorInfo info);

  std::string name() const override { return "topk"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override;
  // Fused: e += g and candidate collection in one pass, select, zero sent entries.
  void encode_with_feedback(std::span<const float> grad, std::span<float> residual,
                            std::vector<std::byte>& out, std::vector<float>& scratch) override;

  std::size_t k() const { return k_; }

 private:
  TopkOptions options_;
  std::size_t k_;
  SampledTopkSelector selector_;
  std::vector<std::uint32_t> idx_;
};

}  // namespace ferry::compress
