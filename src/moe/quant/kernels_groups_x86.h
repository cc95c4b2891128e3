// The row-group kernels (row_groups.h) for x86, written once over the integer dot product of the
// instruction set: included by kernels_avx2.cc and kernels_vnni.cc, each compiling its own copy
// (anonymous namespace) under its own #pragma GCC target. `Isa` provides
//   prep_q8(w)           Q8_0 weight bytes as its dot_q8 takes them
//   dot_q8(acc, w, x)    acc + Σ of 4-byte products per 32-bit lane, w from prep_q8, x signed
//   dot_u4(acc, u, x)    the same for small unsigned weights u: 4-bit levels (0..15), or MXFP4's
//                        doubled E2M1 values offset by 12 (0..24)
//   kQ8Offset            what prep_q8 added to each weight (its products carry offset·Σx)
// A lane r of the products is row r of the group: x's 4-byte chunk c is broadcast to all lanes,
// so per block the 8 rows' sums come out as one vector, scaled by the 8 row scales at once.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "moe/quant/blocks.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe::quant::kernels {
namespace {

// Bytes ahead of the weights being multiplied that a kernel asks the cache for. A block is a few
// hundred instructions, so the reorder window alone keeps the reads of about one block in flight;
// on a machine whose hardware prefetcher does not run far enough ahead, that left the kernels at
// 0.35-0.5 of the read bandwidth (Q5_K, Q6_K rows; bench/RESULTS.md, "Prefetching"). 2 KiB was
// best of 0, 2, 4 and 8 KiB there. Prefetches never fault, past the end of the matrix too.
constexpr std::size_t kPrefetchAhead = 2048;
template <std::size_t kBytes>
inline void prefetch_ahead(const unsigned char* p) {
#pragma GCC unroll 32
  for (std::size_t l = 0; l < kBytes; l += 64) _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchAhead + l), _MM_HINT_T0);
}

inline std::int32_t load_i32(const unsigned char* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 32-weight formats the group kernel below reads, each with Q8_0 activations.
enum class GroupFormat { kQ8_0, kQ4_0, kMXFP4 };

// Half the E8M0 scales of 8 rows (e8m0_half_to_float on 8 lanes): 2^(e−128) as bits (e − 1) << 23,
// the subnormals 0x00200000 << e for e < 2.
inline __m256 e8m0_half_x8(const unsigned char* e8) {
  const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(e8)));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
}

// Rows of one group × kTokens activation rows (Q8_0 blocks, then the blocks' int32 sums): Q8_0,
// Q4_0 or MXFP4 weights. MXFP4's codes become their doubled values plus 12 through a byte shuffle
// (0..24, unsigned as dot_u4 takes them), and the 12·Σx they add is taken off with the sums, as
// Q4_0's offset 8 is.
template <class Isa, GroupFormat kFormat, int kTokens>
void group_tile(const unsigned char* w, std::size_t nb, const unsigned char* x, std::size_t x_row, float* y,
                std::size_t y_stride) {
  constexpr bool kQ8 = kFormat == GroupFormat::kQ8_0, kMx = kFormat == GroupFormat::kMXFP4;
  constexpr std::size_t kBlock = kQ8 ? sizeof(BlockQ8_0) : kMx ? sizeof(BlockMXFP4) : sizeof(BlockQ4_0);
  constexpr std::size_t kScaleBytes = kMx ? 1 : 2;  // per row
  constexpr std::int32_t kOffset = kQ8 ? Isa::kQ8Offset : kMx ? 12 : 8;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i values = _mm256_broadcastsi128_si256(_mm_add_epi8(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)), _mm_set1_epi8(12)));
  __m256 acc[kTokens];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b, w += kRowGroup * kBlock) {
    prefetch_ahead<kRowGroup * kBlock>(w);
    __m256 dw;
    if constexpr (kMx)
      dw = e8m0_half_x8(w);
    else
      dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const unsigned char* qs = w + kScaleBytes * kRowGroup;
    __m256i q[8];
#pragma GCC unroll 4
    for (int c = 0; c < 8; c += 2) {
      if constexpr (!kQ8) {  // chunk c/2's low nibbles are weights 4c'.., its high ones 16+4c'..
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 16 * c));
        q[c / 2] = _mm256_and_si256(v, low4);
        q[c / 2 + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        if constexpr (kMx) {
          q[c / 2] = _mm256_shuffle_epi8(values, q[c / 2]);
          q[c / 2 + 4] = _mm256_shuffle_epi8(values, q[c / 2 + 4]);
        }
      } else {
        q[c] = Isa::prep_q8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c)));
        q[c + 1] = Isa::prep_q8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c + 32)));
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < kTokens; ++t) {
      const unsigned char* xt = x + t * x_row;
      const unsigned char* xb = xt + b * sizeof(BlockQ8_0);
      // Four independent sums (the products' latency, not their throughput, would bound one chain).
      __m256i p[4] = {_mm256_set1_epi32(-kOffset * load_i32(xt + nb * sizeof(BlockQ8_0) + 4 * b)),
                      _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        const __m256i xc = _mm256_set1_epi32(load_i32(xb + 2 + 4 * c));
        p[c % 4] = kQ8 ? Isa::dot_q8(p[c % 4], q[c], xc) : Isa::dot_u4(p[c % 4], q[c], xc);
      }
      const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(p[0], p[1]), _mm256_add_epi32(p[2], p[3]));
      std::uint16_t dx;
      std::memcpy(&dx, xb, 2);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(_cvtsh_ss(dx))), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// Q4_K: per super-block of 256, the 8 rows' 6-bit sub-block scales and mins as float vectors (a
// lane per row), then per pair of sub-blocks the nibbles of 8 chunks (low: sub-block 2p, high:
// 2p+1) times the Q8_K activations, y = d_x·(d·Σ_j sc_j·S_j − dmin·Σ_j m_j·bsum_j).
template <class Isa, int kTokens>
void group_tile_q4_k(const unsigned char* w, std::size_t nb, const unsigned char* x, std::size_t x_row, float* y,
                     std::size_t y_stride) {
  constexpr std::size_t kGroupBlock = kRowGroup * sizeof(BlockQ4_K);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[kTokens];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b, w += kGroupBlock) {
    prefetch_ahead<kGroupBlock>(w);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16)));
    // Scale byte i of the 8 rows is 8 bytes at 32 + 8i (row_groups.h); q4_k_scale_min on 8 lanes.
    auto byte_i = [&](int i) {
      return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + 32 + 8 * i)));
    };
    const __m256i k63 = _mm256_set1_epi32(63), k15 = _mm256_set1_epi32(15);
    alignas(32) float sc[8][8], mn[8][8];  // [sub-block][row]
    for (int j = 0; j < 4; ++j) {
      const __m256i a = byte_i(j), m = byte_i(j + 4), h = byte_i(j + 8);
      _mm256_store_ps(sc[j], _mm256_cvtepi32_ps(_mm256_and_si256(a, k63)));
      _mm256_store_ps(mn[j], _mm256_cvtepi32_ps(_mm256_and_si256(m, k63)));
      // Sub-block j + 4: low 4 bits in byte j + 8 (scale low nibble, min high), top 2 in bytes j, j + 4.
      _mm256_store_ps(sc[j + 4], _mm256_cvtepi32_ps(_mm256_or_si256(
                                     _mm256_and_si256(h, k15), _mm256_slli_epi32(_mm256_srli_epi32(a, 6), 4))));
      _mm256_store_ps(mn[j + 4], _mm256_cvtepi32_ps(_mm256_or_si256(
                                     _mm256_srli_epi32(h, 4), _mm256_slli_epi32(_mm256_srli_epi32(m, 6), 4))));
    }
    const unsigned char* qs = w + 128;
    __m256 sums[kTokens];  // Σ_j sc_j·S_j per row
    for (auto& a : sums) a = _mm256_setzero_ps();
    for (int p = 0; p < 4; ++p, qs += 256) {
      __m256i lo[8], hi[8];
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * k));
        lo[k] = _mm256_and_si256(v, low4);
        hi[k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      }
      const __m256 sc_lo = _mm256_load_ps(sc[2 * p]), sc_hi = _mm256_load_ps(sc[2 * p + 1]);
#pragma GCC unroll 4
      for (int t = 0; t < kTokens; ++t) {
        const auto* xq = reinterpret_cast<const BlockQ8_K*>(x + t * x_row)[b].qs + 64 * p;
        const auto* xu = reinterpret_cast<const unsigned char*>(xq);
        __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          s[k % 2] = Isa::dot_u4(s[k % 2], lo[k], _mm256_set1_epi32(load_i32(xu + 4 * k)));
          s[2 + k % 2] = Isa::dot_u4(s[2 + k % 2], hi[k], _mm256_set1_epi32(load_i32(xu + 32 + 4 * k)));
        }
        sums[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s[0], s[1])), sc_lo, sums[t]);
        sums[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s[2], s[3])), sc_hi, sums[t]);
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      const auto& xb = reinterpret_cast<const BlockQ8_K*>(x + t * x_row)[b];
      __m256 mins = _mm256_setzero_ps();
      for (int j = 0; j < 8; ++j)
        mins = _mm256_fmadd_ps(_mm256_load_ps(mn[j]),
                               _mm256_set1_ps(static_cast<float>(xb.bsums[2 * j] + xb.bsums[2 * j + 1])), mins);
      const __m256 v = _mm256_fmsub_ps(d, sums[t], _mm256_mul_ps(dmin, mins));
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xb.d), v, acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// Calls f(std::integral_constant<int, T>, first token) over the tokens in tiles of T = 4, then the rest.
template <typename F>
void over_tokens(std::size_t tokens, F&& f) {
  std::size_t t = 0;
  for (; t + 4 <= tokens; t += 4) f(std::integral_constant<int, 4>{}, t);
  switch (tokens - t) {
    case 3: f(std::integral_constant<int, 3>{}, t); break;
    case 2: f(std::integral_constant<int, 2>{}, t); break;
    case 1: f(std::integral_constant<int, 1>{}, t); break;
    default: break;
  }
}

// Group after group (its weights stay in the cache while the token tiles pass).
template <class Isa, GroupFormat kFormat>
void group_kernel(const void* group, std::size_t groups, std::size_t n, const std::byte* x, std::size_t x_row,
                  std::size_t tokens, float* y, std::size_t y_stride) {
  constexpr std::size_t kBlock = kFormat == GroupFormat::kQ8_0   ? sizeof(BlockQ8_0)
                                 : kFormat == GroupFormat::kMXFP4 ? sizeof(BlockMXFP4)
                                                                  : sizeof(BlockQ4_0);
  const auto* xp = reinterpret_cast<const unsigned char*>(x);
  for (std::size_t g = 0; g < groups; ++g) {
    const auto* w = static_cast<const unsigned char*>(group) + g * kRowGroup * (n / kQK8_0) * kBlock;
    over_tokens(tokens, [&](auto kTokens, std::size_t t) {
      group_tile<Isa, kFormat, decltype(kTokens)::value>(w, n / kQK8_0, xp + t * x_row, x_row,
                                                         y + t * y_stride + g * kRowGroup, y_stride);
    });
  }
}

template <class Isa>
void group_kernel_q4_k(const void* group, std::size_t groups, std::size_t n, const std::byte* x, std::size_t x_row,
                       std::size_t tokens, float* y, std::size_t y_stride) {
  const auto* xp = reinterpret_cast<const unsigned char*>(x);
  for (std::size_t g = 0; g < groups; ++g) {
    const auto* w = static_cast<const unsigned char*>(group) + g * kRowGroup * (n / kQK_K) * sizeof(BlockQ4_K);
    over_tokens(tokens, [&](auto kTokens, std::size_t t) {
      group_tile_q4_k<Isa, decltype(kTokens)::value>(w, n / kQK_K, xp + t * x_row, x_row,
                                                     y + t * y_stride + g * kRowGroup, y_stride);
    });
  }
}

}  // namespace
}  // namespace ferry::moe::quant::kernels
