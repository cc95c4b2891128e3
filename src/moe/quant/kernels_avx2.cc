// AVX2 + FMA + F16C dot products on quantized blocks. Only the functions below the pragma are
// compiled for those instruction sets (not the inline functions of the headers, whose one copy
// the linker keeps may run anywhere); matmul.cc calls them only after checking the CPU. The integer work follows
// ggml's x86 kernels: signed int8 products through _mm256_maddubs_epi16 (|a| as unsigned times
// b with a's sign), pairs widened to int32 by _mm256_madd_epi16, one float FMA per block.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "moe/quant/blocks.h"
#include "moe/quant/kernels.h"
#include "moe/quant/row_groups.h"

#pragma GCC target("avx2,fma,f16c")

#include "moe/quant/kernels_groups_x86.h"

namespace ferry::moe::quant::kernels {
namespace {

// The block scales' f16 → f32 through F16C (the portable bit arithmetic costs more than a block).
inline float f16(std::uint16_t h) { return _cvtsh_ss(h); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Σ pairs of int8 products, as 8 int32 lanes.
inline __m256i dot_i8_pairs(__m256i a, __m256i b) {
  const __m256i abs_a = _mm256_sign_epi8(a, a);
  const __m256i b_signed = _mm256_sign_epi8(b, a);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_a, b_signed), _mm256_set1_epi16(1));
}

// Eight f16 or bf16 values widened to float.
template <bool kBf16>
inline __m256 widen(const unsigned char* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kBf16)
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  else
    return _mm256_cvtph_ps(h);
}

template <bool kBf16>
float dot_half(const void* w, const void* x, std::size_t n) {
  const auto* a = static_cast<const unsigned char*>(w);
  const auto* b = static_cast<const float*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(widen<kBf16>(a + 2 * i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(widen<kBf16>(a + 2 * i + 16), _mm256_loadu_ps(b + i + 8), acc1);
  }
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, a + 2 * i, 2);
    s += (kBf16 ? bf16_to_float(h) : half_to_float(h)) * b[i];
  }
  return s;
}

float dot_q8_0(const void* w, const void* x, std::size_t n) {
  const auto* pw = static_cast<const unsigned char*>(w);
  const auto* px = static_cast<const unsigned char*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (std::size_t i = 0; i < n / kQK8_0; ++i, pw += sizeof(BlockQ8_0), px += sizeof(BlockQ8_0)) {
    std::uint16_t dw, dx;
    std::memcpy(&dw, pw, 2);
    std::memcpy(&dx, px, 2);
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pw + 2));
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(px + 2));
    const __m256 d = _mm256_set1_ps(f16(dw) * f16(dx));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_pairs(qw, qx)), acc);
  }
  return hsum(acc);
}

float dot_q4_0(const void* w, const void* x, std::size_t n) {
  const auto* pw = static_cast<const unsigned char*>(w);
  const auto* px = static_cast<const unsigned char*>(x);
  const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
  __m256 acc = _mm256_setzero_ps();
  for (std::size_t i = 0; i < n / kQK4_0; ++i, pw += sizeof(BlockQ4_0), px += sizeof(BlockQ8_0)) {
    std::uint16_t dw, dx;
    std::memcpy(&dw, pw, 2);
    std::memcpy(&dx, px, 2);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pw + 2));
    // Low lane: low nibbles (weights 0-15); high lane: high nibbles (16-31).
    __m256i qw = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), low4);
    qw = _mm256_sub_epi8(qw, eight);
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(px + 2));
    const __m256 d = _mm256_set1_ps(f16(dw) * f16(dx));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_pairs(qw, qx)), acc);
  }
  return hsum(acc);
}

// MXFP4: the codes' doubled values (int8, −12..12) looked up by a byte shuffle, then as Q4_0.
float dot_mxfp4(const void* w, const void* x, std::size_t n) {
  const auto* pw = static_cast<const unsigned char*>(w);
  const auto* px = static_cast<const unsigned char*>(x);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
  __m256 acc = _mm256_setzero_ps();
  for (std::size_t i = 0; i < n / kQK_MXFP4; ++i, pw += sizeof(BlockMXFP4), px += sizeof(BlockQ8_0)) {
    std::uint16_t dx;
    std::memcpy(&dx, px, 2);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pw + 1));
    // Low lane: low nibbles (weights 0-15); high lane: high nibbles (16-31).
    const __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), low4);
    const __m256i qw = _mm256_shuffle_epi8(values, codes);
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(px + 2));
    const __m256 d = _mm256_set1_ps(e8m0_half_to_float(pw[0]) * f16(dx));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_pairs(qw, qx)), acc);
  }
  return hsum(acc);
}

// Q4_K, and Q5_K with its fifth bits (sub-block s's are bit s of qh[0..31], moved to bit 4 of the
// weight: ≤ 31, so maddubs' pair sums stay below 2·31·127): one body.
template <class Block>
float dot_k4(const void* w, const void* x, std::size_t n) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  const auto* pw = static_cast<const unsigned char*>(w);
  const auto* bx = static_cast<const BlockQ8_K*>(x);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc = _mm256_setzero_ps();
  float acc_min = 0;
  for (std::size_t i = 0; i < n / kQK_K; ++i, pw += sizeof(Block), ++bx) {
    prefetch_ahead<sizeof(Block)>(pw);
    Block head;  // d, dmin, the scales (and Q5_K's fifth bits); the nibbles are read in place below
    std::memcpy(&head, pw, offsetof(Block, qs));
    const std::uint8_t* qs = pw + offsetof(Block, qs);
    // The 8 six-bit scales and mins (q4_k_scale_min) four at a time: bytes 0-3 and 4-7 hold sub-blocks
    // 0-3's scales and mins, bytes 8-11 the low four bits of 4-7's, the top two bits of bytes 0-7
    // the high two of 4-7's.
    std::uint32_t u[3];
    std::memcpy(u, head.scales, sizeof u);
    const std::uint32_t sc_lo = u[0] & 0x3f3f3f3fu, mn_lo = u[1] & 0x3f3f3f3fu;
    const std::uint32_t sc_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    const std::uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    // Σ_j m_j·(bsum_2j + bsum_2j+1): the pairs of the 16 sums of 16 (|pair| ≤ 2·16·127) times the
    // mins as 16-bit lanes.
    const __m128i mins = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo)));
    const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bx->bsums)),
                                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(bx->bsums + 8)));
    __m128i summ = _mm_madd_epi16(mins, pairs);
    summ = _mm_add_epi32(summ, _mm_shuffle_epi32(summ, 0x4E));
    summ = _mm_add_epi32(summ, _mm_shuffle_epi32(summ, 0xB1));
    acc_min += bx->d * f16(head.dmin) * static_cast<float>(_mm_cvtsi128_si32(summ));
    // The scales as 16-bit lanes in both halves; sub-block k's broadcast by a shuffle.
    const __m256i sc16 = _mm256_broadcastsi128_si256(
        _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo))));
    auto scale = [&](int k) { return _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<short>((2 * k + 1) << 8 | 2 * k))); };
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
      __m256i lo = _mm256_and_si256(bits, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low4);
      if constexpr (kFifthBit) {
        // Bits 2j and 2j + 1 of each qh byte at bit 4 (the 16-bit shifts leave each byte's own
        // bit in its bit 0, which the mask keeps).
        const __m256i hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(head.qh)), one = _mm256_set1_epi8(1);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), one), 4));
      }
      const __m256i xl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bx->qs + 64 * j));
      const __m256i xh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bx->qs + 64 * j + 32));
      const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, xl), scale(2 * j));
      const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, xh), scale(2 * j + 1));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(bx->d * f16(head.d)), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum(acc) - acc_min;
}
float dot_q4_k(const void* w, const void* x, std::size_t n) { return dot_k4<BlockQ4_K>(w, x, n); }
float dot_q5_k(const void* w, const void* x, std::size_t n) { return dot_k4<BlockQ5_K>(w, x, n); }

// One Q6_K row times T Q8_K activation rows: each block's 6-bit weights are unpacked once and
// multiplied with every row (per row the same arithmetic whatever T). Σ (q − 32)·x = Σ q·x − 32·Σ_g sc_g·Σ_{x in g} x, the second term from
// the activations' sums of 16 (as ggml's kernel does).
template <int T>
void q6_k_tile(const void* w, std::size_t n, const std::byte* x, std::size_t x_row, float* y, std::size_t y_stride) {
  const auto* pw = static_cast<const unsigned char*>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0F), two_bits = _mm256_set1_epi8(3);
  __m256 acc[T];
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (std::size_t i = 0; i < n / kQK_K; ++i, pw += sizeof(BlockQ6_K)) {
    prefetch_ahead<sizeof(BlockQ6_K)>(pw);
    const BlockQ8_K* bx[T];
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) bx[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row) + i;
    const std::uint8_t* ql = pw + offsetof(BlockQ6_K, ql);
    const std::uint8_t* qh = pw + offsetof(BlockQ6_K, qh);
    const auto* scales = reinterpret_cast<const std::int8_t*>(pw + offsetof(BlockQ6_K, scales));
    std::uint16_t dw;
    std::memcpy(&dw, pw + offsetof(BlockQ6_K, d), 2);
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
    __m256i sumi[T];
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bx[t]->bsums));
      sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc16), 5));
    }
    #pragma GCC unroll 8
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32) {
      const __m256i bits1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i bits2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
      __m256i q[4];
      q[0] = _mm256_and_si256(bits1, low4);
      q[1] = _mm256_and_si256(bits2, low4);
      q[2] = _mm256_and_si256(_mm256_srli_epi16(bits1, 4), low4);
      q[3] = _mm256_and_si256(_mm256_srli_epi16(bits2, 4), low4);
      #pragma GCC unroll 8
      for (int s = 0; s < 4; ++s) {
        const __m256i h = _mm256_and_si256(_mm256_srli_epi16(high, 2 * s), two_bits);
        q[s] = _mm256_or_si256(q[s], _mm256_slli_epi16(h, 4));
        // Scales k and k + 1 (k = 8·half + 2s) eight times each, widened: one shuffle, one widening.
        const int k = 8 * half + 2 * s;
        const __m256i scale = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(
            sc8, _mm_set_epi64x(0x0101010101010101LL * (k + 1), 0x0101010101010101LL * k)));
        #pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bx[t]->qs + 128 * half + 32 * s));
          // q in 0..63 unsigned: |pair sum| ≤ 2·63·128, no saturation.
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[s], xq), scale));
        }
      }
    }
    const float d = f16(dw);
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(bx[t]->d * d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) y[t * y_stride] = hsum(acc[t]);
}

float dot_q6_k(const void* w, const void* x, std::size_t n) {
  float y;
  q6_k_tile<1>(w, n, static_cast<const std::byte*>(x), 0, &y, 1);
  return y;
}

// One f32 row times T f32 activation rows, each weight vector loaded once for all T; per
// activation row the same additions in the same order whatever T (a batch gives the results of
// one row at a time).
template <int T>
void f32_tile(const void* w, std::size_t n, const std::byte* x, std::size_t x_row, float* y, std::size_t y_stride) {
  const auto* a = static_cast<const float*>(w);
  const float* b[T];
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) b[t] = reinterpret_cast<const float*>(x + t * x_row);
  __m256 acc[T][4];
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
    #pragma GCC unroll 8
    for (int j = 0; j < 4; ++j) acc[t][j] = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32)
    #pragma GCC unroll 8
    for (int j = 0; j < 4; ++j) {
      const __m256 wj = _mm256_loadu_ps(a + i + 8 * j);
      #pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[t][j] = _mm256_fmadd_ps(wj, _mm256_loadu_ps(b[t] + i + 8 * j), acc[t][j]);
    }
  for (; i + 8 <= n; i += 8) {
    const __m256 w0 = _mm256_loadu_ps(a + i);
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(b[t] + i), acc[t][0]);
  }
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    float s = hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
    for (std::size_t k = i; k < n; ++k) s += a[k] * b[t][k];
    y[t * y_stride] = s;
  }
}

float dot_f32(const void* w, const void* x, std::size_t n) {
  float y;
  f32_tile<1>(w, n, static_cast<const std::byte*>(x), 0, &y, 1);
  return y;
}

// `tokens` activation rows in tiles of K::kTile, then 2, then 1 (the same arithmetic per row
// whatever the tile).
template <class K>
void token_tiles(const void* w, std::size_t n, const std::byte* x, std::size_t x_row, std::size_t tokens, float* y,
                 std::size_t y_stride) {
  std::size_t t = 0;
  for (; t + K::kTile <= tokens; t += K::kTile)
    K::template run<K::kTile>(w, n, x + t * x_row, x_row, y + t * y_stride, y_stride);
  for (; t + 2 <= tokens; t += 2) K::template run<2>(w, n, x + t * x_row, x_row, y + t * y_stride, y_stride);
  for (; t < tokens; ++t) K::template run<1>(w, n, x + t * x_row, x_row, y + t * y_stride, y_stride);
}
struct F32Tiles {  // 2 rows × 4 accumulators fill 8 of AVX2's 16 registers
  static constexpr std::size_t kTile = 2;
  template <int T>
  static void run(const void* w, std::size_t n, const std::byte* x, std::size_t x_row, float* y, std::size_t ys) {
    f32_tile<T>(w, n, x, x_row, y, ys);
  }
};
struct Q6kTiles {
  static constexpr std::size_t kTile = 4;
  template <int T>
  static void run(const void* w, std::size_t n, const std::byte* x, std::size_t x_row, float* y, std::size_t ys) {
    q6_k_tile<T>(w, n, x, x_row, y, ys);
  }
};

// The row-group kernels' products without VNNI: signed Q8_0 weights through the sign trick above,
// 4-bit weights (0..15) straight into _mm256_maddubs_epi16 (|pair sum| ≤ 2·15·127, no saturation).
struct Avx2 {
  static constexpr std::int32_t kQ8Offset = 0;
  static __m256i prep_q8(__m256i w) { return w; }
  static __m256i dot_q8(__m256i acc, __m256i w, __m256i x) { return _mm256_add_epi32(acc, dot_i8_pairs(w, x)); }
  static __m256i dot_u4(__m256i acc, __m256i u, __m256i x) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
  }
};

}  // namespace

const GroupTable& avx2_groups() {
  static const GroupTable table{group_kernel<Avx2, GroupFormat::kQ8_0>, group_kernel<Avx2, GroupFormat::kQ4_0>,
                                group_kernel_q4_k<Avx2>, group_kernel<Avx2, GroupFormat::kMXFP4>};
  return table;
}

const DotTable& avx2_dots() {
  static const DotTable table{dot_f32,  dot_half<false>, dot_half<true>, dot_q8_0,
                              dot_q4_0, dot_q4_k,        dot_q6_k,       token_tiles<F32Tiles>, token_tiles<Q6kTiles>,
                              dot_q5_k,  dot_mxfp4};
  return table;
}

}  // namespace ferry::moe::quant::kernels
