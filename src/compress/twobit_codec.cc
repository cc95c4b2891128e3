#include "compress/twobit_codec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "compress/codec_state.h"
#include "compress/ternary_pack.h"
#include "compress/wire_format.h"
#include "core/error.h"

namespace ferry::compress {
namespace {

// One value of the MXNet update; returns its 2-bit code. Written with selects on bit masks,
// not if/else: random gradients make the branches unpredictable (measured 12 ns/value with
// branches). Results are identical to MXNet's if/else chain, including signed zeros and NaN.
inline std::uint8_t quantize_one(float g, float& r, float t, float neg_t) {
  const float v = r + g;
  const std::uint32_t pos = 0u - static_cast<std::uint32_t>(v >= t);
  const std::uint32_t neg = 0u - static_cast<std::uint32_t>(v <= neg_t);
  r = bits_float((float_bits(v - t) & pos) | (float_bits(v - neg_t) & neg) |
                 (float_bits(v) & ~(pos | neg)));
  return static_cast<std::uint8_t>((pos & kTernaryPos) | (neg & kTernaryNeg));
}

// Code byte for 4 values from their >= t and <= -t masks (bit k = value k), MXNet layout.
struct CodeByteTable {
  std::uint8_t byte[256];
  constexpr CodeByteTable() : byte{} {
    for (unsigned m = 0; m < 256; ++m) {
      unsigned b = 0;
      for (unsigned k = 0; k < 4; ++k) {
        const unsigned code = ((m >> k) & 1u) ? kTernaryPos : (((m >> (4 + k)) & 1u) ? kTernaryNeg : 0u);
        b |= code << (6 - 2 * k);
      }
      byte[m] = static_cast<std::uint8_t>(b);
    }
  }
};
constexpr CodeByteTable kCodeBytes;

#if defined(__SSE2__)
// 16 values with SSE2 (baseline on x86-64): compare, blend the three residual candidates with
// the masks, and turn the two 4-bit movemasks of each quarter into a code byte by table.
inline std::uint32_t quantize16_sse2(const float* g, float* r, float t) {
  const __m128 tv = _mm_set1_ps(t);
  const __m128 ntv = _mm_set1_ps(-t);
  std::uint32_t word = 0;
  for (int q = 0; q < 4; ++q) {
    const __m128 v = _mm_add_ps(_mm_loadu_ps(r + 4 * q), _mm_loadu_ps(g + 4 * q));
    const __m128 pm = _mm_cmpge_ps(v, tv);
    const __m128 nm = _mm_cmple_ps(v, ntv);
    const __m128 res =
        _mm_or_ps(_mm_or_ps(_mm_and_ps(pm, _mm_sub_ps(v, tv)), _mm_and_ps(nm, _mm_sub_ps(v, ntv))),
                  _mm_andnot_ps(_mm_or_ps(pm, nm), v));
    _mm_storeu_ps(r + 4 * q, res);
    const int idx = _mm_movemask_ps(pm) | (_mm_movemask_ps(nm) << 4);
    word |= static_cast<std::uint32_t>(kCodeBytes.byte[idx]) << (8 * q);
  }
  return word;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define FERRY_TWOBIT_X86_DISPATCH 1
// The same with AVX2 (8 lanes), compiled for AVX2 only in this function and chosen at run time
// when the CPU has it: at 1M elements (cache-resident) SSE2 is compute-bound.
__attribute__((target("avx2"))) void quantize_blocks_avx2(const float* g, float* r, float t,
                                                         std::size_t blocks, std::byte* words) {
  const __m256 tv = _mm256_set1_ps(t);
  const __m256 ntv = _mm256_set1_ps(-t);
  for (std::size_t b = 0; b < blocks; ++b) {
    std::uint32_t word = 0;
    for (int h = 0; h < 2; ++h) {
      const std::size_t off = 16 * b + 8 * h;
      const __m256 v = _mm256_add_ps(_mm256_loadu_ps(r + off), _mm256_loadu_ps(g + off));
      const __m256 pm = _mm256_cmp_ps(v, tv, _CMP_GE_OQ);
      const __m256 nm = _mm256_cmp_ps(v, ntv, _CMP_LE_OQ);
      const __m256 res =
          _mm256_blendv_ps(_mm256_blendv_ps(v, _mm256_sub_ps(v, tv), pm), _mm256_sub_ps(v, ntv), nm);
      _mm256_storeu_ps(r + off, res);
      const unsigned p = static_cast<unsigned>(_mm256_movemask_ps(pm));
      const unsigned n = static_cast<unsigned>(_mm256_movemask_ps(nm));
      const std::uint32_t lo = kCodeBytes.byte[(p & 15u) | ((n & 15u) << 4)];
      const std::uint32_t hi = kCodeBytes.byte[(p >> 4) | (n & 0xf0u)];
      word |= (lo | (hi << 8)) << (16 * h);
    }
    store_le<std::uint32_t>(words + 4 * b, word);
  }
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Bit j of m moves to bit 4(j/4) + 3 - j%4: MXNet puts value 0 of each byte in its top bits.
inline std::uint32_t reverse_nibbles16(std::uint32_t m) {
  m = ((m & 0x5555u) << 1) | ((m >> 1) & 0x5555u);
  return ((m & 0x3333u) << 2) | ((m >> 2) & 0x3333u);
}
inline std::uint32_t reverse_nibbles32(std::uint32_t m) {
  m = ((m & 0x55555555u) << 1) | ((m >> 1) & 0x55555555u);
  return ((m & 0x33333333u) << 2) | ((m >> 2) & 0x33333333u);
}

// AVX-512 (16 lanes): the compares give 16-bit masks directly (no movemask), the residual is
// two masked subtracts, and the word is built by scattering the masks into the code bits with
// pdep (BMI2): the high bit of a code is "sent" (>= t or <= -t), the low bit "positive".
// Same arithmetic as the SSE2/AVX2 paths, so codes and residuals are bit-identical.
__attribute__((target("avx512f,avx512bw,bmi2"))) void quantize_blocks_avx512(
    const float* g, float* r, float t, std::size_t blocks, std::byte* words) {
  const __m512 tv = _mm512_set1_ps(t);
  const __m512 ntv = _mm512_set1_ps(-t);
  std::size_t b = 0;
  // Two blocks per iteration: 32-bit masks, one 64-bit pdep pair for two words.
  for (; b + 2 <= blocks; b += 2) {
    const std::size_t off = 16 * b;
    const __m512 v0 = _mm512_add_ps(_mm512_loadu_ps(r + off), _mm512_loadu_ps(g + off));
    const __m512 v1 = _mm512_add_ps(_mm512_loadu_ps(r + off + 16), _mm512_loadu_ps(g + off + 16));
    const __mmask16 pm0 = _mm512_cmp_ps_mask(v0, tv, _CMP_GE_OQ);
    const __mmask16 nm0 = _mm512_cmp_ps_mask(v0, ntv, _CMP_LE_OQ);
    const __mmask16 pm1 = _mm512_cmp_ps_mask(v1, tv, _CMP_GE_OQ);
    const __mmask16 nm1 = _mm512_cmp_ps_mask(v1, ntv, _CMP_LE_OQ);
    _mm512_storeu_ps(r + off,
                     _mm512_mask_sub_ps(_mm512_mask_sub_ps(v0, pm0, v0, tv), nm0, v0, ntv));
    _mm512_storeu_ps(r + off + 16,
                     _mm512_mask_sub_ps(_mm512_mask_sub_ps(v1, pm1, v1, tv), nm1, v1, ntv));
    const std::uint64_t p = reverse_nibbles32(pm0 | (static_cast<std::uint32_t>(pm1) << 16));
    const std::uint64_t s =
        reverse_nibbles32((pm0 | nm0) | (static_cast<std::uint32_t>(pm1 | nm1) << 16));
    store_le<std::uint64_t>(words + 4 * b, _pdep_u64(p, 0x5555555555555555ull) |
                                               _pdep_u64(s, 0xaaaaaaaaaaaaaaaaull));
  }
  for (; b < blocks; ++b) {
    const std::size_t off = 16 * b;
    const __m512 v = _mm512_add_ps(_mm512_loadu_ps(r + off), _mm512_loadu_ps(g + off));
    const __mmask16 pm = _mm512_cmp_ps_mask(v, tv, _CMP_GE_OQ);
    const __mmask16 nm = _mm512_cmp_ps_mask(v, ntv, _CMP_LE_OQ);
    __m512 res = _mm512_mask_sub_ps(v, pm, v, tv);
    res = _mm512_mask_sub_ps(res, nm, v, ntv);
    _mm512_storeu_ps(r + off, res);
    const std::uint32_t p = reverse_nibbles16(pm);
    const std::uint32_t s = reverse_nibbles16(static_cast<std::uint32_t>(pm | nm));
    store_le<std::uint32_t>(words + 4 * b,
                            _pdep_u32(p, 0x55555555u) | _pdep_u32(s, 0xaaaaaaaau));
  }
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2");
  return has;
}
#endif

}  // namespace

bool twobit_kernel_supported(TwobitKernel kernel) {
  switch (kernel) {
#if defined(FERRY_TWOBIT_X86_DISPATCH)
    case TwobitKernel::kAvx512: return cpu_has_avx512();
    case TwobitKernel::kAvx2: return cpu_has_avx2();
#else
    case TwobitKernel::kAvx512:
    case TwobitKernel::kAvx2: return false;
#endif
    case TwobitKernel::kAuto:
    case TwobitKernel::kBaseline: return true;
  }
  return false;
}

TwobitOptions parse_twobit_options(SpecReader& spec) {
  TwobitOptions o;
  o.threshold = static_cast<float>(spec.get_double("threshold", o.threshold));
  // Read only when given, so that the canonical spec of the default stays "twobit:threshold=T".
  if (spec.has("units")) {
    const std::string units = spec.get_choice("units", "absolute", {"absolute", "rms", "mxnet"});
    o.units = units == "rms" ? TwobitUnits::kRms : units == "mxnet" ? TwobitUnits::kMxnet : TwobitUnits::kAbsolute;
  }
  if (spec.has("per")) {
    o.per_row = spec.get_choice("per", "tensor", {"tensor", "row"}) == "row";
    FERRY_REQUIRE(!o.per_row || o.units == TwobitUnits::kRms,
                  "twobit: per=row needs units=rms (a fixed threshold is the same for every row)");
  }
  return o;
}

TwobitCodec::TwobitCodec(TwobitOptions options, TensorInfo info)
    : Codec(std::move(info)), options_(options), residual_(info_.numel, 0.0f) {
  FERRY_REQUIRE_FINITE(options_.threshold, >, 0, "twobit: threshold");
  FERRY_REQUIRE(twobit_kernel_supported(options_.kernel),
                "twobit: this CPU or build lacks the requested encoder kernel");
  if (options_.kernel == TwobitKernel::kAuto)
    options_.kernel = twobit_kernel_supported(TwobitKernel::kAvx512) ? TwobitKernel::kAvx512
                      : twobit_kernel_supported(TwobitKernel::kAvx2) ? TwobitKernel::kAvx2
                                                                     : TwobitKernel::kBaseline;
}

std::size_t TwobitCodec::size_bytes(std::size_t numel) {
  return kHeaderBytes + 4 * ternary_words(numel);
}

float TwobitCodec::threshold_for(std::span<const float> grad) const {
  if (options_.units == TwobitUnits::kMxnet) {
    FERRY_REQUIRE(info_.batch > 0, "twobit: units=mxnet needs the per-worker batch size (the threshold is on the "
                  "batch-summed gradient, t = threshold / batch), and this codec was built without one");
    return static_cast<float>(static_cast<double>(options_.threshold) / static_cast<double>(info_.batch));
  }
  if (options_.units == TwobitUnits::kAbsolute || grad.empty()) return options_.threshold;
  return rms_threshold(0, grad);
}

float TwobitCodec::rms_threshold(std::size_t offset, std::span<const float> grad) const {
  // The RMS of what is quantised, r + g (each sum rounded to float as the kernels round it).
  const float* r = residual_.data() + offset;
  double sq = 0;
  for (std::size_t i = 0; i < grad.size(); ++i) {
    const float v = r[i] + grad[i];
    sq += static_cast<double>(v) * v;
  }
  const double t = options_.threshold * std::sqrt(sq / static_cast<double>(grad.size()));
  return std::isfinite(t) ? std::max(static_cast<float>(t), std::numeric_limits<float>::min()) : options_.threshold;
}

std::size_t TwobitCodec::threshold_rows() const {
  return options_.per_row && info_.shape.size() >= 2 && info_.shape[0] > 1 ? static_cast<std::size_t>(info_.shape[0])
                                                                           : 1;
}

std::size_t TwobitCodec::encoded_size_bytes() const {
  const std::size_t rows = threshold_rows();
  return size_bytes(info_.numel) + (rows > 1 ? 4 * rows : 0);
}

void TwobitCodec::encode_rows(std::span<const float> grad, std::vector<std::byte>& out) {
  const std::size_t n = grad.size(), rows = threshold_rows(), cols = n / rows;
  write_header(out, encoded_size_bytes(),
               {.codec = CodecId::kTwobit, .flags = 1, .aux = static_cast<std::uint32_t>(rows), .numel = n});
  std::byte* ts = out.data() + kHeaderBytes;
  std::byte* words = ts + 4 * rows;
  std::vector<float> t(rows);
  for (std::size_t row = 0; row < rows; ++row) {
    t[row] = rms_threshold(row * cols, grad.subspan(row * cols, cols));
    store_le<float>(ts + 4 * row, t[row]);
  }
  alignas(16) std::uint8_t codes[16];
  for (std::size_t w = 0; w < ternary_words(n); ++w) {
    std::fill(std::begin(codes), std::end(codes), std::uint8_t{0});
    for (std::size_t j = 0; j < 16 && 16 * w + j < n; ++j) {
      const std::size_t i = 16 * w + j;
      const float ti = t[i / cols];
      codes[j] = quantize_one(grad[i], residual_[i], ti, -ti);
    }
    store_le<std::uint32_t>(words + 4 * w, pack_ternary16(codes));
  }
}

std::size_t TwobitCodec::check_rows(std::span<const std::byte> payload, std::vector<float>& t) const {
  const std::size_t rows = threshold_rows();
  PayloadHeader h = read_header(payload, CodecId::kTwobit, info_.numel, /*max_flags=*/1);
  if (h.flags != 1 || h.aux != rows)
    FERRY_THROW(FormatError, "twobit payload: expected one threshold per row (flags 1, ", rows, " rows), got flags ",
                int{h.flags}, " and ", h.aux, " rows");
  check_payload_size(payload, encoded_size_bytes(), CodecId::kTwobit);
  t.resize(rows);
  for (std::size_t row = 0; row < rows; ++row) {
    t[row] = load_le<float>(payload.data() + kHeaderBytes + 4 * row);
    if (!(t[row] > 0.0f) || !std::isfinite(t[row]))
      FERRY_THROW(FormatError, "twobit payload: threshold ", t[row], " of row ", row, " is not a finite number > 0");
  }
  const std::size_t at = kHeaderBytes + 4 * rows;
  check_ternary_words(payload.data() + at, info_.numel, CodecId::kTwobit);
  return at;
}

void TwobitCodec::decode_rows(std::span<const std::byte> payload, std::span<float> out, bool add) const {
  std::vector<float> t;
  const std::size_t at = check_rows(payload, t);
  const std::size_t n = info_.numel, cols = n / t.size();
  float unit[16];  // one word's values as +1, -1 or 0, then scaled by their row's t
  for (std::size_t w = 0; 16 * w < n; ++w) {
    const std::size_t m = std::min<std::size_t>(16, n - 16 * w);
    unpack_ternary(payload.data() + at + 4 * w, m, 1.0f, -1.0f, unit);
    for (std::size_t j = 0; j < m; ++j) {
      const std::size_t i = 16 * w + j;
      const float v = unit[j] * t[i / cols];
      out[i] = add ? out[i] + v : v;
    }
  }
}

void TwobitCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  if (threshold_rows() > 1) return encode_rows(grad, out);
  const std::size_t n = grad.size();
  const float t = threshold_for(grad);
  const float neg_t = -t;
  write_header(out, size_bytes(n),
               {.codec = CodecId::kTwobit, .flags = 0, .aux = float_bits(t), .numel = n});
  std::byte* words = out.data() + kHeaderBytes;
  const float* g = grad.data();
  float* r = residual_.data();
  const std::size_t full = n / 16;
  std::size_t b = 0;
#if defined(FERRY_TWOBIT_X86_DISPATCH)
  if (options_.kernel == TwobitKernel::kAvx512) {
    quantize_blocks_avx512(g, r, t, full, words);
    b = full;
  } else if (options_.kernel == TwobitKernel::kAvx2) {
    quantize_blocks_avx2(g, r, t, full, words);
    b = full;
  }
#endif
  for (; b < full; ++b) {
#if defined(__SSE2__)
    store_le<std::uint32_t>(words + 4 * b, quantize16_sse2(g + 16 * b, r + 16 * b, t));
#else
    alignas(16) std::uint8_t codes[16];
    for (int j = 0; j < 16; ++j) codes[j] = quantize_one(g[16 * b + j], r[16 * b + j], t, neg_t);
    store_le<std::uint32_t>(words + 4 * b, pack_ternary16(codes));
#endif
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
  if (threshold_rows() > 1) return decode_rows(payload, out, false);
  float t = check(payload);
  unpack_ternary(payload.data() + kHeaderBytes, out.size(), t, -t, out.data());
}

void TwobitCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  if (threshold_rows() > 1) return decode_rows(payload, acc, true);
  float t = check(payload);
  unpack_ternary_add(payload.data() + kHeaderBytes, acc.size(), t, -t, acc.data());
}

void TwobitCodec::save_state(std::vector<std::byte>& out) const { save_float_vector(*this, residual_, out); }

void TwobitCodec::load_state(std::span<const std::byte> state) {
  load_float_vector(*this, residual_, state, "residual");
}

}  // namespace ferry::compress
