// Error feedback conserves the gradient: sum of decodes + final residual = sum of inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "compress/error_feedback_codec.h"
#include "compress/none_codec.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

struct Case {
  std::string spec;
  TensorInfo info;
};

void expect_conservation(const Case& c, int steps) {
  auto codec = make_codec(c.spec, c.info);
  const std::size_t n = c.info.numel;
  std::vector<double> sum_in(n, 0.0), sum_out(n, 0.0);
  std::vector<std::byte> p;
  std::vector<float> d(n);
  for (int s = 0; s < steps; ++s) {
    const auto g = testing::normal_vector(n, 500 + s, 0.3f);
    codec->encode(g, p);
    codec->decode(p, d);
    for (std::size_t i = 0; i < n; ++i) {
      sum_in[i] += g[i];
      sum_out[i] += d[i];
    }
  }
  const auto e = codec->residual();
  ASSERT_EQ(e.size(), n) << c.spec << " keeps no residual";
  double worst = 0, mass = 0;
  for (std::size_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(sum_out[i] + e[i] - sum_in[i]));
    mass = std::max(mass, std::fabs(sum_in[i]));
  }
  // fp32 residual updates: ~1e-7 relative per step over 100 steps.
  EXPECT_LT(worst, 1e-4 * std::max(1.0, mass)) << c.spec << " n=" << n;
}

TEST(ErrorFeedback, ConservesSumOver100Steps) {
  const std::vector<std::string> specs = {
      "twobit:threshold=0.5", "onebit",          "topk:ratio=0.05",  "randomk:ratio=0.05",
      "fp16:ef=1",            "qsgd:levels=15,bucket=64,ef=1", "terngrad:ef=1", "none:ef=1",
      "dgc:ratio=0.05,momentum=0"};
  for (const auto& spec : specs)
    for (std::size_t n : {1, 15, 16, 17, 1000}) expect_conservation({spec, TensorInfo{.numel = n}}, 100);
  // PowerSGD keeps a residual only for tensors it compresses (2-D, large enough).
  expect_conservation({"powersgd:rank=2", TensorInfo{.numel = 1000, .shape = {25, 40}}}, 100);
  expect_conservation({"powersgd:rank=1", TensorInfo{.numel = 17 * 16, .shape = {17, 16}}}, 100);
}

TEST(ErrorFeedback, ConservesOnALargeTensor) {
  expect_conservation({"twobit:threshold=0.5", TensorInfo{.numel = 1000003}}, 3);
  expect_conservation({"topk:ratio=0.01", TensorInfo{.numel = 1000003}}, 3);
}

TEST(ErrorFeedback, DecoratorSendsWhatTheInnerCodecDrops) {
  // Inner identity: the residual stays zero and payloads equal the inner codec's.
  ErrorFeedbackCodec ef(std::make_unique<NoneCodec>(testing::info_1d(20)));
  NoneCodec plain(testing::info_1d(20));
  std::vector<std::byte> a, b;
  const auto g = testing::normal_vector(20, 1);
  ef.encode(g, a);
  plain.encode(g, b);
  EXPECT_EQ(a, b);
  for (float e : ef.residual()) EXPECT_EQ(e, 0.0f);
  EXPECT_EQ(ef.name(), "none+ef");
  EXPECT_EQ(ef.encoded_size_bytes(), plain.encoded_size_bytes());
}

TEST(ErrorFeedback, TopkResidualIsTheUnsentMass) {
  // topk with ef=0 sends only the current top-k; with ef=1 small entries accumulate and
  // are eventually sent.
  auto c = testing::codec("topk:ratio=0.5", 2);
  std::vector<std::byte> p;
  std::vector<float> d(2);
  c->encode(std::vector<float>{1.0f, 0.6f}, p);
  c->decode(p, d);
  EXPECT_EQ(d, (std::vector<float>{1.0f, 0.0f}));
  c->encode(std::vector<float>{1.0f, 0.6f}, p);  // e = {1, 1.2}
  c->decode(p, d);
  EXPECT_EQ(d, (std::vector<float>{0.0f, 1.2f}));
}

}  // namespace
}  // namespace ferry::compress
