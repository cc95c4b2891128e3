#include "compress/terngrad_codec.h"

#include <algorithm>
#include <cmath>

#include "compress/codec_state.h"
#include "compress/ternary_pack.h"
#include "compress/wire_format.h"
#include "core/error.h"

namespace ferry::compress {

TerngradOptions parse_terngrad_options(SpecReader& spec) {
  TerngradOptions o;
  o.seed = spec.get_uint("seed", o.seed);
  return o;
}

TerngradCodec::TerngradCodec(TerngradOptions options, TensorInfo info)
    : Codec(std::move(info)),
      options_(options),
      rng_(combine_seed(combine_seed(options.seed, info_.tensor_id),
                        static_cast<std::uint64_t>(info_.rank))) {}

std::size_t TerngradCodec::size_bytes(std::size_t numel) {
  return kHeaderBytes + 4 * ternary_words(numel);
}

void TerngradCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  const std::size_t n = grad.size();
  const float* g = grad.data();
  float scale = 0.0f;
  for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(g[i]));
  write_header(out, size_bytes(n),
               {.codec = CodecId::kTerngrad, .aux = float_bits(scale), .numel = n});
  std::byte* words = out.data() + kHeaderBytes;
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (std::size_t w = 0; w < ternary_words(n); ++w) {
    alignas(16) std::uint8_t codes[16] = {};
    alignas(16) float u[16];
    for (int j = 0; j < 16; j += 2) rng_.uniform2(u[j], u[j + 1]);
    const std::size_t base = 16 * w;
    const std::size_t m = std::min<std::size_t>(16, n - base);
    for (std::size_t j = 0; j < m; ++j) {
      const float x = g[base + j];
      // u < p with u in [0,1): p = 1 (|x| = s_t) is always sent, p = 0 never. Branch-free:
      // random keeps are unpredictable.
      const std::uint32_t keep = 0u - static_cast<std::uint32_t>(u[j] < std::fabs(x) * inv);
      codes[j] = static_cast<std::uint8_t>((kTernaryNeg | static_cast<std::uint32_t>(x > 0.0f)) & keep);
    }
    store_le<std::uint32_t>(words + 4 * w, pack_ternary16(codes));
  }
}

float TerngradCodec::check(std::span<const std::byte> payload) const {
  PayloadHeader h = read_header(payload, CodecId::kTerngrad, info_.numel);
  check_payload_size(payload, size_bytes(info_.numel), CodecId::kTerngrad);
  const float scale = bits_float(h.aux);
  if (std::signbit(scale) || !std::isfinite(scale))
    FERRY_THROW(FormatError, "terngrad payload: scale ", scale, " is not a finite number >= 0");
  check_ternary_words(payload.data() + kHeaderBytes, info_.numel, CodecId::kTerngrad);
  return scale;
}

void TerngradCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  const float s = check(payload);
  unpack_ternary(payload.data() + kHeaderBytes, out.size(), s, -s, out.data());
}

void TerngradCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  const float s = check(payload);
  unpack_ternary_add(payload.data() + kHeaderBytes, acc.size(), s, -s, acc.data());
}

void TerngradCodec::save_state(std::vector<std::byte>& out) const { save_random_stream(*this, rng_, out); }

void TerngradCodec::load_state(std::span<const std::byte> state) { load_random_stream(*this, rng_, state); }

}  // namespace ferry::compress
