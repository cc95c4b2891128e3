// The byte layouts of GGUF's quantized blocks, byte for byte as ggml-common.h defines them
// (little-endian; f16 fields are IEEE binary16 bit patterns). See quant_type.h for the formulas.
#pragma once

#include <cstdint>
#include <cstring>

namespace ferry::moe::quant {

constexpr int kQK8_0 = 32;
constexpr int kQK4_0 = 32;
constexpr int kQK5_0 = 32;
constexpr int kQK_MXFP4 = 32;
constexpr int kQK_K = 256;         // weights per K-quant super-block
constexpr int kKScaleBytes = 12;   // Q4_K: 8 six-bit scales and 8 six-bit mins

struct BlockQ8_0 {
  std::uint16_t d;  // f16
  std::int8_t qs[kQK8_0];
};
struct BlockQ4_0 {
  std::uint16_t d;                // f16
  std::uint8_t qs[kQK4_0 / 2];    // weight j in the low nibble of byte j, weight j+16 in the high
};
struct BlockQ5_0 {
  std::uint16_t d;                // f16
  std::uint8_t qh[4];             // bit 4 of weight j in bit j (little-endian u32)
  std::uint8_t qs[kQK5_0 / 2];    // low 4 bits: weight j low nibble of byte j, weight j+16 high
};
struct BlockQ5_1 {
  std::uint16_t d;                // f16 step
  std::uint16_t m;                // f16 min
  std::uint8_t qh[4];             // as Q5_0's
  std::uint8_t qs[kQK5_0 / 2];    // as Q5_0's
};
struct BlockMXFP4 {
  std::uint8_t e;                 // E8M0 exponent: the block's scale is 2^(e − 127)
  std::uint8_t qs[kQK_MXFP4 / 2]; // E2M1 codes: weight j in the low nibble of byte j, weight j+16 in the high
};
struct BlockQ4_K {
  std::uint16_t d;                      // f16 super-block scale of the sub-block scales
  std::uint16_t dmin;                   // f16 super-block scale of the sub-block mins
  std::uint8_t scales[kKScaleBytes];    // 6-bit scale and min of each 32-weight sub-block
  std::uint8_t qs[kQK_K / 2];           // per 64 weights: 32 bytes, low nibbles first 32, high next 32
};
struct BlockQ5_K {
  std::uint16_t d;                      // f16 super-block scale of the sub-block scales
  std::uint16_t dmin;                   // f16 super-block scale of the sub-block mins
  std::uint8_t scales[kKScaleBytes];    // as Q4_K's
  std::uint8_t qh[kQK_K / 8];           // bit 4: per 64 weights, bits 2k (first 32) and 2k+1 (next 32)
  std::uint8_t qs[kQK_K / 2];           // low 4 bits, laid out as Q4_K's nibbles
};
struct BlockQ6_K {
  std::uint8_t ql[kQK_K / 2];   // low 4 bits
  std::uint8_t qh[kQK_K / 4];   // high 2 bits
  std::int8_t scales[kQK_K / 16];
  std::uint16_t d;              // f16
};
// The activations' format for the K-quant dot products (ggml's block_q8_K): f32 scale, 256
// int8, and the sums of each 16 for the mins.
struct BlockQ8_K {
  float d;
  std::int8_t qs[kQK_K];
  std::int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// MXFP4's 16 E2M1 codes (sign bit 3, 2 exponent bits, 1 mantissa bit) as twice their values, so
// that they are integers (ggml's kvalues_mxfp4); the block's scale is halved to match.
constexpr std::int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half an E8M0 scale, 2^(e − 128), built from its bits as ggml's GGML_E8M0_TO_FP32_HALF does: e = 0
// and 1 are the subnormals 2^-128 and 2^-127; e = 255 (NaN in the OCP MX spec) is 2^127 (half of
// 2^128) here as in ggml, and refused where blocks come in (moe/model/finite_blocks.h).
inline float e8m0_half_to_float(std::uint8_t e) {
  const std::uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Q4_K's (and Q5_K's) 6-bit scale and min of sub-block j (0..7) packed in its 12 scale bytes.
inline void q4_k_scale_min(int j, const std::uint8_t* q, std::uint8_t& scale, std::uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    min = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace ferry::moe::quant
