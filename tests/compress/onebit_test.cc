#include <gtest/gtest.h>

#include <cmath>

#include "compress/onebit_codec.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

// EF-signSGD reference (Karimireddy et al. 2019, Alg. 1), in double for the norm like ours.
struct OnebitReference {
  std::vector<float> e;
  std::vector<float> step(const std::vector<float>& g) {
    const std::size_t n = g.size();
    e.resize(n, 0.0f);
    double l1 = 0;
    std::vector<float> p(n);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = g[i] + e[i];
      l1 += std::fabs(p[i]);
    }
    const float scale = static_cast<float>(l1 / n);
    std::vector<float> delta(n);
    for (std::size_t i = 0; i < n; ++i) {
      delta[i] = p[i] < 0 ? -scale : scale;
      e[i] = p[i] - delta[i];
    }
    return delta;
  }
};

TEST(Onebit, MatchesReference) {
  for (std::size_t n : {1, 15, 16, 17, 31, 32, 33, 1000}) {
    OnebitCodec c(testing::info_1d(n));
    OnebitReference ref;
    std::vector<std::byte> p;
    std::vector<float> d(n);
    for (int s = 0; s < 10; ++s) {
      const auto g = testing::normal_vector(n, 10 + s);
      c.encode(g, p);
      ASSERT_EQ(p.size(), 16 + 4 * ((n + 31) / 32));
      const auto expect = ref.step(g);
      c.decode(p, d);
      for (std::size_t i = 0; i < n; ++i) {
        // The L1 sum order differs (4 lanes): allow a relative ulp-level difference.
        ASSERT_NEAR(d[i], expect[i], 1e-5f * std::fabs(expect[i])) << n << " " << i;
        ASSERT_NEAR(c.residual()[i], ref.e[i], 1e-5f) << n << " " << i;
        ASSERT_EQ(std::signbit(d[i]), std::signbit(expect[i]));
      }
    }
  }
}

TEST(Onebit, BitLayoutIsSignPerBit) {
  OnebitCodec c(testing::info_1d(35));
  std::vector<float> g(35, 1.0f);
  g[0] = -1.0f;
  g[31] = -2.0f;
  g[33] = -3.0f;
  std::vector<std::byte> p;
  c.encode(g, p);
  EXPECT_EQ(load_le<std::uint32_t>(p.data() + 16), 0x80000001u);
  EXPECT_EQ(load_le<std::uint32_t>(p.data() + 20), 0x2u);
  EXPECT_FLOAT_EQ(bits_float(read_header(p, CodecId::kOnebit, 35).aux), (32.0f + 1 + 2 + 3) / 35);
}

}  // namespace
}  // namespace ferry::compress
