#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "compress/fp16_codec.h"
#include "core/half.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

bool same_half(std::uint16_t a, std::uint16_t b) {
  const bool a_nan = (a & 0x7c00) == 0x7c00 && (a & 0x3ff) != 0;
  const bool b_nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0;
  return (a_nan && b_nan) || a == b;
}

#if defined(__FLT16_MAX__)
TEST(Half, HalfToFloatExhaustiveAgainstCompiler) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float ours = half_to_float(static_cast<std::uint16_t>(h));
    const float ref = static_cast<float>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(h)));
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(ours)) << h;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(ours), std::bit_cast<std::uint32_t>(ref)) << h;
    }
  }
}

TEST(Half, FloatToHalfAgainstCompilerRoundToNearestEven) {
  // Every half, every midpoint between neighbours (the tie cases), and random floats of all
  // magnitudes, including overflow and underflow ranges.
  std::vector<float> probes;
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {
    const float a = half_to_float(static_cast<std::uint16_t>(h));
    const float b = half_to_float(static_cast<std::uint16_t>(h + 1));
    probes.push_back(a);
    probes.push_back(0.5f * (a + b));
    probes.push_back(std::nextafter(0.5f * (a + b), 0.0f));
    probes.push_back(std::nextafter(0.5f * (a + b), 1e30f));
  }
  std::mt19937 gen(5);
  for (int i = 0; i < 200000; ++i) probes.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(gen())));
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e10f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), 0.0f, 1e-30f, 2.98e-8f, 2.99e-8f})
    probes.push_back(f);
  for (float f : std::vector<float>(probes)) probes.push_back(-f);
  for (float f : probes) {
    const std::uint16_t ours = float_to_half(f);
    const std::uint16_t ref = std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
    ASSERT_TRUE(same_half(ours, ref)) << f << " ours " << ours << " ref " << ref;
  }
}
#endif

TEST(Half, KnownValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  EXPECT_EQ(float_to_half(1.0f + 0x1.0p-11f), 0x3c00);               // tie -> even
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1.0p-11f), 0x3c02);           // tie -> even (up)
  EXPECT_EQ(float_to_half(0x1.0p-24f), 0x0001);                      // smallest subnormal
  EXPECT_EQ(half_to_float(0x0001), 0x1.0p-24f);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

TEST(Fp16Codec, RoundTripAndSizes) {
  for (std::size_t n : testing::edge_sizes()) {
    Fp16Codec c(testing::info_1d(n));
    const auto x = testing::normal_vector(n, 3);
    std::vector<std::byte> p;
    c.encode(x, p);
    ASSERT_EQ(p.size(), 16 + 2 * n);
    EXPECT_EQ(c.encoded_size_bytes(), p.size());
    std::vector<float> d(n), acc(n, 2.0f);
    c.decode(p, d);
    c.decode_add(p, acc);
    for (std::size_t i = 0; i < n; ++i) {
      const float ref = half_to_float(float_to_half(x[i]));
      ASSERT_EQ(d[i], ref);
      ASSERT_EQ(acc[i], 2.0f + ref);
      ASSERT_EQ(load_le<std::uint16_t>(p.data() + 16 + 2 * i), float_to_half(x[i]));
    }
  }
}

}  // namespace
}  // namespace ferry::compress
