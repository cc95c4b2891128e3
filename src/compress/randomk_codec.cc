#include "compress/randomk_codec.h"

#include <bit>

#include "compress/codec_state.h"
#include "compress/sparse_payload.h"
#include "core/error.h"

namespace ferry::compress {

RandomkOptions parse_randomk_options(SpecReader& spec) {
  RandomkOptions o;
  o.ratio = spec.get_double("ratio", o.ratio);
  o.seed = spec.get_uint("seed", o.seed);
  return o;
}

RandomkCodec::RandomkCodec(RandomkOptions options, TensorInfo info)
    : Codec(std::move(info)),
      options_(options),
      rng_(combine_seed(combine_seed(options.seed, info_.tensor_id),
                        static_cast<std::uint64_t>(info_.rank))) {
  FERRY_REQUIRE_IN(options_.ratio, 0, 1, "(]", "randomk: ratio");
  require_sparse_numel(info_.numel, "randomk");
  k_ = sparse_count(options_.ratio, info_.numel);
  bitmap_.assign(div_ceil(info_.numel, 64), 0);
}

std::size_t RandomkCodec::encoded_size_bytes() const { return sparse_size_bytes(k_); }

void RandomkCodec::draw() {
  const std::size_t n = info_.numel;
  std::uint64_t* bits = bitmap_.data();
  // Floyd: for j = n-k .. n-1, draw t in [0, j]; take t unless taken already, then take j.
  for (std::size_t j = n - k_; j < n; ++j) {
    std::size_t t = rng_.below(j + 1);
    if ((bits[t >> 6] >> (t & 63)) & 1u) t = j;
    bits[t >> 6] |= std::uint64_t{1} << (t & 63);
  }
  idx_.resize(k_);
  std::size_t out = 0;
  for (std::size_t w = 0; w < bitmap_.size(); ++w) {
    std::uint64_t word = bits[w];
    bits[w] = 0;  // leave the bitmap clear for the next draw
    while (word != 0) {
      idx_[out++] = static_cast<std::uint32_t>(64 * w + std::countr_zero(word));
      word &= word - 1;
    }
  }
  FERRY_CHECK_EQ(out, k_, "randomk: drawn vs wanted");
}

void RandomkCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  draw();
  write_sparse(out, CodecId::kRandomk, grad.size(), idx_, grad.data());
}

void RandomkCodec::encode_with_feedback(std::span<const float> grad, std::span<float> residual,
                                        std::vector<std::byte>& out, std::vector<float>&) {
  check_numel(grad.size(), "gradient");
  check_numel(residual.size(), "residual");
  const float* g = grad.data();
  float* e = residual.data();
  for (std::size_t i = 0; i < grad.size(); ++i) e[i] += g[i];
  draw();
  write_sparse(out, CodecId::kRandomk, grad.size(), idx_, e);
  for (std::uint32_t i : idx_) e[i] = 0.0f;
}

void RandomkCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  decode_sparse(payload, CodecId::kRandomk, out, false);
}

void RandomkCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  decode_sparse(payload, CodecId::kRandomk, acc, true);
}

void RandomkCodec::save_state(std::vector<std::byte>& out) const { save_random_stream(*this, rng_, out); }

void RandomkCodec::load_state(std::span<const std::byte> state) { load_random_stream(*this, rng_, state); }

}  // namespace ferry::compress
