#include "moe/quant/dequantize.h"

#include <cstring>

#include "core/half.h"
#include "moe/quant/blocks.h"

namespace ferry::moe::quant {
namespace {

// Blocks are read through memcpy: a GGUF tensor is 32-byte aligned but a block inside it (34,
// 18, 210 bytes) is not aligned to its f16 fields.
template <typename Block>
Block load(const unsigned char* p, std::size_t i) {
  Block b;
  std::memcpy(&b, p + i * sizeof(Block), sizeof(Block));
  return b;
}

void dequantize_q8_0(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockQ8_0>(p, i);
    const float d = half_to_float(b.d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = b.qs[j] * d;
    y += kQK8_0;
  }
}

void dequantize_q4_0(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockQ4_0>(p, i);
    const float d = half_to_float(b.d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = ((b.qs[j] & 0x0F) - 8) * d;
      y[j + kQK4_0 / 2] = ((b.qs[j] >> 4) - 8) * d;
    }
    y += kQK4_0;
  }
}

// ggml's dequantize_row_mxfp4: the int8 value times half the scale, one float product each.
void dequantize_mxfp4(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockMXFP4>(p, i);
    const float d = e8m0_half_to_float(b.e);
    for (int j = 0; j < kQK_MXFP4 / 2; ++j) {
      y[j] = kMxfp4Values[b.qs[j] & 0x0F] * d;
      y[j + kQK_MXFP4 / 2] = kMxfp4Values[b.qs[j] >> 4] * d;
    }
    y += kQK_MXFP4;
  }
}

void dequantize_q5_0(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockQ5_0>(p, i);
    const float d = half_to_float(b.d);
    std::uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const auto xh_0 = static_cast<std::uint8_t>(((qh >> j) << 4) & 0x10);
      const auto xh_1 = static_cast<std::uint8_t>((qh >> (j + 12)) & 0x10);
      const std::int32_t x0 = ((b.qs[j] & 0x0F) | xh_0) - 16;
      const std::int32_t x1 = ((b.qs[j] >> 4) | xh_1) - 16;
      y[j] = x0 * d;
      y[j + kQK5_0 / 2] = x1 * d;
    }
    y += kQK5_0;
  }
}

void dequantize_q5_1(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockQ5_1>(p, i);
    const float d = half_to_float(b.d);
    const float m = half_to_float(b.m);
    std::uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const auto xh_0 = static_cast<std::uint8_t>(((qh >> j) << 4) & 0x10);
      const auto xh_1 = static_cast<std::uint8_t>((qh >> (j + 12)) & 0x10);
      const int x0 = (b.qs[j] & 0x0F) | xh_0;
      const int x1 = (b.qs[j] >> 4) | xh_1;
      y[j] = x0 * d + m;
      y[j + kQK5_0 / 2] = x1 * d + m;
    }
    y += kQK5_0;
  }
}

void dequantize_q5_k(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockQ5_K>(p, i);
    const float d = half_to_float(b.d);
    const float dmin = half_to_float(b.dmin);
    const std::uint8_t* ql = b.qs;
    std::uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, ql += 32) {
      std::uint8_t sc, m;
      q4_k_scale_min(is, b.scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      q4_k_scale_min(is + 1, b.scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (b.qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (b.qh[l] & u2 ? 16 : 0)) - m2;
      u1 = static_cast<std::uint8_t>(u1 << 2);
      u2 = static_cast<std::uint8_t>(u2 << 2);
    }
  }
}

void dequantize_q4_k(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockQ4_K>(p, i);
    const float d = half_to_float(b.d);
    const float dmin = half_to_float(b.dmin);
    const std::uint8_t* q = b.qs;
    for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, q += 32) {
      std::uint8_t sc, m;
      q4_k_scale_min(is, b.scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      q4_k_scale_min(is + 1, b.scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

void dequantize_q6_k(const unsigned char* p, float* y, std::size_t nb) {
  for (std::size_t i = 0; i < nb; ++i) {
    const auto b = load<BlockQ6_K>(p, i);
    const float d = half_to_float(b.d);
    const std::uint8_t* ql = b.ql;
    const std::uint8_t* qh = b.qh;
    const std::int8_t* sc = b.scales;
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<std::int8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<std::int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<std::int8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<std::int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

}  // namespace

void dequantize_row(QuantType type, const void* src, float* dst, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(src);
  const std::size_t nb = quant_row_bytes(type, n) / quant_traits(type).block_bytes;
  switch (type) {
    case QuantType::kF32:
      if (n) std::memcpy(dst, src, n * 4);
      return;
    case QuantType::kF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = half_to_float(h);
      }
      return;
    case QuantType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = bf16_to_float(h);
      }
      return;
    case QuantType::kQ8_0: return dequantize_q8_0(p, dst, nb);
    case QuantType::kQ4_0: return dequantize_q4_0(p, dst, nb);
    case QuantType::kQ4_K: return dequantize_q4_k(p, dst, nb);
    case QuantType::kQ6_K: return dequantize_q6_k(p, dst, nb);
    case QuantType::kQ5_0: return dequantize_q5_0(p, dst, nb);
    case QuantType::kQ5_1: return dequantize_q5_1(p, dst, nb);
    case QuantType::kQ5_K: return dequantize_q5_k(p, dst, nb);
    case QuantType::kMXFP4: return dequantize_mxfp4(p, dst, nb);
  }
}

}  // namespace ferry::moe::quant
