#include "compress/twobit_codec.h"

#include <cmath>

#include "compress/ternary_pack.h"
#include "compress/wire_format.h"
#include "core/error.h"

namespace ferry::compress {
namespace {

// One value of the MXNet update; returns its 2-bit code. Branch-free so the 16-wide block
// loop vectorises (selects instead of if/else; identical results to MXNet's if/else chain).
inline std::uint8_t quantize_one(float g, float& r, float t, float neg_t) {
  float v = r + g;
  bool pos = v >= t;
  bool neg = v <= neg_t;
  r = pos ? v - t : (neg ? v - neg_t : v);
  return static_cast<std::uint8_t>((pos ? kTernaryPos : 0) | (neg ? kTernaryNeg : 0));
}

}  // namespace

TwobitOptions parse_twobit_options(SpecReader& spec) {
  TwobitOptions o;
  o.threshold = static_cast<float>(spec.get_double("threshold", o.threshold));
  return o;
}

TwobitCodec::TwobitCodec(TwobitOptions options, TensorInfo info)
    : Codec(std::move(info)), options_(options), residual_(info_.numel, 0.0f) {
  FERRY_REQUIRE(options_.threshold > 0.0f && std::isfinite(options_.threshold),
                "twobit: threshold must be a finite number > 0, got ", options_.threshold);
}

std::size_t TwobitCodec::size_bytes(std::size_t numel) {
  return kHeaderBytes + 4 * ternary_words(numel);
}

void TwobitCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  const std::size_t n = grad.size();
  const float t = options_.threshold;
  const float neg_t = -t;
  write_header(out, size_bytes(n),
               {.codec = CodecId::kTwobit, .flags = 0, .aux = float_bits(t), .numel = n});
  std::byte* words = out.data() + kHeaderBytes;
  const float* g = grad.data();
  float* r = residual_.data();
  const std::size_t full = n / 16;
  for (std::size_t b = 0; b < full; ++b) {
    alignas(16) std::uint8_t codes[16];
    const float* gb = g + 16 * b;
    float* rb = r + 16 * b;
    for (int j = 0; j < 16; ++j) codes[j] = quantize_one(gb[j], rb[j], t, neg_t);
    store_le<std::uint32_t>(words + 4 * b, pack_ternary16(codes));
  }
  if (full * 16 < n) {
    alignas(16) std::uint8_t codes[16] = {};
    for (std::size_t i = full * 16; i < n; ++i) codes[i - full * 16] = quantize_one(g[i], r[i], t, neg_t);
    store_le<std::uint32_t>(words + 4 * full, pack_ternary16(codes));
  }
}

float TwobitCodec::check(std::span<const std::byte> payload) const {
  PayloadHeader h = read_header(payload, CodecId::kTwobit, info_.numel);
  check_payload_size(payload, size_bytes(info_.numel), CodecId::kTwobit);
  float t = bits_float(h.aux);
  if (!(t > 0.0f) || !std::isfinite(t))
    FERRY_THROW(FormatError, "twobit payload: threshold ", t, " is not a finite number > 0");
  check_ternary_words(payload.data() + kHeaderBytes, info_.numel, CodecId::kTwobit);
  return t;
}

void TwobitCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  float t = check(payload);
  unpack_ternary(payload.data() + kHeaderBytes, out.size(), t, -t, out.data());
}

void TwobitCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  float t = check(payload);
  unpack_ternary_add(payload.data() + kHeaderBytes, acc.size(), t, -t, acc.data());
}

}  // namespace ferry::compress
