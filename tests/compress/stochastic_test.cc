// QSGD and TernGrad: the structure of each decode, and unbiasedness (mean of many decodes).
#include <gtest/gtest.h>

#include <cmath>

#include "compress/qsgd_codec.h"
#include "compress/terngrad_codec.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

// mean of `trials` decodes of one fixed input; per-element variance bound var_bound[i].
void expect_unbiased(Codec& c, const std::vector<float>& x, int trials,
                     const std::vector<double>& var_bound) {
  const std::size_t n = x.size();
  std::vector<double> sum(n, 0.0);
  std::vector<std::byte> p;
  std::vector<float> d(n);
  for (int t = 0; t < trials; ++t) {
    c.encode(x, p);
    c.decode(p, d);
    for (std::size_t i = 0; i < n; ++i) sum[i] += d[i];
  }
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double mean = sum[i] / trials;
    const double sigma = std::sqrt(var_bound[i] / trials);
    // 5 sigma per element (n = 1000 elements: a false alarm has probability ~1e-3 per run,
    // and the seed is fixed).
    EXPECT_LE(std::fabs(mean - x[i]), 5 * sigma + 1e-6) << c.name() << " element " << i;
    worst = std::max(worst, std::fabs(mean - x[i]));
  }
  EXPECT_GT(worst, 0.0) << "decodes were exact: not a stochastic codec?";
}

TEST(Qsgd, DecodesAreNormTimesLevelOverS) {
  const std::size_t n = 1000;
  QsgdCodec c({.levels = 7, .bucket_size = 128, .seed = 3}, testing::info_1d(n));
  const auto x = testing::normal_vector(n, 4);
  std::vector<std::byte> p;
  std::vector<float> d(n);
  c.encode(x, p);
  c.decode(p, d);
  for (std::size_t b = 0; b * 128 < n; ++b) {
    double sq = 0;
    for (std::size_t i = b * 128; i < std::min(n, b * 128 + 128); ++i) sq += double(x[i]) * x[i];
    const float norm = static_cast<float>(std::sqrt(sq));
    EXPECT_EQ(load_le<float>(p.data() + 20 + 4 * b), norm);
    for (std::size_t i = b * 128; i < std::min(n, b * 128 + 128); ++i) {
      const double r = std::fabs(x[i]) / norm * 7;
      const double level = std::fabs(d[i]) / (norm / 7.0);
      EXPECT_NEAR(level, std::round(level), 1e-4);
      EXPECT_TRUE(std::round(level) == std::floor(r) || std::round(level) == std::floor(r) + 1)
          << i << " r=" << r << " level=" << level;
      if (d[i] != 0) {
        EXPECT_EQ(std::signbit(d[i]), std::signbit(x[i]));
      }
    }
  }
}

TEST(Qsgd, Unbiased) {
  const std::size_t n = 1000;
  const std::uint32_t s = 4, d = 100;
  QsgdCodec c({.levels = s, .bucket_size = d, .seed = 11}, testing::info_1d(n));
  const auto x = testing::normal_vector(n, 12);
  std::vector<double> var(n);
  for (std::size_t b = 0; b < n / d; ++b) {
    double sq = 0;
    for (std::size_t i = b * d; i < b * d + d; ++i) sq += double(x[i]) * x[i];
    const double unit = std::sqrt(sq) / s;
    for (std::size_t i = b * d; i < b * d + d; ++i) var[i] = unit * unit / 4;
  }
  expect_unbiased(c, x, 3000, var);
}

TEST(Qsgd, SeededAndRankDependent) {
  const auto x = testing::normal_vector(500, 1);
  std::vector<std::byte> a, b, r1;
  QsgdCodec c1({.seed = 5}, TensorInfo{.numel = 500});
  QsgdCodec c2({.seed = 5}, TensorInfo{.numel = 500});
  QsgdCodec c3({.seed = 5}, TensorInfo{.numel = 500, .rank = 1});
  c1.encode(x, a);
  c2.encode(x, b);
  c3.encode(x, r1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, r1);
}

TEST(Qsgd, SizeFormula) {
  for (std::size_t n : testing::edge_sizes())
    for (std::uint32_t s : {1u, 15u, 16u, 255u}) {
      QsgdCodec c({.levels = s, .bucket_size = 512}, testing::info_1d(n));
      std::vector<std::byte> p;
      c.encode(testing::normal_vector(n, 2), p);
      const std::size_t bits = 1 + std::bit_width(s);
      EXPECT_EQ(p.size(), 16 + 4 + 4 * ((n + 511) / 512) + 4 * ((n * bits + 31) / 32)) << n << " " << s;
      EXPECT_EQ(c.encoded_size_bytes(), p.size());
    }
}

TEST(Terngrad, DecodesAreScaleSignOrZero) {
  const std::size_t n = 999;
  TerngradCodec c({.seed = 1}, testing::info_1d(n));
  const auto x = testing::normal_vector(n, 5);
  float scale = 0;
  for (float v : x) scale = std::max(scale, std::fabs(v));
  std::vector<std::byte> p;
  std::vector<float> d(n);
  c.encode(x, p);
  EXPECT_EQ(p.size(), 16 + 4 * ((n + 15) / 16));
  c.decode(p, d);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(d[i] == 0 || d[i] == (x[i] > 0 ? scale : -scale)) << i;
    if (std::fabs(x[i]) == scale) {
      EXPECT_EQ(d[i], x[i]);  // probability 1
    }
  }
}

TEST(Terngrad, Unbiased) {
  const std::size_t n = 1000;
  TerngradCodec c({.seed = 9}, testing::info_1d(n));
  const auto x = testing::normal_vector(n, 6);
  float scale = 0;
  for (float v : x) scale = std::max(scale, std::fabs(v));
  std::vector<double> var(n);
  for (std::size_t i = 0; i < n; ++i) var[i] = std::fabs(x[i]) * (scale - std::fabs(x[i])) + 1e-12;
  expect_unbiased(c, x, 3000, var);
}

TEST(Terngrad, ZeroTensor) {
  TerngradCodec c({}, testing::info_1d(17));
  std::vector<float> x(17, 0.0f), d(17, 5.0f);
  std::vector<std::byte> p;
  c.encode(x, p);
  c.decode(p, d);
  EXPECT_EQ(d, x);
}

}  // namespace
}  // namespace ferry::compress
