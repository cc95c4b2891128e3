#include "compress/onebit_codec.h"

#include <algorithm>
#include <cmath>

#include "compress/codec_state.h"
#include "compress/wire_format.h"
#include "core/error.h"

namespace ferry::compress {

OnebitCodec::OnebitCodec(TensorInfo info) : Codec(std::move(info)), residual_(info_.numel, 0.0f) {}

std::size_t OnebitCodec::size_bytes(std::size_t numel) {
  return kHeaderBytes + 4 * div_ceil(numel, 32);
}

void OnebitCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  const std::size_t n = grad.size();
  const float* g = grad.data();
  float* e = residual_.data();
  // Pass 1: p = g + e (kept in e), and its L1 norm (double accumulators, 4 lanes).
  double l1[4] = {0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) {
      e[i + k] += g[i + k];
      l1[k] += std::fabs(e[i + k]);
    }
  for (; i < n; ++i) {
    e[i] += g[i];
    l1[0] += std::fabs(e[i]);
  }
  const float scale = static_cast<float>((l1[0] + l1[1] + l1[2] + l1[3]) / static_cast<double>(n));
  write_header(out, size_bytes(n),
               {.codec = CodecId::kOnebit, .aux = float_bits(scale), .numel = n});
  std::byte* words = out.data() + kHeaderBytes;
  // Pass 2: sign bits, e -= scale * sign(p).
  const std::size_t nw = div_ceil(n, 32);
  for (std::size_t w = 0; w < nw; ++w) {
    const std::size_t base = 32 * w;
    const std::size_t m = std::min<std::size_t>(32, n - base);
    std::uint32_t bits = 0;
    float* eb = e + base;
    for (std::size_t j = 0; j < m; ++j) {
      bool negative = eb[j] < 0.0f;
      bits |= static_cast<std::uint32_t>(negative) << j;
      eb[j] -= negative ? -scale : scale;
    }
    store_le<std::uint32_t>(words + 4 * w, bits);
  }
}

float OnebitCodec::check(std::span<const std::byte> payload) const {
  PayloadHeader h = read_header(payload, CodecId::kOnebit, info_.numel);
  check_payload_size(payload, size_bytes(info_.numel), CodecId::kOnebit);
  float scale = bits_float(h.aux);
  if (std::signbit(scale) || !std::isfinite(scale))
    FERRY_THROW(FormatError, "onebit payload: scale ", scale, " is not a finite number >= 0");
  const std::size_t tail = info_.numel % 32;
  if (tail != 0) {
    std::uint32_t last = load_le<std::uint32_t>(payload.data() + payload.size() - 4);
    if ((last >> tail) != 0)
      FERRY_THROW(FormatError, "onebit payload: non-zero padding bits after element ",
                  info_.numel);
  }
  return scale;
}

void OnebitCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  const std::uint32_t s = float_bits(check(payload));
  const std::byte* words = payload.data() + kHeaderBytes;
  const std::size_t n = out.size();
  float* o = out.data();
  for (std::size_t w = 0; w < div_ceil(n, 32); ++w) {
    const std::uint32_t bits = load_le<std::uint32_t>(words + 4 * w);
    const std::size_t m = std::min<std::size_t>(32, n - 32 * w);
    float* ob = o + 32 * w;
    // Sign bit j of the word becomes the float's sign bit.
    for (std::size_t j = 0; j < m; ++j) ob[j] = bits_float(s | (((bits >> j) & 1u) << 31));
  }
}

void OnebitCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  const std::uint32_t s = float_bits(check(payload));
  const std::byte* words = payload.data() + kHeaderBytes;
  const std::size_t n = acc.size();
  float* a = acc.data();
  for (std::size_t w = 0; w < div_ceil(n, 32); ++w) {
    const std::uint32_t bits = load_le<std::uint32_t>(words + 4 * w);
    const std::size_t m = std::min<std::size_t>(32, n - 32 * w);
    float* ab = a + 32 * w;
    for (std::size_t j = 0; j < m; ++j) ab[j] += bits_float(s | (((bits >> j) & 1u) << 31));
  }
}

void OnebitCodec::save_state(std::vector<std::byte>& out) const { save_float_vector(*this, residual_, out); }

void OnebitCodec::load_state(std::span<const std::byte> state) {
  load_float_vector(*this, residual_, state, "residual");
}

}  // namespace ferry::compress
