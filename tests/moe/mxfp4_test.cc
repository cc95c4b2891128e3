// MXFP4 (moe/quant): hand-built blocks decoded by the formula w = 2^(e−127)·E2M1(q) of the OCP MX
// spec, at the edge exponents (the subnormal scales e = 0 and 1, the overflowing e = 253-255) and in
// both nibble halves; the reference quantizer on inputs whose bytes follow from the formula; and
// GGUF tensors of type 39 that are not whole blocks or are cut short, refused naming the tensor
// and MXFP4. (Bit and byte equality with llama.cpp itself: tests/moe/mxfp4_vs_llama.cc.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "moe/quant/blocks.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/gguf_file.h"
#include "moe/quant/quant_type.h"
#include "moe/quant/quantize.h"

namespace ferry::moe::quant {
namespace {

// E2M1 code q as the spec defines it: bit 3 the sign, bits 2-1 the exponent (bias 1), bit 0 the
// mantissa; exponent 0 is subnormal (0 or 0.5).
double e2m1(int q) {
  const int exponent = (q >> 1) & 3, mantissa = q & 1;
  const double magnitude = exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
  return q & 8 ? -magnitude : magnitude;
}

// 2^(e−127)·E2M1(q) rounded to float32: ±Inf past the largest float, as a float product overflows.
float expected_weight(int e, int q) {
  const double w = std::ldexp(e2m1(q), e - 127);
  if (std::fabs(w) >= std::ldexp(1.0, 128)) return w > 0 ? std::numeric_limits<float>::infinity()
                                                        : -std::numeric_limits<float>::infinity();
  return static_cast<float>(w);  // exact: a 2-bit significand scaled into float32's range
}

std::vector<float> dequantize_block(const BlockMXFP4& b) {
  std::vector<float> y(kQK_MXFP4);
  dequantize_row(QuantType::kMXFP4, &b, y.data(), y.size());
  return y;
}

TEST(Mxfp4, TypeSizesAndNames) {
  EXPECT_EQ(quant_row_bytes(QuantType::kMXFP4, 64), 34u);
  EXPECT_EQ(quant_row_bytes(QuantType::kMXFP4, 2880), 90u * 17);  // gpt-oss's hidden width
  EXPECT_EQ(quant_type_from_ggml(39), QuantType::kMXFP4);
  EXPECT_EQ(parse_quant_type("mxfp4"), QuantType::kMXFP4);
  EXPECT_EQ(parse_weight_format("MXFP4"), QuantType::kMXFP4);
  EXPECT_TRUE(quant_type_computed(QuantType::kMXFP4));
  EXPECT_STREQ(quant_name(QuantType::kMXFP4), "MXFP4");
  try {
    quant_row_bytes(QuantType::kMXFP4, 48);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("48 weights cannot be stored in MXFP4"), std::string::npos) << e.what();
  }
}

// Every code in both halves, at every exponent: weight j (< 16) is the low nibble of byte j, weight
// j + 16 its high nibble. e = 0 and 1 give subnormal scales (2^-128, 2^-127 halved); from e = 253 on
// the largest codes overflow to ±Inf; e = 255 decodes as the scale 2^128 (ggml's arithmetic;
// refused where blocks come in, not here).
TEST(Mxfp4, DequantizeEveryCodeAtEveryExponent) {
  for (int e = 0; e < 256; ++e) {
    BlockMXFP4 b;
    b.e = static_cast<std::uint8_t>(e);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
    const auto y = dequantize_block(b);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[j], expected_weight(e, j)) << "e " << e << " low nibble " << j;
      EXPECT_EQ(y[j + 16], expected_weight(e, 15 - j)) << "e " << e << " high nibble " << 15 - j;
    }
    EXPECT_FALSE(std::signbit(y[8])) << "code 8 (−0) decodes as +0, as ggml's integer table holds it";
  }
  BlockMXFP4 edge{};
  edge.qs[0] = 0x71;  // low: code 1 (0.5), high: code 7 (6)
  edge.e = 0;
  auto y = dequantize_block(edge);
  EXPECT_EQ(y[0], std::ldexp(1.0f, -128));  // 0.5·2^-127: a subnormal
  EXPECT_EQ(y[16], 6 * std::ldexp(1.0f, -127));
  edge.e = 254;
  y = dequantize_block(edge);
  EXPECT_EQ(y[0], std::ldexp(1.0f, 126));
  EXPECT_TRUE(std::isinf(y[16]));  // 6·2^127
  edge.e = 255;
  y = dequantize_block(edge);
  EXPECT_EQ(y[0], std::ldexp(1.0f, 127));
  EXPECT_EQ(y[1], 0.0f);
}

// A block of E2M1 values times 4: max|x| = 24, e = ⌊log2 24⌋ − 2 + 127 = 129 (scale 4), and every
// weight its own code (code 8, −0, stored as +0's code 0: the first of equal candidates).
TEST(Mxfp4, QuantizeExactValuesToTheirCodes) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(4 * e2m1(j % 16));
  std::vector<std::uint8_t> bytes(quant_row_bytes(QuantType::kMXFP4, 32));
  quantize_row(QuantType::kMXFP4, x.data(), bytes.data(), 32);
  BlockMXFP4 b;
  std::memcpy(&b, bytes.data(), sizeof b);
  EXPECT_EQ(b.e, 129);
  auto code = [](int j) { return j % 16 == 8 ? 0 : j % 16; };
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], code(j) | (code(j + 16) << 4)) << j;
  std::vector<float> y(32);
  dequantize_row(QuantType::kMXFP4, bytes.data(), y.data(), 32);
  EXPECT_EQ(y, x);
}

// Between codes, a weight takes the nearer; at a tie the lower code (2.5 → 2, −2.5 → −2 is code
// 12 against −3's 13); above 6 of the scale the largest (7.5 → 6); and a zero block is e = 0 and
// all codes 0.
TEST(Mxfp4, QuantizeRoundsToTheNearestCode) {
  std::vector<float> x(32, 0.0f);
  x[0] = 7.5f;    // max|x|: e = ⌊log2 7.5⌋ − 2 + 127 = 127, scale 1
  x[1] = 2.5f;    // tie of 2 (code 4) and 3 (code 5)
  x[2] = -2.5f;   // tie of −2 (code 12) and −3 (code 13)
  x[3] = 0.2f;    // nearer 0 than 0.5
  x[4] = 0.3f;    // nearer 0.5 (code 1)
  x[5] = -1.3f;   // nearer −1.5 (code 11)
  x[16] = 4.9f;   // nearer 4 (code 6) than 6
  x[17] = -5.1f;  // nearer −6 (code 15)
  std::vector<std::uint8_t> bytes(17);
  quantize_row(QuantType::kMXFP4, x.data(), bytes.data(), 32);
  EXPECT_EQ(bytes[0], 127);
  EXPECT_EQ(bytes[1], 7 | (6 << 4));
  EXPECT_EQ(bytes[2], 4 | (15 << 4));
  EXPECT_EQ(bytes[3], 12);
  EXPECT_EQ(bytes[4], 0);
  EXPECT_EQ(bytes[5], 1);
  EXPECT_EQ(bytes[6], 11);
  std::vector<float> zero(32, 0.0f);
  quantize_row(QuantType::kMXFP4, zero.data(), bytes.data(), 32);
  for (auto v : bytes) EXPECT_EQ(v, 0);
}

// On Gaussian rows each weight is stored as the nearest of its block's 15 distinct levels, so the
// error is at most half the gap around it, and the largest weight (in [4, 8) of the scale) is
// at most 2 scales off.
TEST(Mxfp4, QuantizeStoresTheNearestLevel) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> x(32 * 64);
  for (auto& v : x) v = dist(rng);
  std::vector<std::uint8_t> bytes(quant_row_bytes(QuantType::kMXFP4, x.size()));
  quantize_row(QuantType::kMXFP4, x.data(), bytes.data(), x.size());
  std::vector<float> y(x.size());
  dequantize_row(QuantType::kMXFP4, bytes.data(), y.data(), x.size());
  for (std::size_t blk = 0; blk < x.size() / 32; ++blk) {
    const int e = bytes[blk * 17];
    for (int j = 0; j < 32; ++j) {
      const float xi = x[blk * 32 + j];
      double nearest = 1e30;
      for (int q = 0; q < 16; ++q) nearest = std::min(nearest, std::fabs(expected_weight(e, q) - double(xi)));
      EXPECT_EQ(std::fabs(double(y[blk * 32 + j]) - xi), nearest) << "block " << blk << " weight " << j;
    }
  }
}

// GGUF tensors of type 39 (GGML_TYPE_MXFP4): rows that are not whole blocks and data cut short are
// one FormatError naming the tensor and MXFP4's sizes.
TEST(Mxfp4, MalformedGgufTensorsAreRefusedByName) {
  auto file = [](std::uint64_t row, std::uint64_t rows, std::size_t data_bytes) {
    std::vector<std::byte> b;
    auto put = [&b](auto v) {
      const auto* p = reinterpret_cast<const std::byte*>(&v);
      b.insert(b.end(), p, p + sizeof v);
    };
    for (char c : std::string("GGUF")) b.push_back(static_cast<std::byte>(c));
    put(std::uint32_t{3});
    put(std::uint64_t{1});  // tensors
    put(std::uint64_t{0});  // metadata keys
    const std::string name = "blk.0.ffn_up_exps.weight";
    put(std::uint64_t{name.size()});
    for (char c : name) b.push_back(static_cast<std::byte>(c));
    put(std::uint32_t{2});
    put(row);
    put(rows);
    put(std::uint32_t{39});
    put(std::uint64_t{0});
    b.resize((b.size() + 31) / 32 * 32 + data_bytes, std::byte{0});
    return b;
  };
  auto refused = [](const std::vector<std::byte>& b, const std::string& needle) {
    try {
      GgufFile::parse(b, "bad.gguf");
      ADD_FAILURE() << "parsed; expected: " << needle;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const auto ok = file(64, 3, 3 * 34);
  const GgufFile f = GgufFile::parse(ok, "ok.gguf");
  EXPECT_EQ(f.tensors().at(0).type, QuantType::kMXFP4);
  EXPECT_EQ(f.tensors().at(0).bytes, 102u);
  refused(file(48, 3, 256), "bad.gguf: tensor 'blk.0.ffn_up_exps.weight' has rows of 48 weights, not whole MXFP4 blocks of 32");
  refused(file(64, 3, 3 * 34 - 1),
          "bad.gguf: tensor 'blk.0.ffn_up_exps.weight' (102 bytes at data offset 0) runs past the end of the file (101 "
          "bytes of data) for its 3 rows of 64 MXFP4 weights");
}

}  // namespace
}  // namespace ferry::moe::quant
