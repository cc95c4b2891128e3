#include "compress/qsgd_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "compress/bit_stream.h"
#include "compress/codec_state.h"
#include "compress/wire_format.h"
#include "core/error.h"

namespace ferry::compress {
namespace {

constexpr std::uint32_t kMaxLevels = 65535;

unsigned field_bits(std::uint32_t levels) { return 1u + std::bit_width(levels); }

}  // namespace

QsgdOptions parse_qsgd_options(SpecReader& spec) {
  QsgdOptions o;
  std::int64_t levels = spec.get_int("levels", o.levels);
  std::int64_t bucket = spec.get_int("bucket", o.bucket_size);
  FERRY_REQUIRE_IN(levels, 1, kMaxLevels, "[]", "qsgd: levels");
  FERRY_REQUIRE_IN(bucket, 1, std::int64_t{1} << 31, "[]", "qsgd: bucket");
  o.levels = static_cast<std::uint32_t>(levels);
  o.bucket_size = static_cast<std::uint32_t>(bucket);
  o.seed = spec.get_uint("seed", o.seed);
  return o;
}

QsgdCodec::QsgdCodec(QsgdOptions options, TensorInfo info)
    : Codec(std::move(info)),
      options_(options),
      rng_(combine_seed(combine_seed(options.seed, info_.tensor_id),
                        static_cast<std::uint64_t>(info_.rank))) {
  FERRY_REQUIRE_IN(options_.levels, 1, kMaxLevels, "[]", "qsgd: levels");
  FERRY_REQUIRE_OP(options_.bucket_size, >=, 1, "qsgd: bucket");
}

std::size_t QsgdCodec::size_bytes(std::size_t numel, std::uint32_t levels, std::uint32_t bucket) {
  return kHeaderBytes + 4 + 4 * div_ceil(numel, bucket) +
         bit_stream_bytes(numel, field_bits(levels));
}

void QsgdCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  const std::size_t n = grad.size();
  const std::uint32_t s = options_.levels;
  const std::size_t d = options_.bucket_size;
  const std::size_t nb = div_ceil(n, d);
  const unsigned bits = field_bits(s);
  write_header(out, size_bytes(n, s, options_.bucket_size),
               {.codec = CodecId::kQsgd, .aux = s, .numel = n});
  std::byte* p = out.data() + kHeaderBytes;
  store_le<std::uint32_t>(p, options_.bucket_size);
  std::byte* norms = p + 4;
  BitWriter writer(norms + 4 * nb);
  const float* x = grad.data();
  const float fs = static_cast<float>(s);
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t lo = b * d, hi = std::min(n, lo + d);
    double sq = 0;
    for (std::size_t i = lo; i < hi; ++i) sq += static_cast<double>(x[i]) * x[i];
    // Squares of floats cannot overflow a double, so sq is finite unless an element is not.
    if (!std::isfinite(sq)) {
      const std::size_t bad = static_cast<std::size_t>(
          std::find_if(x + lo, x + hi, [](float v) { return !std::isfinite(v); }) - x);
      FERRY_THROW(InvalidArgument, "qsgd: gradient element ", bad, " is ", x[bad],
                  "; qsgd quantises finite values only");
    }
    const double norm_d = std::sqrt(sq);
    FERRY_REQUIRE(norm_d <= std::numeric_limits<float>::max(), "qsgd: bucket ", b, " has norm ", norm_d,
                  ", beyond the fp32 range of the wire format");
    const float norm = static_cast<float>(norm_d);
    store_le<float>(norms + 4 * b, norm);
    const float scale = norm > 0.0f ? fs / norm : 0.0f;
    // A subnormal norm makes s / norm overflow fp32 (and 0 * Inf is NaN): take the ratio in
    // double there, where it is finite.
    const bool float_scale = std::isfinite(scale);
    const double scale_d = norm_d > 0 ? fs / norm_d : 0.0;
    for (std::size_t i = lo; i < hi; ++i) {
      const float r = float_scale ? std::fabs(x[i]) * scale  // in [0, s]
                                  : static_cast<float>(std::fabs(x[i]) * scale_d);
      float l = std::floor(r);
      l += rng_.uniform() < r - l ? 1.0f : 0.0f;
      const std::uint32_t level = std::min(static_cast<std::uint32_t>(l), s);
      const std::uint32_t sign = (x[i] < 0.0f && level > 0) ? 1u : 0u;
      writer.put((level << 1) | sign, bits);
    }
  }
  writer.flush();
}

QsgdCodec::Parsed QsgdCodec::check(std::span<const std::byte> payload) const {
  const std::size_t n = info_.numel;
  PayloadHeader h = read_header(payload, CodecId::kQsgd, n);
  if (h.aux < 1 || h.aux > kMaxLevels)
    FERRY_THROW(FormatError, "qsgd payload: levels ", h.aux, " outside [1, ", kMaxLevels, "]");
  if (payload.size() < kHeaderBytes + 4)
    FERRY_THROW(FormatError, "qsgd payload: ", payload.size(), " bytes, too short for its header");
  const std::uint32_t bucket = load_le<std::uint32_t>(payload.data() + kHeaderBytes);
  if (bucket < 1) FERRY_THROW(FormatError, "qsgd payload: bucket size 0");
  check_payload_size(payload, size_bytes(n, h.aux, bucket), CodecId::kQsgd);
  const std::byte* norms = payload.data() + kHeaderBytes + 4;
  for (std::size_t b = 0; b < div_ceil(n, bucket); ++b) {
    const float norm = load_le<float>(norms + 4 * b);
    if (!(norm >= 0.0f) || !std::isfinite(norm))
      FERRY_THROW(FormatError, "qsgd payload: bucket ", b, " norm ", norm, " is not a finite number >= 0");
  }
  // Every level must be <= s; scan the stream before anything is written.
  const unsigned bits = field_bits(h.aux);
  BitReader reader(payload.data() + kHeaderBytes + 4 + 4 * div_ceil(n, bucket));
  std::uint32_t max_level = 0;
  for (std::size_t i = 0; i < n; ++i) max_level = std::max(max_level, reader.get(bits) >> 1);
  if (max_level > h.aux)
    FERRY_THROW(FormatError, "qsgd payload: level ", max_level, " above levels=", h.aux);
  if (reader.leftover() != 0) FERRY_THROW(FormatError, "qsgd payload: non-zero padding bits");
  return {h.aux, bucket};
}

template <bool kAdd>
void QsgdCodec::unpack(std::span<const std::byte> payload, const Parsed& p, float* out) const {
  const std::size_t n = info_.numel;
  const std::size_t nb = div_ceil(n, p.bucket);
  const std::byte* norms = payload.data() + kHeaderBytes + 4;
  const unsigned bits = field_bits(p.levels);
  BitReader reader(norms + 4 * nb);
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t lo = b * p.bucket, hi = std::min(n, lo + p.bucket);
    const float norm = load_le<float>(norms + 4 * b);
    const float unit = norm / static_cast<float>(p.levels);
    // A subnormal bucket: norm / s underflows (to 0 below 1.4e-45 * s), so take norm * l / s in
    // double there, as encode takes the ratio.
    const bool float_unit = unit >= std::numeric_limits<float>::min() || norm == 0.0f;
    for (std::size_t i = lo; i < hi; ++i) {
      const std::uint32_t f = reader.get(bits);
      float v = float_unit ? unit * static_cast<float>(f >> 1)
                           : static_cast<float>(static_cast<double>(norm) * (f >> 1) / p.levels);
      v = (f & 1u) ? -v : v;
      if constexpr (kAdd) {
        out[i] += v;
      } else {
        out[i] = v;
      }
    }
  }
}

void QsgdCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  Parsed p = check(payload);
  unpack<false>(payload, p, out.data());
}

void QsgdCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  Parsed p = check(payload);
  unpack<true>(payload, p, acc.data());
}

void QsgdCodec::save_state(std::vector<std::byte>& out) const { save_random_stream(*this, rng_, out); }

void QsgdCodec::load_state(std::span<const std::byte> state) { load_random_stream(*this, rng_, state); }

}  // namespace ferry::compress
