#include "compress/dgc_codec.h"

#include <algorithm>
#include <cmath>

#include "compress/codec_state.h"
#include "compress/sparse_payload.h"
#include "core/error.h"

namespace ferry::compress {

DgcOptions parse_dgc_options(SpecReader& spec) {
  DgcOptions o;
  o.ratio = spec.get_double("ratio", o.ratio);
  o.momentum = spec.get_double("momentum", o.momentum);
  o.clip_norm = spec.get_double("clip", o.clip_norm);
  o.warmup_steps = spec.get_uint("warmup", o.warmup_steps);
  return o;
}

DgcCodec::DgcCodec(DgcOptions options, TensorInfo info)
    : Codec(std::move(info)),
      options_(options),
      momentum_(info_.numel, 0.0f),
      velocity_(info_.numel, 0.0f) {
  FERRY_REQUIRE_IN(options_.ratio, 0, 1, "(]", "dgc: ratio");
  FERRY_REQUIRE_IN(options_.momentum, 0, 1, "[)", "dgc: momentum");
  FERRY_REQUIRE_OP(options_.clip_norm, >=, 0, "dgc: clip");
  require_sparse_numel(info_.numel, "dgc");
}

double DgcCodec::density_at(std::uint64_t step) const {
  if (options_.warmup_steps == 0 || step >= options_.warmup_steps) return options_.ratio;
  const std::uint64_t stage = step * 4 / options_.warmup_steps;  // 0..3
  return std::max(options_.ratio, std::pow(0.25, static_cast<double>(stage + 1)));
}

std::size_t DgcCodec::encoded_size_bytes() const {
  return sparse_size_bytes(sparse_count(density_at(0), info_.numel));
}

void DgcCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  const std::size_t n = grad.size();
  const float* g = grad.data();
  float scale = 1.0f;
  if (options_.clip_norm > 0.0) {
    double sq = 0;
    for (std::size_t i = 0; i < n; ++i) sq += static_cast<double>(g[i]) * g[i];
    const double norm = std::sqrt(sq);
    if (norm > options_.clip_norm) scale = static_cast<float>(options_.clip_norm / norm);
  }
  const float m = static_cast<float>(options_.momentum);
  float* u = momentum_.data();
  float* v = velocity_.data();
  selector_.reset();
  constexpr std::size_t kChunk = 4096;  // fuse the update with the histogram while in L1
  for (std::size_t lo = 0; lo < n; lo += kChunk) {
    const std::size_t hi = std::min(n, lo + kChunk);
    for (std::size_t i = lo; i < hi; ++i) {
      u[i] = m * u[i] + scale * g[i];
      v[i] += u[i];
    }
    selector_.count(std::span<const float>(v + lo, hi - lo));
  }
  const std::size_t k = sparse_count(density_at(step_), n);
  selector_.select(velocity_, k, idx_);
  write_sparse(out, CodecId::kDgc, n, idx_, v);
  for (std::uint32_t i : idx_) {
    v[i] = 0.0f;
    u[i] = 0.0f;
  }
  ++step_;
}

void DgcCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  decode_sparse(payload, CodecId::kDgc, out, false);
}

void DgcCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  decode_sparse(payload, CodecId::kDgc, acc, true);
}

void DgcCodec::save_state(std::vector<std::byte>& out) const {
  CodecStateWriter w(*this, out);
  w.put_u64(step_);
  w.put_floats(momentum_);
  w.put_floats(velocity_);
}

void DgcCodec::load_state(std::span<const std::byte> state) {
  CodecStateReader in(*this, state);
  const std::uint64_t step = in.u64("step counter");
  std::vector<float> momentum(momentum_.size()), velocity(velocity_.size());
  in.floats_into(momentum, "momentum");
  in.floats_into(velocity, "velocity");
  in.finish();
  step_ = step;
  momentum_.swap(momentum);
  velocity_.swap(velocity);
}

}  // namespace ferry::compress
