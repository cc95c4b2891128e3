// Portable dot products on quantized blocks: the integer sums and scale products of matmul.h,
// written out in scalar C++ (the reference the AVX2 and VNNI kernels are tested against).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "moe/quant/blocks.h"
#include "moe/quant/kernels.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe::quant::kernels {
namespace {

template <typename Block>
const Block* blocks(const void* p) {
  return static_cast<const Block*>(p);  // callers' buffers hold whole blocks; see load() below
}
// Blocks inside a row are not aligned to their fields (34, 18, 210 bytes), so they are copied.
template <typename Block>
Block load(const void* p, std::size_t i) {
  Block b;
  std::memcpy(&b, static_cast<const unsigned char*>(p) + i * sizeof(Block), sizeof(Block));
  return b;
}

float dot_f32(const void* w, const void* x, std::size_t n) {
  const auto* a = static_cast<const float*>(w);
  const auto* b = static_cast<const float*>(x);
  float acc[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float s = 0;
  for (; i < n; ++i) s += a[i] * b[i];
  for (float v : acc) s += v;
  return s;
}

float dot_f16(const void* w, const void* x, std::size_t n) {
  const auto* b = static_cast<const float*>(x);
  float s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, static_cast<const unsigned char*>(w) + 2 * i, 2);
    s += half_to_float(h) * b[i];
  }
  return s;
}

float dot_bf16(const void* w, const void* x, std::size_t n) {
  const auto* b = static_cast<const float*>(x);
  float s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, static_cast<const unsigned char*>(w) + 2 * i, 2);
    s += bf16_to_float(h) * b[i];
  }
  return s;
}

float dot_q8_0(const void* w, const void* x, std::size_t n) {
  float s = 0;
  for (std::size_t i = 0; i < n / kQK8_0; ++i) {
    const auto bw = load<BlockQ8_0>(w, i);
    const auto bx = load<BlockQ8_0>(x, i);
    int isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += bw.qs[j] * bx.qs[j];
    s += half_to_float(bw.d) * half_to_float(bx.d) * static_cast<float>(isum);
  }
  return s;
}

// Q4_0 and MXFP4: 32 weights as nibbles (weight j the low nibble of byte j, j + 16 the high one),
// each nibble an integer value under one scale: Q4_0 q − 8 under d; MXFP4 its code's doubled E2M1
// value (kMxfp4Values) under half the E8M0 scale (as ggml's ggml_vec_dot_mxfp4_q8_0).
int nibble_value(const BlockQ4_0&, int q) { return q - 8; }
int nibble_value(const BlockMXFP4&, int q) { return kMxfp4Values[q]; }
float block_scale(const BlockQ4_0& b) { return half_to_float(b.d); }
float block_scale(const BlockMXFP4& b) { return e8m0_half_to_float(b.e); }

template <class Block>
float dot_nibbles(const void* w, const void* x, std::size_t n) {
  float s = 0;
  for (std::size_t i = 0; i < n / kQK8_0; ++i) {
    const auto bw = load<Block>(w, i);
    const auto bx = load<BlockQ8_0>(x, i);
    int isum = 0;
    for (int j = 0; j < kQK8_0 / 2; ++j)
      isum += nibble_value(bw, bw.qs[j] & 0xF) * bx.qs[j] + nibble_value(bw, bw.qs[j] >> 4) * bx.qs[j + kQK8_0 / 2];
    s += block_scale(bw) * half_to_float(bx.d) * static_cast<float>(isum);
  }
  return s;
}
float dot_q4_0(const void* w, const void* x, std::size_t n) { return dot_nibbles<BlockQ4_0>(w, x, n); }
float dot_mxfp4(const void* w, const void* x, std::size_t n) { return dot_nibbles<BlockMXFP4>(w, x, n); }

// Q4_K, and Q5_K with its fifth bits (sub-block j's are bit j of qh[l]): one body.
template <class Block>
float dot_k4(const void* w, const void* x, std::size_t n) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  float s = 0;
  for (std::size_t i = 0; i < n / kQK_K; ++i) {
    const auto bw = load<Block>(w, i);
    const auto* bx = blocks<BlockQ8_K>(x) + i;  // activations are written aligned by quantize_activations
    int sumi = 0, summ = 0;
    for (int j = 0; j < kQK_K / 32; ++j) {
      std::uint8_t sc, m;
      q4_k_scale_min(j, bw.scales, sc, m);
      const std::uint8_t* q = bw.qs + j / 2 * 32;
      const int shift = j % 2 ? 4 : 0;
      int isum = 0;
      for (int l = 0; l < 32; ++l) {
        int v = (q[l] >> shift) & 0xF;
        if constexpr (kFifthBit) v |= ((bw.qh[l] >> j) & 1) << 4;
        isum += v * bx->qs[32 * j + l];
      }
      sumi += sc * isum;
      summ += m * (bx->bsums[2 * j] + bx->bsums[2 * j + 1]);
    }
    s += bx->d * (half_to_float(bw.d) * static_cast<float>(sumi) - half_to_float(bw.dmin) * static_cast<float>(summ));
  }
  return s;
}
float dot_q4_k(const void* w, const void* x, std::size_t n) { return dot_k4<BlockQ4_K>(w, x, n); }
float dot_q5_k(const void* w, const void* x, std::size_t n) { return dot_k4<BlockQ5_K>(w, x, n); }

float dot_q6_k(const void* w, const void* x, std::size_t n) {
  float s = 0;
  for (std::size_t i = 0; i < n / kQK_K; ++i) {
    const auto bw = load<BlockQ6_K>(w, i);
    const auto* bx = blocks<BlockQ8_K>(x) + i;
    int sumi = 0;
    for (int half = 0; half < 2; ++half) {
      const std::uint8_t* ql = bw.ql + 64 * half;
      const std::uint8_t* qh = bw.qh + 32 * half;
      const std::int8_t* sc = bw.scales + 8 * half;
      const std::int8_t* q8 = bx->qs + 128 * half;
      for (int quarter = 0; quarter < 4; ++quarter) {
        for (int g = 0; g < 2; ++g) {
          int isum = 0;
          for (int l = 16 * g; l < 16 * g + 16; ++l) {
            const int lo = quarter < 2 ? ql[l + 32 * quarter] & 0xF : ql[l + 32 * (quarter - 2)] >> 4;
            const int q = (lo | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
            isum += q * q8[32 * quarter + l];
          }
          sumi += sc[2 * quarter + g] * isum;
        }
      }
    }
    s += half_to_float(bw.d) * bx->d * static_cast<float>(sumi);
  }
  return s;
}

// Row groups as the reference computes them: their rows put back as stored, then the dot products.
template <QuantType kType, float (*kDot)(const void*, const void*, std::size_t)>
void group(const void* g, std::size_t groups, std::size_t n, const std::byte* x, std::size_t x_row,
           std::size_t tokens, float* y, std::size_t y_stride) {
  const std::size_t row = quant_row_bytes(kType, n);
  thread_local std::vector<unsigned char> rows;
  const auto* p = static_cast<const unsigned char*>(g);
  rows.assign(p, p + groups * kRowGroup * row);
  from_row_groups(kType, rows.data(), groups * kRowGroup, n);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t r = 0; r < groups * kRowGroup; ++r)
      y[t * y_stride + r] = kDot(rows.data() + r * row, x + t * x_row, n);
}

}  // namespace

const GroupTable& portable_groups() {
  static const GroupTable table{group<QuantType::kQ8_0, dot_q8_0>, group<QuantType::kQ4_0, dot_q4_0>,
                                group<QuantType::kQ4_K, dot_q4_k>, group<QuantType::kMXFP4, dot_mxfp4>};
  return table;
}

void quantize_row_q8_k(const float* x, void* out, std::size_t n) {
  auto* y = static_cast<BlockQ8_K*>(out);
  for (std::size_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    float amax = 0;
    for (int j = 0; j < kQK_K; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    BlockQ8_K& b = y[i];
    if (amax == 0) {
      std::memset(&b, 0, sizeof b);
      continue;
    }
    const float iscale = 127.f / amax;
    for (int j = 0; j < kQK_K; ++j) {
      // lrintf (halves to even) without a libm call: adding 1.5·2^23 leaves the rounded value in
      // the low mantissa bits, exact for |v| <= 2^22 (ggml's nearest_int).
      const float t = iscale * x[j] + 12582912.f;
      std::int32_t bits;
      std::memcpy(&bits, &t, sizeof bits);
      const int q = (bits & 0x007fffff) - 0x00400000;
      b.qs[j] = static_cast<std::int8_t>(q > 127 ? 127 : q < -127 ? -127 : q);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
      b.bsums[g] = static_cast<std::int16_t>(sum);
    }
    b.d = 1 / iscale;
  }
}

// Row after row through the dot product.
template <float (*kDot)(const void*, const void*, std::size_t)>
void tokens_by_dot(const void* w, std::size_t n, const std::byte* x, std::size_t x_row, std::size_t tokens, float* y,
                   std::size_t y_stride) {
  for (std::size_t t = 0; t < tokens; ++t) y[t * y_stride] = kDot(w, x + t * x_row, n);
}

const DotTable& portable_dots() {
  static const DotTable table{dot_f32,  dot_f16,  dot_bf16, dot_q8_0, dot_q4_0, dot_q4_k, dot_q6_k,
                              tokens_by_dot<dot_f32>, tokens_by_dot<dot_q6_k>, dot_q5_k, dot_mxfp4};
  return table;
}

}  // namespace ferry::moe::quant::kernels
