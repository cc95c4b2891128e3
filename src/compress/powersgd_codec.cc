#include "compress/powersgd_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "compress/codec_state.h"
#include "compress/low_rank.h"
#include "compress/rng.h"
#include "compress/wire_format.h"
#include "core/error.h"

namespace ferry::compress {
namespace {
constexpr std::uint8_t kModeRaw = 0;
constexpr std::uint8_t kModeLowRank = 1;
}  // namespace

PowersgdOptions parse_powersgd_options(SpecReader& spec) {
  PowersgdOptions o;
  std::int64_t rank = spec.get_int("rank", o.rank);
  FERRY_REQUIRE_IN(rank, 1, 1024, "[]", "powersgd: rank");
  o.rank = static_cast<std::uint32_t>(rank);
  o.min_compression_rate = spec.get_double("min_rate", o.min_compression_rate);
  o.warmup_steps = spec.get_uint("warmup", o.warmup_steps);
  o.seed = spec.get_uint("seed", o.seed);
  return o;
}

PowersgdCodec::PowersgdCodec(PowersgdOptions options, TensorInfo info)
    : Codec(std::move(info)), options_(options) {
  FERRY_REQUIRE_OP(options_.rank, >=, 1, "powersgd: rank");
  FERRY_REQUIRE_OP(options_.min_compression_rate, >=, 1, "powersgd: min_rate");
  if (info_.shape.size() >= 2) {
    rows_ = static_cast<std::size_t>(info_.shape[0]);
    cols_ = info_.numel / rows_;
  } else {
    rows_ = 1;
    cols_ = info_.numel;
  }
  rank_ = std::min<std::size_t>({options_.rank, rows_, cols_});
  compressed_ = info_.shape.size() >= 2 &&
                static_cast<double>(rows_) * static_cast<double>(cols_) >=
                    options_.min_compression_rate * static_cast<double>(rank_ * (rows_ + cols_));
  FERRY_REQUIRE(!compressed_ || (rows_ <= 0xffffffffu && cols_ <= 0xffffffffu),
                "powersgd: matrix ", rows_, " x ", cols_, " exceeds u32 dimensions");
  if (compressed_) {
    residual_.assign(info_.numel, 0.0f);
    p_.assign(rank_ * rows_, 0.0f);
    q_.resize(rank_ * cols_);
    // Shared N(0,1) start (Box-Muller): identical on every worker for this tensor.
    SplitMix64 rng(combine_seed(options_.seed, info_.tensor_id));
    for (std::size_t i = 0; i < q_.size(); ++i) {
      const double u1 = (static_cast<double>(rng.next() >> 11) + 1.0) * 0x1.0p-53;
      const double u2 = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
      q_[i] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
    }
  }
}

std::size_t PowersgdCodec::raw_size_bytes(std::size_t numel) { return kHeaderBytes + 4 * numel; }
std::size_t PowersgdCodec::low_rank_size_bytes(std::size_t rows, std::size_t cols,
                                               std::size_t r) {
  return kHeaderBytes + 8 + 4 * r * (rows + cols);
}

std::size_t PowersgdCodec::encoded_size_bytes() const {
  if (!compressed_ || options_.warmup_steps > 0) return raw_size_bytes(info_.numel);
  return low_rank_size_bytes(rows_, cols_, rank_);
}

void PowersgdCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  const std::size_t n = grad.size();
  if (send_raw()) {
    write_header(out, raw_size_bytes(n), {.codec = CodecId::kPowersgd, .flags = kModeRaw, .numel = n});
    std::memcpy(out.data() + kHeaderBytes, grad.data(), grad.size_bytes());
    ++step_;
    return;
  }
  float* m = residual_.data();
  for (std::size_t i = 0; i < n; ++i) m[i] += grad[i];  // M = g + e, kept in e
  low_rank_mq(m, rows_, cols_, q_.data(), rank_, p_.data());
  orthonormalize(p_.data(), rows_, rank_);
  low_rank_mtp(m, rows_, cols_, p_.data(), rank_, q_.data());  // warm start for next step
  write_header(out, low_rank_size_bytes(rows_, cols_, rank_),
               {.codec = CodecId::kPowersgd,
                .flags = kModeLowRank,
                .aux = static_cast<std::uint32_t>(rank_),
                .numel = n});
  std::byte* d = out.data() + kHeaderBytes;
  store_le<std::uint32_t>(d, static_cast<std::uint32_t>(rows_));
  store_le<std::uint32_t>(d + 4, static_cast<std::uint32_t>(cols_));
  std::memcpy(d + 8, p_.data(), 4 * p_.size());
  std::memcpy(d + 8 + 4 * p_.size(), q_.data(), 4 * q_.size());
  low_rank_outer(m, rows_, cols_, p_.data(), q_.data(), rank_, -1.0f, true);  // e = M - P^Q^T
  ++step_;
}

bool PowersgdCodec::custom_allreduce(std::span<float> grad_inout,
                                     const AllreduceSumFn& allreduce_sum,
                                     std::size_t world_size) {
  check_numel(grad_inout.size(), "gradient");
  FERRY_REQUIRE_OP(world_size, >=, 1, "powersgd: world_size");
  if (send_raw()) {
    allreduce_sum(grad_inout);
    ++step_;
    return true;
  }
  const std::size_t n = grad_inout.size();
  float* m = residual_.data();
  float* g = grad_inout.data();
  for (std::size_t i = 0; i < n; ++i) m[i] += g[i];
  low_rank_mq(m, rows_, cols_, q_.data(), rank_, p_.data());
  allreduce_sum(p_);
  orthonormalize(p_.data(), rows_, rank_);
  low_rank_mtp(m, rows_, cols_, p_.data(), rank_, q_.data());
  allreduce_sum(q_);
  low_rank_outer(g, rows_, cols_, p_.data(), q_.data(), rank_, 1.0f, false);  // the sum
  const float inv_w = 1.0f / static_cast<float>(world_size);
  for (std::size_t i = 0; i < n; ++i) m[i] -= g[i] * inv_w;
  for (float& x : q_) x *= inv_w;
  ++step_;
  return true;
}

template <bool kAdd>
void PowersgdCodec::decode_into(std::span<const std::byte> payload, std::span<float> out) const {
  const std::size_t n = info_.numel;
  PayloadHeader h = read_header(payload, CodecId::kPowersgd, n, kModeLowRank);
  const std::byte* d = payload.data() + kHeaderBytes;
  if (h.flags == kModeRaw) {
    check_payload_size(payload, raw_size_bytes(n), CodecId::kPowersgd);
    if constexpr (kAdd) {
      for (std::size_t i = 0; i < n; ++i) out[i] += load_le<float>(d + 4 * i);
    } else {
      std::memcpy(out.data(), d, 4 * n);
    }
    return;
  }
  if (h.flags != kModeLowRank)
    FERRY_THROW(FormatError, "powersgd payload: unknown mode ", int(h.flags));
  if (payload.size() < kHeaderBytes + 8)
    FERRY_THROW(FormatError, "powersgd payload: ", payload.size(), " bytes, too short");
  const std::size_t rows = load_le<std::uint32_t>(d);
  const std::size_t cols = load_le<std::uint32_t>(d + 4);
  const std::size_t r = h.aux;
  if (rows == 0 || cols == 0 || rows * cols != n)
    FERRY_THROW(FormatError, "powersgd payload: matrix ", rows, " x ", cols, " does not hold ",
                n, " elements");
  if (r < 1 || r > std::min(rows, cols))
    FERRY_THROW(FormatError, "powersgd payload: rank ", r, " outside [1, min(", rows, ", ",
                cols, ")]");
  check_payload_size(payload, low_rank_size_bytes(rows, cols, r), CodecId::kPowersgd);
  // Factors may be unaligned in the payload: copy them out once (r(rows+cols) << n).
  std::vector<float> p(r * rows), q(r * cols);
  std::memcpy(p.data(), d + 8, 4 * p.size());
  std::memcpy(q.data(), d + 8 + 4 * p.size(), 4 * q.size());
  low_rank_outer(out.data(), rows, cols, p.data(), q.data(), r, 1.0f, kAdd);
}

void PowersgdCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  decode_into<false>(payload, out);
}

void PowersgdCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  decode_into<true>(payload, acc);
}

void PowersgdCodec::save_state(std::vector<std::byte>& out) const {
  CodecStateWriter w(*this, out);
  w.put_u64(step_);  // decides the warm-up
  w.put_floats(residual_);
  w.put_floats(q_);  // the warm start of the next step; P is recomputed from it
}

void PowersgdCodec::load_state(std::span<const std::byte> state) {
  CodecStateReader in(*this, state);
  const std::uint64_t step = in.u64("step counter");
  std::vector<float> residual(residual_.size()), q(q_.size());
  in.floats_into(residual, "residual");
  in.floats_into(q, "Q");
  in.finish();
  step_ = step;
  residual_.swap(residual);
  q_.swap(q);
}

}  // namespace ferry::compress
