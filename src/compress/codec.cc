#include "compress/codec.h"

#include <algorithm>
#include <numeric>

#include "compress/codec_state.h"
#include "core/error.h"

namespace ferry::compress {

Codec::Codec(TensorInfo info) : info_(std::move(info)) {
  FERRY_REQUIRE(info_.numel > 0, "codec: tensor must have at least one element");
  if (!info_.shape.empty()) {
    std::int64_t prod = 1;
    for (auto d : info_.shape) {
      FERRY_REQUIRE(d > 0, "codec: tensor shape has a non-positive dimension ", d);
      prod *= d;
    }
    FERRY_REQUIRE(static_cast<std::size_t>(prod) == info_.numel, "codec: shape product ", prod,
                  " differs from numel ", info_.numel);
  }
}

void Codec::check_numel(std::size_t n, const char* what) const {
  FERRY_REQUIRE(n == info_.numel, name(), ": ", what, " has ", n, " elements, codec is for ",
                info_.numel);
}

void Codec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  std::vector<float> tmp(acc.size());
  decode(payload, tmp);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += tmp[i];
}

void Codec::save_state(std::vector<std::byte>& out) const { CodecStateWriter(*this, out); }

void Codec::load_state(std::span<const std::byte> state) {
  CodecStateReader(*this, state).finish();
}

bool Codec::custom_allreduce(std::span<float>, const AllreduceSumFn&, std::size_t) {
  return false;
}

void Codec::encode_with_feedback(std::span<const float> grad, std::span<float> residual,
                                 std::vector<std::byte>& out, std::vector<float>& scratch) {
  check_numel(grad.size(), "gradient");
  check_numel(residual.size(), "residual");
  float* e = residual.data();
  const float* g = grad.data();
  const std::size_t n = grad.size();
  for (std::size_t i = 0; i < n; ++i) e[i] += g[i];
  encode(residual, out);
  scratch.resize(n);
  decode(out, scratch);
  const float* d = scratch.data();
  for (std::size_t i = 0; i < n; ++i) e[i] -= d[i];
}

}  // namespace ferry::compress
