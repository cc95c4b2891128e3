#include "moe/quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"
#include "moe/quant/blocks.h"

namespace ferry::moe::quant {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, through the float adder (ggml's nearest_int); |x| < 2^22.
int nearest_int(float x) {
  const float v = x + 12582912.f;
  std::int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

template <typename Block>
void store(unsigned char* p, std::size_t i, const Block& b) {
  std::memcpy(p + i * sizeof(Block), &b, sizeof(Block));
}

// roundf (halves away from zero) without a libm call per value, so that the loop vectorises: for
// |v| < 2^29 the sum v ± 0.5 is exact in double, and truncation then rounds as roundf does.
inline int round_half_away(float v) { return static_cast<int>(static_cast<double>(v) + (v < 0 ? -0.5 : 0.5)); }

void quantize_q8_0(const float* x, unsigned char* out, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = float_to_half(d);
    for (int j = 0; j < kQK8_0; ++j) b.qs[j] = static_cast<std::int8_t>(round_half_away(x[j] * id));
    store(out, i, b);
  }
}

void quantize_q4_0(const float* x, unsigned char* out, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i, x += kQK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = float_to_half(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[kQK4_0 / 2 + j] * id;
      const auto q0 = static_cast<std::uint8_t>(std::min(15, static_cast<int>(static_cast<std::int8_t>(x0 + 8.5f))));
      const auto q1 = static_cast<std::uint8_t>(std::min(15, static_cast<int>(static_cast<std::int8_t>(x1 + 8.5f))));
      b.qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
    store(out, i, b);
  }
}

// The code of v[q]·d nearest to x, the first of equals (ggml's best_index_mxfp4: a linear scan
// with a strict <, so +0 wins over −0 and a tie goes to the smaller index).
int nearest_mxfp4(float x, float d) {
  int best = 0;
  float best_err = std::fabs(kMxfp4Values[0] * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(kMxfp4Values[i] * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// ggml's quantize_row_mxfp4_ref: e = ⌊log2 max|x|⌋ − 2 + 127, so that max|x| / 2^(e−127) lies in
// [4, 8) (weights above 6 of the scale take the largest code, 6), then each weight the nearest
// code. As in ggml the exponent goes through float → int → uint8 (a block whose max|x| is below
// 2^-125 wraps around, as llama.cpp's files hold it).
void quantize_mxfp4(const float* x, unsigned char* out, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i, x += kQK_MXFP4) {
    float amax = 0.0f;
    for (int j = 0; j < kQK_MXFP4; ++j)
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    BlockMXFP4 b;
    b.e = amax > 0.0f ? static_cast<std::uint8_t>(static_cast<int>(std::floor(std::log2(amax)) - 2 + 127)) : 0;
    const float d = e8m0_half_to_float(b.e);
    for (int j = 0; j < kQK_MXFP4 / 2; ++j) {
      const int q0 = nearest_mxfp4(x[j], d);
      const int q1 = nearest_mxfp4(x[kQK_MXFP4 / 2 + j], d);
      b.qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
    store(out, i, b);
  }
}

void quantize_q5_0(const float* x, unsigned char* out, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i, x += kQK5_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK5_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 b;
    b.d = float_to_half(d);
    std::uint32_t qh = 0;
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[kQK5_0 / 2 + j] * id;
      const auto q0 = static_cast<std::uint8_t>(std::min(31, static_cast<int>(static_cast<std::int8_t>(x0 + 16.5f))));
      const auto q1 = static_cast<std::uint8_t>(std::min(31, static_cast<int>(static_cast<std::int8_t>(x1 + 16.5f))));
      b.qs[j] = static_cast<std::uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<std::uint32_t>((q0 & 0x10u) >> 4) << j;
      qh |= static_cast<std::uint32_t>((q1 & 0x10u) >> 4) << (j + kQK5_0 / 2);
    }
    std::memcpy(b.qh, &qh, sizeof qh);
    store(out, i, b);
  }
}

void quantize_q5_1(const float* x, unsigned char* out, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i, x += kQK5_0) {
    float min = std::numeric_limits<float>::max(), max = -std::numeric_limits<float>::max();
    for (int j = 0; j < kQK5_0; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / ((1 << 5) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 b;
    b.d = float_to_half(d);
    b.m = float_to_half(min);
    std::uint32_t qh = 0;
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const auto q0 = static_cast<std::uint8_t>((x[j] - min) * id + 0.5f);
      const auto q1 = static_cast<std::uint8_t>((x[kQK5_0 / 2 + j] - min) * id + 0.5f);
      b.qs[j] = static_cast<std::uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<std::uint32_t>((q0 & 0x10u) >> 4) << j;
      qh |= static_cast<std::uint32_t>((q1 & 0x10u) >> 4) << (j + kQK5_0 / 2);
    }
    std::memcpy(b.qh, &qh, sizeof qh);
    store(out, i, b);
  }
}

// Scale and min of n weights on levels 0..nmax, x ≈ scale·L − min: start from the range, then
// try nstep+1 scales (nmax + rmin + k·rdelta)/(max − min) and keep the weighted least-squares fit
// of smallest weighted squared error (ggml's make_qkx2_quants with use_mad = false).
float fit_scale_min(int n, int nmax, const float* x, const float* w, std::uint8_t* L, float* the_min, float rmin,
                    float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, 0);
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<std::uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * L[i] + min - x[i];
    best_error += w[i] * (diff * diff);
  }
  std::uint8_t Laux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<std::uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * Laux[i] + this_min - x[i];
        cur_error += w[i] * (diff * diff);
      }
      if (cur_error < best_error) {
        std::copy(Laux, Laux + n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Symmetric scale of n weights on levels −nmax..nmax−1, weights x²: the scale of the largest
// magnitude and 18 neighbours (nmax ± 0.1k), keeping the best weighted least-squares fit (ggml's
// make_qx_quants with rmse_type 1). L receives level + nmax.
float fit_scale_symmetric(int n, int nmax, const float* x, std::int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, 0);
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<std::int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<std::int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// The part Q4_K and Q5_K share (ggml's quantize_row_q4_K_ref / q5_K_ref): each of the 8
// sub-blocks of 32 gets a (scale, min) fit over levels 0..nmax (fit_scale_min with rmin, nstep),
// the 8 pairs are packed as 6-bit values under the super-block's d and dmin, and L receives every
// weight's level under the packed pair.
template <typename Block>
void fit_k_super_block(const float* x, int nmax, float rmin, int nstep, Block& b, std::uint8_t* L) {
  float weights[32], mins[kQK_K / 32], scales[kQK_K / 32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = fit_scale_min(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], rmin, 0.1f, nstep);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQK_K / 32; ++j) {
    const auto ls = static_cast<std::uint8_t>(std::min<int>(63, static_cast<std::uint8_t>(nearest_int(inv_scale * scales[j]))));
    const auto lm = static_cast<std::uint8_t>(std::min<int>(63, static_cast<std::uint8_t>(nearest_int(inv_min * mins[j]))));
    if (j < 4) {
      b.scales[j] = ls;
      b.scales[j + 4] = lm;
    } else {
      b.scales[j + 4] = static_cast<std::uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      b.scales[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
      b.scales[j] |= static_cast<std::uint8_t>((lm >> 4) << 6);
    }
  }
  b.d = float_to_half(max_scale / 63.f);
  b.dmin = float_to_half(max_min / 63.f);
  for (int j = 0; j < kQK_K / 32; ++j) {
    std::uint8_t sc, m;
    q4_k_scale_min(j, b.scales, sc, m);
    const float d = half_to_float(b.d) * sc;
    if (d == 0) continue;
    const float dm = half_to_float(b.dmin) * m;
    for (int ii = 0; ii < 32; ++ii)
      L[32 * j + ii] = static_cast<std::uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + ii] + dm) / d))));
  }
}

void quantize_q4_k(const float* x, unsigned char* out, std::size_t nb) {
  std::uint8_t L[kQK_K];
  for (std::size_t i = 0; i < nb; ++i, x += kQK_K) {
    BlockQ4_K b{};
    fit_k_super_block(x, 15, -1.f, 20, b, L);
    std::uint8_t* q = b.qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<std::uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    store(out, i, b);
  }
}

// Q4_K's scheme with 5-bit levels (ggml's quantize_row_q5_K_ref): the sub-block fit tries 16
// scales from nmax − 0.5 instead of 21 from nmax − 1.
void quantize_q5_k(const float* x, unsigned char* out, std::size_t nb) {
  std::uint8_t L[kQK_K];
  for (std::size_t i = 0; i < nb; ++i, x += kQK_K) {
    BlockQ5_K b{};
    fit_k_super_block(x, 31, -0.5f, 15, b, L);
    std::uint8_t* ql = b.qs;
    std::uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < kQK_K; n += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j];
        if (l1 > 15) {
          l1 -= 16;
          b.qh[j] |= m1;
        }
        int l2 = L[n + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          b.qh[j] |= m2;
        }
        ql[j] = static_cast<std::uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<std::uint8_t>(m1 << 2);
      m2 = static_cast<std::uint8_t>(m2 << 2);
    }
    store(out, i, b);
  }
}

void quantize_q6_k(const float* x, unsigned char* out, std::size_t nb) {
  std::int8_t L[kQK_K];
  float scales[kQK_K / 16];
  for (std::size_t i = 0; i < nb; ++i, x += kQK_K) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      scales[ib] = fit_scale_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    BlockQ6_K b{};
    if (max_abs_scale < kGroupMaxEps) {
      b.d = float_to_half(0.f);
      store(out, i, b);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = float_to_half(1 / iscale);
    for (int ib = 0; ib < kQK_K / 16; ++ib)
      b.scales[ib] = static_cast<std::int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = half_to_float(b.d) * b.scales[j];
      if (d == 0) continue;
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = static_cast<std::int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d))) + 32);
    }
    std::uint8_t* ql = b.ql;
    std::uint8_t* qh = b.qh;
    for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
        ql[l] = static_cast<std::uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<std::uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<std::uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                          ((L[j + l + 96] >> 4) << 6));
      }
    }
    store(out, i, b);
  }
}

}  // namespace

void quantize_row(QuantType type, const float* src, void* dst, std::size_t n) {
  auto* p = static_cast<unsigned char*>(dst);
  const std::size_t nb = quant_row_bytes(type, n) / quant_traits(type).block_bytes;
  switch (type) {
    case QuantType::kF32:
      if (n) std::memcpy(dst, src, n * 4);
      return;
    case QuantType::kF16:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t h = float_to_half(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case QuantType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t h = float_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case QuantType::kQ8_0: return quantize_q8_0(src, p, nb);
    case QuantType::kQ4_0: return quantize_q4_0(src, p, nb);
    case QuantType::kQ4_K: return quantize_q4_k(src, p, nb);
    case QuantType::kQ6_K: return quantize_q6_k(src, p, nb);
    case QuantType::kQ5_0: return quantize_q5_0(src, p, nb);
    case QuantType::kQ5_1: return quantize_q5_1(src, p, nb);
    case QuantType::kQ5_K: return quantize_q5_k(src, p, nb);
    case QuantType::kMXFP4: return quantize_mxfp4(src, p, nb);
  }
}

}  // namespace ferry::moe::quant
