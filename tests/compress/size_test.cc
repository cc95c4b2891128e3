// encoded_size_bytes() equals the documented formula and the real payload size, for every
// codec and the edge sizes; decode and decode_add agree on every codec.
#include <gtest/gtest.h>

#include <bit>

#include "test_util.h"

namespace ferry::compress {
namespace {

std::size_t expected_size(const std::string& name, std::size_t n) {
  auto ceil = [](std::size_t a, std::size_t b) { return (a + b - 1) / b; };
  auto k = [&](double ratio) { return std::max<std::size_t>(1, std::llround(ratio * n)); };
  if (name == "none") return 16 + 4 * n;
  if (name == "fp16") return 16 + 2 * n;
  if (name == "twobit" || name == "terngrad") return 16 + 4 * ceil(n, 16);
  if (name == "onebit") return 16 + 4 * ceil(n, 32);
  if (name == "qsgd") return 16 + 4 + 4 * ceil(n, 128) + 4 * ceil(n * 5, 32);  // levels=15: 5 bits, bucket 128
  if (name == "topk" || name == "randomk") return 16 + 8 * k(0.01);
  if (name == "dgc") return 16 + 8 * k(0.001);
  ADD_FAILURE() << name;
  return 0;
}

TEST(Sizes, PayloadsMatchFormulasAtEdgeSizes) {
  for (const std::string name :
       {"none", "fp16", "twobit", "terngrad", "onebit", "qsgd", "topk", "randomk", "dgc"}) {
    for (std::size_t n : testing::edge_sizes()) {
      auto c = testing::codec(name, n);
      const auto g = testing::normal_vector(n, 77);
      std::vector<std::byte> p;
      c->encode(g, p);
      EXPECT_EQ(p.size(), expected_size(name, n)) << name << " n=" << n;
      EXPECT_EQ(c->encoded_size_bytes(), p.size()) << name << " n=" << n;
      std::vector<float> d(n), acc(n, 0.25f);
      c->decode(p, d);
      c->decode_add(p, acc);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(acc[i], 0.25f + d[i]) << name << " " << i;
    }
  }
}

TEST(Sizes, PowersgdFormula) {
  // 1000 x 1000 rank 4: 16 + 8 + 4*4*(1000+1000) bytes instead of 4e6.
  auto c = make_codec("powersgd:rank=4", TensorInfo{.numel = 1000000, .shape = {1000, 1000}});
  std::vector<std::byte> p;
  c->encode(testing::normal_vector(1000000, 1), p);
  EXPECT_EQ(p.size(), 16u + 8 + 4 * 4 * 2000);
  EXPECT_EQ(c->encoded_size_bytes(), p.size());
  for (std::size_t n : testing::edge_sizes()) {  // 1-D: raw
    auto r = make_codec("powersgd", TensorInfo{.numel = n});
    r->encode(testing::normal_vector(n, 1), p);
    EXPECT_EQ(p.size(), 16 + 4 * n);
  }
}

}  // namespace
}  // namespace ferry::compress
