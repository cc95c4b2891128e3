// The row-group kernels (row_groups.h) for x86, written once over the integer dot product of the
// instruction set: included by kernels_avx2.cc and kernels_vnni.cc, each compiling its own copy
// (anonymous namespace) under its own #pragma GCC target. `Isa` provides
//   prep_q8(w)           Q8_0 weight bytes as its dot_q8 takes them
//   dot_q8(acc, w, x)    acc + Σ of 4-byte products per 32-bit lane, w from prep_q8, x signed
//   dot_u4(acc, u, x)    the same for unsigned 4-bit weights u (0..15)
//   kQ8Offset            what prep_q8 added to each weight (its products carry offset·Σx)
// A lane r of the products is row r of the group: x's 4-byte chunk c is broadcast to all lanes,
// so per block the 8 rows' sums come out as one vector, scaled by the 8 row scales at once.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "moe/quant/blocks.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe::quant::kernels {
namespace {

inline std::int32_t load_i32(const unsigned char* p) {
  std::int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Rows of one group × kTokens activation rows (Q8_0 blocks, then the blocks' int32 sums).
template <class Isa, bool kQ4, int kTokens>
void group_tile(const unsigned char* w, std::size_t nb, const unsigned char* x, std::size_t x_row, float* y,
                std::size_t y_stride) {
  constexpr std::size_t kBlock = kQ4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  constexpr std::int32_t kOffset = kQ4 ? 8 : Isa::kQ8Offset;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[kTokens];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b, w += kRowGroup * kBlock) {
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const unsigned char* qs = w + 2 * kRowGroup;
    __m256i q[8];
#pragma GCC unroll 4
    for (int c = 0; c < 8; c += 2) {
      if constexpr (kQ4) {  // chunk c/2's low nibbles are weights 4c'.., its high ones 16+4c'..
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 16 * c));
        q[c / 2] = _mm256_and_si256(v, low4);
        q[c / 2 + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
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
        p[c % 4] = kQ4 ? Isa::dot_u4(p[c % 4], q[c], xc) : Isa::dot_q8(p[c % 4], q[c], xc);
      }
      const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(p[0], p[1]), _mm256_add_epi32(p[2], p[3]));
      std::uint16_t dx;
      std::memcpy(&dx, xb, 2);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(_cvtsh_ss(dx))), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

template <class Isa, bool kQ4>
void group_kernel(const void* group, std::size_t n, const std::byte* x, std::size_t x_row, std::size_t tokens,
                  float* y, std::size_t y_stride) {
  const auto* w = static_cast<const unsigned char*>(group);
  const auto* xp = reinterpret_cast<const unsigned char*>(x);
  const std::size_t nb = n / kQK8_0;
  std::size_t t = 0;
  for (; t + 4 <= tokens; t += 4) group_tile<Isa, kQ4, 4>(w, nb, xp + t * x_row, x_row, y + t * y_stride, y_stride);
  switch (tokens - t) {
    case 3: group_tile<Isa, kQ4, 3>(w, nb, xp + t * x_row, x_row, y + t * y_stride, y_stride); break;
    case 2: group_tile<Isa, kQ4, 2>(w, nb, xp + t * x_row, x_row, y + t * y_stride, y_stride); break;
    case 1: group_tile<Isa, kQ4, 1>(w, nb, xp + t * x_row, x_row, y + t * y_stride, y_stride); break;
    default: break;
  }
}

}  // namespace
}  // namespace ferry::moe::quant::kernels
