// GGUF block formats (moe/quant): dequantization of hand-built blocks by the formulas of
// ggml-quants.c, the reference quantizers on inputs whose expected bytes follow from integer
// arithmetic, and the K-quants' defining property (each weight is stored as the nearest of its
// sub-block's 16 or 64 levels) with the error bound that follows from it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "moe/quant/blocks.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/quant_type.h"
#include "moe/quant/quantize.h"

namespace ferry::moe::quant {
namespace {

template <typename Block>
std::vector<float> dequantize_block(QuantType type, const Block& b) {
  std::vector<float> y(quant_traits(type).block_elems);
  dequantize_row(type, &b, y.data(), y.size());
  return y;
}

std::vector<std::uint8_t> quantize_bytes(QuantType type, const std::vector<float>& x) {
  std::vector<std::uint8_t> out(quant_row_bytes(type, x.size()));
  quantize_row(type, x.data(), out.data(), x.size());
  return out;
}

std::vector<float> gaussian(std::size_t n, unsigned seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  return x;
}

TEST(QuantType, SizesNamesAndRows) {
  EXPECT_EQ(quant_row_bytes(QuantType::kQ8_0, 64), 68u);
  EXPECT_EQ(quant_row_bytes(QuantType::kQ4_0, 4096), 128u * 18);
  EXPECT_EQ(quant_row_bytes(QuantType::kQ4_K, 5632), 22u * 144);
  EXPECT_EQ(quant_row_bytes(QuantType::kQ6_K, 256), 210u);
  EXPECT_EQ(quant_row_bytes(QuantType::kBF16, 3), 6u);
  // A Mixtral-8x7B expert: 3 matrices of 4096 x 14336; at Q4_0 4.5 bits per weight.
  EXPECT_EQ(3 * quant_matrix_bytes(QuantType::kQ4_0, 14336, 4096), 99'090'432u);
  EXPECT_EQ(parse_quant_type("q4_k"), QuantType::kQ4_K);
  EXPECT_EQ(parse_quant_type("fp16"), QuantType::kF16);
  EXPECT_FALSE(parse_quant_type("q2_k"));
  EXPECT_EQ(parse_quant_type("q5_1"), QuantType::kQ5_1);  // stored, not computed
  EXPECT_EQ(quant_type_from_ggml(14), QuantType::kQ6_K);
  EXPECT_FALSE(quant_type_from_ggml(3));  // Q4_1: not implemented
  try {
    quant_row_bytes(QuantType::kQ4_K, 4000);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("4000 weights cannot be stored in Q4_K"), std::string::npos) << e.what();
  }
}

TEST(Dequantize, Q8_0IsScaleTimesInteger) {
  BlockQ8_0 b;
  b.d = float_to_half(0.5f);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<std::int8_t>(j * 8 - 128);
  const auto y = dequantize_block(QuantType::kQ8_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j * 8 - 128) * 0.5f) << j;
}

TEST(Dequantize, Q4_0LowNibblesFirstThenHigh) {
  BlockQ4_0 b;
  b.d = float_to_half(-2.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
  const auto y = dequantize_block(QuantType::kQ4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * -2.0f) << j;
    EXPECT_EQ(y[j + 16], (15 - j - 8) * -2.0f) << j;
  }
}

// Sub-block j's scale 10 + 6j and min 3 + 7j (6 bits each: 10..52 and 3..52) packed by hand as
// ggml-common.h lays out Q4_K's and Q5_K's 12 scale bytes: bytes 0-3 hold scales 0-3 (low 6 bits)
// and the top 2 bits of scales 4-7; bytes 4-7 mins 0-3 and the top bits of mins 4-7; bytes 8-11
// the low 4 bits of scale (low nibble) and min (high nibble) 4-7.
void pack_k_scales(std::uint8_t* scales, int* sc, int* mn) {
  for (int j = 0; j < 8; ++j) {
    sc[j] = 10 + 6 * j;
    mn[j] = 3 + 7 * j;
  }
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<std::uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
  }
}

// A Q4_K or Q5_K block with d 0.25, dmin 0.125 and pack_k_scales' scales and mins (returned in sc, mn).
template <typename Block>
Block k_block(int* sc, int* mn) {
  Block b{};
  b.d = float_to_half(0.25f);
  b.dmin = float_to_half(0.125f);
  pack_k_scales(b.scales, sc, mn);
  return b;
}

TEST(Dequantize, Q4_KSixBitScalesAndMins) {
  int sc[8], mn[8];
  BlockQ4_K b = k_block<BlockQ4_K>(sc, mn);
  for (int l = 0; l < 128; ++l) b.qs[l] = static_cast<std::uint8_t>((l % 16) | (((l * 7) % 16) << 4));
  const auto y = dequantize_block(QuantType::kQ4_K, b);
  for (int i = 0; i < 256; ++i) {
    const int chunk = i / 64, within = i % 64, sub = i / 32;
    const std::uint8_t byte = b.qs[chunk * 32 + within % 32];
    const int q = within < 32 ? (byte & 0xF) : (byte >> 4);
    EXPECT_EQ(y[i], 0.25f * sc[sub] * q - 0.125f * mn[sub]) << i;
  }
}

TEST(Dequantize, Q6_KSixBitsFromLowNibbleAndHighPair) {
  BlockQ6_K b{};
  b.d = float_to_half(0.5f);
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<std::int8_t>(k * 9 - 70);
  // Weight i (0..255) gets the 6-bit value v(i) = (i * 37) % 64, packed as ggml-common.h says:
  // per 128 weights, weight l + 32s (s = 0..3) keeps its low 4 bits in ql[l + 32(s&1)] (low
  // nibble for s < 2, high for s >= 2) and its high 2 bits in qh[l] at bit 2s.
  auto v = [](int i) { return (i * 37) % 64; };
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      for (int s = 0; s < 4; ++s) {
        const int i = half * 128 + l + 32 * s;
        b.ql[half * 64 + l + 32 * (s & 1)] |= static_cast<std::uint8_t>((v(i) & 0xF) << (s >= 2 ? 4 : 0));
        b.qh[half * 32 + l] |= static_cast<std::uint8_t>((v(i) >> 4) << (2 * s));
      }
    }
  }
  const auto y = dequantize_block(QuantType::kQ6_K, b);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.5f * b.scales[i / 16] * (v(i) - 32)) << i;
}

TEST(Dequantize, HalfAndBfloatAreTheirBitPatterns) {
  const std::uint16_t h[2] = {0x3c00, 0xc000};  // f16 1, -2
  const std::uint16_t bf[2] = {0x3f80, 0x4049};  // bf16 1, 3.140625
  float y[2];
  dequantize_row(QuantType::kF16, h, y, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  dequantize_row(QuantType::kBF16, bf, y, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 3.140625f);
}

// Q8_0 of x_j = (j − 16)/2: amax = 8, d = 8/127, x·(1/d) = (j − 16)·127/16 exactly, and roundf
// rounds halves away from zero (j = 8 and 24 are ties): q = sign(n)·⌊(|n| + 8)/16⌋, n = (j−16)·127.
TEST(Quantize, Q8_0MatchesTheReferenceQuantizer) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = (j - 16) * 0.5f;
  const auto bytes = quantize_bytes(QuantType::kQ8_0, x);
  BlockQ8_0 b;
  std::memcpy(&b, bytes.data(), sizeof b);
  EXPECT_EQ(b.d, float_to_half(8.0f / 127));
  for (int j = 0; j < 32; ++j) {
    const int n = (j - 16) * 127;
    const int expected = n < 0 ? -((-n + 8) / 16) : (n + 8) / 16;
    EXPECT_EQ(b.qs[j], expected) << j;
  }
}

// Q4_0 of x_j = (j − 16)/2: the largest magnitude is x_0 = −8, so d = −8/−8 = 1 and
// q = min(15, ⌊x + 8.5⌋) = min(15, ⌊(j + 1)/2⌋).
TEST(Quantize, Q4_0MatchesTheReferenceQuantizer) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = (j - 16) * 0.5f;
  const auto bytes = quantize_bytes(QuantType::kQ4_0, x);
  BlockQ4_0 b;
  std::memcpy(&b, bytes.data(), sizeof b);
  EXPECT_EQ(b.d, float_to_half(1.0f));
  auto q = [](int j) { return std::min(15, (j + 1) / 2); };
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], q(j) | (q(j + 16) << 4)) << j;
}

// Q8_0 and Q4_0 on Gaussian rows: |x − x̂| ≤ d/2 (Q8_0, |q| ≤ 127) and ≤ |d| (Q4_0: the level
// +8 does not exist, so −x_m maps to 7·d), plus the f16 rounding of d: |q|·|d|·2^-11.
TEST(Quantize, Q8_0AndQ4_0ErrorWithinHalfAStep) {
  const auto x = gaussian(32 * 64, 7);
  for (auto type : {QuantType::kQ8_0, QuantType::kQ4_0}) {
    const auto bytes = quantize_bytes(type, x);
    std::vector<float> y(x.size());
    dequantize_row(type, bytes.data(), y.data(), x.size());
    for (std::size_t blk = 0; blk < x.size() / 32; ++blk) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
      const float d = type == QuantType::kQ8_0 ? amax / 127 : amax / 8;
      const float qmax = type == QuantType::kQ8_0 ? 127 : 8;
      const float bound = (type == QuantType::kQ8_0 ? d / 2 : d) + qmax * d * std::ldexp(1.0f, -11);
      for (int j = 0; j < 32; ++j)
        EXPECT_LE(std::fabs(x[blk * 32 + j] - y[blk * 32 + j]), bound * (1 + 1e-6f)) << quant_name(type) << " " << blk;
    }
  }
}

// The K-quants store, for each weight, a level of its sub-block (Q4_K: d·sc·q − dmin·m, q in
// 0..15 per 32 weights; Q6_K: d·sc·(q − 32), q in 0..63 per 16). Whatever scales the fit chose,
// the stored level is the nearest one to x (up to one rounding of the division), so the error is
// at most half a step inside the sub-block's range and the distance to the range's end outside.
TEST(Quantize, KQuantsStoreTheNearestLevelOfEachSubBlock) {
  for (auto type : {QuantType::kQ4_K, QuantType::kQ6_K}) {
    for (unsigned seed : {1u, 2u, 3u}) {
      auto x = gaussian(256 * 8, seed, seed == 3 ? 1e-3f : 1.0f);
      if (seed == 2)
        for (int i = 0; i < 256; ++i) x[i] = std::fabs(x[i]) + 0.5f;  // an all-positive block: min clamps to 0
      const auto bytes = quantize_bytes(type, x);
      std::vector<float> y(x.size());
      dequantize_row(type, bytes.data(), y.data(), x.size());
      const int group = type == QuantType::kQ4_K ? 32 : 16;
      const int levels = type == QuantType::kQ4_K ? 16 : 64;
      double err2 = 0, x2 = 0;
      for (std::size_t g = 0; g < x.size() / group; ++g) {
        // The sub-block's levels, recovered by dequantizing every q with its scales: build a
        // block whose weights in this group take each level in turn.
        std::vector<float> level(levels);
        const std::size_t blk = g * group / 256;
        const unsigned char* block = bytes.data() + blk * quant_traits(type).block_bytes;
        const int pos = static_cast<int>(g * group % 256);
        for (int q = 0; q < levels; ++q) {
          std::vector<unsigned char> copy(block, block + quant_traits(type).block_bytes);
          if (type == QuantType::kQ4_K) {
            BlockQ4_K b;
            std::memcpy(&b, copy.data(), sizeof b);
            const int byte = pos / 64 * 32 + pos % 32;
            b.qs[byte] = static_cast<std::uint8_t>(pos % 64 < 32 ? (b.qs[byte] & 0xF0) | q : (b.qs[byte] & 0x0F) | (q << 4));
            std::memcpy(copy.data(), &b, sizeof b);
          } else {
            BlockQ6_K b;
            std::memcpy(&b, copy.data(), sizeof b);
            const int half = pos / 128, l = pos % 32, s = pos % 128 / 32;
            auto& lo = b.ql[half * 64 + l + 32 * (s & 1)];
            const int shift = s >= 2 ? 4 : 0;
            lo = static_cast<std::uint8_t>((lo & ~(0xF << shift)) | ((q & 0xF) << shift));
            auto& hi = b.qh[half * 32 + l];
            hi = static_cast<std::uint8_t>((hi & ~(3 << (2 * s))) | ((q >> 4) << (2 * s)));
            std::memcpy(copy.data(), &b, sizeof b);
          }
          std::vector<float> all(256);
          dequantize_row(type, copy.data(), all.data(), 256);
          level[q] = all[pos];
        }
        const float lo = *std::min_element(level.begin(), level.end());
        const float hi = *std::max_element(level.begin(), level.end());
        const float step = (hi - lo) / (levels - 1);
        for (int i = 0; i < group; ++i) {
          const float xi = x[g * group + i], yi = y[g * group + i];
          float nearest = level[0];
          for (float l : level)
            if (std::fabs(l - xi) < std::fabs(nearest - xi)) nearest = l;
          // One rounding of (x + m)/s can pick the other neighbour only at a near-tie.
          EXPECT_LE(std::fabs(xi - yi), std::fabs(xi - nearest) + step * 1e-5f + 1e-30f)
              << quant_name(type) << " seed " << seed << " group " << g << " i " << i;
          const float outside = std::max({0.0f, lo - xi, xi - hi});
          EXPECT_LE(std::fabs(xi - yi), step / 2 * (1 + 1e-5f) + outside + 1e-30f) << quant_name(type);
          err2 += double(xi - yi) * (xi - yi);
          x2 += double(xi) * xi;
        }
      }
      // A 4-bit (6-bit) uniform grid over a sub-block's ~4σ range has RMS error ~4σ/15/√12 ≈ 0.077σ
      // (0.018σ); the fitted scales do better. Bounds with headroom: 0.1 and 0.03 relative RMS.
      const double rel = std::sqrt(err2 / x2);
      EXPECT_LT(rel, type == QuantType::kQ4_K ? 0.1 : 0.03) << quant_name(type) << " seed " << seed;
    }
  }
}

TEST(Quantize, ZeroRowsStayZero) {
  std::vector<float> x(256, 0.0f);
  for (auto type : {QuantType::kQ8_0, QuantType::kQ4_0, QuantType::kQ4_K, QuantType::kQ6_K}) {
    const auto bytes = quantize_bytes(type, x);
    std::vector<float> y(256, 1.0f);
    dequantize_row(type, bytes.data(), y.data(), 256);
    for (float v : y) EXPECT_EQ(v, 0.0f) << quant_name(type);
  }
}

TEST(Quantize, HalfAndBfloatRoundToNearestEven) {
  const std::vector<float> x = {1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11)};
  auto h = quantize_bytes(QuantType::kF16, x);
  std::uint16_t v[2];
  std::memcpy(v, h.data(), 4);
  EXPECT_EQ(v[0], 0x3c00);  // tie → even (1.0)
  EXPECT_EQ(v[1], 0x3c02);  // tie → even (1 + 2^-9)
  const std::vector<float> y = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8)};
  auto b = quantize_bytes(QuantType::kBF16, y);
  std::memcpy(v, b.data(), 4);
  EXPECT_EQ(v[0], 0x3f80);
  EXPECT_EQ(v[1], 0x3f82);
}

// Q5_0, Q5_1 and Q5_K: stored and written (llama.cpp's Q4_K_M picks or falls back to them); Q5_K also computed on.
TEST(Dequantize, Q5_0FifthBitFromQh) {
  BlockQ5_0 b;
  b.d = float_to_half(0.5f);
  std::uint32_t qh = 0;
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = (j * 13 + 5) % 32;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
  for (int j = 0; j < 32; ++j) qh |= static_cast<std::uint32_t>(q[j] >> 4) << j;
  std::memcpy(b.qh, &qh, 4);
  const auto y = dequantize_block(QuantType::kQ5_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (q[j] - 16) * 0.5f) << j;
}

// Q5_0 of x_j = j − 16: the largest magnitude is x_0 = −16, so d = −16/−16 = 1 and
// q = min(31, ⌊x + 16.5⌋) = j: low nibbles j | (j << 4), fifth bits 0 for j < 16, 1 above.
TEST(Quantize, Q5_0MatchesTheReferenceQuantizer) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  const auto bytes = quantize_bytes(QuantType::kQ5_0, x);
  ASSERT_EQ(bytes.size(), 22u);
  BlockQ5_0 b;
  std::memcpy(&b, bytes.data(), sizeof b);
  EXPECT_EQ(b.d, float_to_half(1.0f));
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j | (j << 4)) << j;
  std::uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ(qh, 0xFFFF0000u);
  std::vector<float> y(32);
  dequantize_row(QuantType::kQ5_0, bytes.data(), y.data(), 32);
  EXPECT_EQ(y, x);
}

TEST(Dequantize, Q5_KFifthBitsPerPairOfSubBlocks) {
  int sc[8], mn[8];
  BlockQ5_K b = k_block<BlockQ5_K>(sc, mn);
  int q[256];
  for (int i = 0; i < 256; ++i) q[i] = (i * 11 + 3) % 32;
  // Weights 64c + l (l < 32): low nibble of qs[32c + l], fifth bit in bit 2c of qh[l]; weights
  // 64c + 32 + l: high nibble, bit 2c + 1.
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
      b.qs[32 * c + l] = static_cast<std::uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      b.qh[l] = static_cast<std::uint8_t>(b.qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  const auto y = dequantize_block(QuantType::kQ5_K, b);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.25f * sc[i / 32] * q[i] - 0.125f * mn[i / 32]) << i;
}

// Q5_K has twice Q4_K's levels on the same scales: on Gaussian rows its error is well below
// Q4_K's (≈ half), and small against the data.
TEST(Quantize, Q5_KHalvesQ4_KError) {
  const auto x = gaussian(256 * 16, 7);
  double e4 = 0, e5 = 0, x2 = 0;
  for (auto type : {QuantType::kQ4_K, QuantType::kQ5_K}) {
    const auto bytes = quantize_bytes(type, x);
    ASSERT_EQ(bytes.size(), 16 * quant_traits(type).block_bytes);
    std::vector<float> y(x.size());
    dequantize_row(type, bytes.data(), y.data(), x.size());
    double& e = type == QuantType::kQ4_K ? e4 : e5;
    for (std::size_t i = 0; i < x.size(); ++i) e += (x[i] - y[i]) * (x[i] - y[i]);
  }
  for (float v : x) x2 += v * v;
  EXPECT_LT(e5, 0.35 * e4);
  EXPECT_LT(std::sqrt(e5 / x2), 0.05);
}

// Q5_1 of x_j = j/2 − 3: min −3, max 12.5, d = 15.5/31 = 0.5, q = ⌊(x + 3)/0.5 + 0.5⌋ = j.
TEST(Quantize, Q5_1MatchesTheReferenceQuantizer) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = j * 0.5f - 3;
  const auto bytes = quantize_bytes(QuantType::kQ5_1, x);
  ASSERT_EQ(bytes.size(), 24u);
  BlockQ5_1 b;
  std::memcpy(&b, bytes.data(), sizeof b);
  EXPECT_EQ(b.d, float_to_half(0.5f));
  EXPECT_EQ(b.m, float_to_half(-3.0f));
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j | (j << 4)) << j;
  std::uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ(qh, 0xFFFF0000u);
  std::vector<float> y(32);
  dequantize_row(QuantType::kQ5_1, bytes.data(), y.data(), 32);
  EXPECT_EQ(y, x);  // d·q + m is exact here
}

// Q5_0 and Q5_1 are stored only; Q5_K is computed on (the dense attention of Q4_K_M files) but is
// no --weights format.
TEST(QuantType, Q5FormatsAreStoredAndOnlyQ5KComputed) {
  EXPECT_EQ(quant_row_bytes(QuantType::kQ5_0, 64), 44u);
  EXPECT_EQ(quant_row_bytes(QuantType::kQ5_K, 512), 352u);
  EXPECT_EQ(quant_type_from_ggml(6), QuantType::kQ5_0);
  EXPECT_EQ(quant_type_from_ggml(13), QuantType::kQ5_K);
  EXPECT_EQ(quant_type_from_ggml(7), QuantType::kQ5_1);
  EXPECT_EQ(quant_row_bytes(QuantType::kQ5_1, 64), 48u);
  EXPECT_TRUE(quant_type_computed(QuantType::kQ5_K));
  EXPECT_FALSE(quant_type_computed(QuantType::kQ5_0));
  EXPECT_FALSE(quant_type_computed(QuantType::kQ5_1));
  EXPECT_THROW(parse_weight_format("Q5_K"), InvalidArgument);
  EXPECT_EQ(parse_weight_format("q4_k"), QuantType::kQ4_K);
}

}  // namespace
}  // namespace ferry::moe::quant
