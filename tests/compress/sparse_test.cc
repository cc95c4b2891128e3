// topk, randomk and dgc against simple references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "compress/dgc_codec.h"
#include "compress/randomk_codec.h"
#include "compress/sparse_payload.h"
#include "compress/topk_codec.h"
#include "compress/topk_select.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

using testing::reference_topk;

std::vector<std::uint32_t> payload_indices(const std::vector<std::byte>& p) {
  const std::size_t k = load_le<std::uint32_t>(p.data() + 4);
  std::vector<std::uint32_t> idx(k);
  for (std::size_t j = 0; j < k; ++j) idx[j] = load_le<std::uint32_t>(p.data() + 16 + 4 * j);
  return idx;
}

TEST(TopkSelect, MatchesReferenceIncludingTies) {
  TopkSelector sel;
  std::vector<std::uint32_t> idx;
  for (std::size_t n : {1, 2, 15, 16, 17, 1000, 100003}) {
    for (std::size_t k : {std::size_t{1}, std::max<std::size_t>(1, n / 100), n / 2 + 1, n}) {
      if (k > n) continue;
      auto x = testing::normal_vector(n, static_cast<std::uint32_t>(n + k));
      // Ties and repeated magnitudes of both signs.
      for (std::size_t i = 0; i < n; i += 7) x[i] = (i % 2 ? 0.5f : -0.5f);
      sel.reset();
      sel.count(x);
      sel.select(x, k, idx);
      ASSERT_EQ(idx, reference_topk(x, k)) << "n=" << n << " k=" << k;
    }
  }
  // All equal (one bin holds everything) and all zero.
  for (float v : {0.0f, 3.0f}) {
    std::vector<float> x(5000, v);
    sel.reset();
    sel.count(x);
    sel.select(x, 37, idx);
    ASSERT_EQ(idx, reference_topk(x, 37));
  }
}

TEST(Topk, PayloadMatchesReference) {
  for (std::size_t n : testing::edge_sizes()) {
    TopkCodec c({.ratio = 0.05}, testing::info_1d(n));
    const auto x = testing::normal_vector(n, 21);
    std::vector<std::byte> p;
    c.encode(x, p);
    const std::size_t k = std::max<std::size_t>(1, std::llround(0.05 * n));
    ASSERT_EQ(c.k(), k);
    ASSERT_EQ(p.size(), 16 + 8 * k);
    EXPECT_EQ(c.encoded_size_bytes(), p.size());
    const auto ref = reference_topk(x, k);
    ASSERT_EQ(payload_indices(p), ref) << n;
    std::vector<float> d(n, 7.0f), expect(n, 0.0f);
    for (auto i : ref) expect[i] = x[i];
    c.decode(p, d);
    ASSERT_EQ(d, expect);
  }
}

TEST(Topk, ErrorFeedbackZeroesSentEntries) {
  const std::size_t n = 1000;
  auto c = testing::codec("topk:ratio=0.1", n);  // ef=1 by default
  std::vector<float> e(n, 0.0f);
  std::vector<std::byte> p;
  for (int s = 0; s < 5; ++s) {
    const auto g = testing::normal_vector(n, 30 + s);
    for (std::size_t i = 0; i < n; ++i) e[i] += g[i];
    c->encode(g, p);
    const auto ref = reference_topk(e, 100);
    ASSERT_EQ(payload_indices(p), ref);
    for (std::size_t j = 0; j < ref.size(); ++j) {
      ASSERT_EQ(load_le<float>(p.data() + 16 + 4 * ref.size() + 4 * j), e[ref[j]]);
      e[ref[j]] = 0;
    }
    ASSERT_EQ(std::vector<float>(c->residual().begin(), c->residual().end()), e);
  }
}

TEST(Randomk, DistinctAscendingUniform) {
  const std::size_t n = 200;
  RandomkCodec c({.ratio = 0.1, .seed = 4}, testing::info_1d(n));
  ASSERT_EQ(c.k(), 20u);
  const auto x = testing::normal_vector(n, 1);
  std::vector<int> hits(n, 0);
  std::vector<std::byte> p;
  std::vector<float> d(n);
  const int trials = 5000;
  for (int t = 0; t < trials; ++t) {
    c.encode(x, p);
    const auto idx = payload_indices(p);
    ASSERT_EQ(idx.size(), 20u);
    ASSERT_TRUE(std::is_sorted(idx.begin(), idx.end()));
    ASSERT_EQ(std::set<std::uint32_t>(idx.begin(), idx.end()).size(), 20u);
    c.decode(p, d);
    for (std::size_t i = 0; i < n; ++i) {
      const bool sent = std::binary_search(idx.begin(), idx.end(), i);
      ASSERT_EQ(d[i], sent ? x[i] : 0.0f);
      hits[i] += sent;
    }
  }
  // Each index is chosen with probability k/n = 0.1: 500 expected, sd ~21.
  for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(hits[i], 500, 110) << i;
}

TEST(Randomk, WholeTensorAndSizes) {
  for (std::size_t n : testing::edge_sizes()) {
    RandomkCodec c({.ratio = 0.01}, testing::info_1d(n));
    std::vector<std::byte> p;
    c.encode(testing::normal_vector(n, 2), p);
    EXPECT_EQ(p.size(), 16 + 8 * std::max<std::size_t>(1, std::llround(0.01 * n)));
    EXPECT_EQ(c.encoded_size_bytes(), p.size());
  }
  RandomkCodec all({.ratio = 1.0}, testing::info_1d(33));
  const auto x = testing::normal_vector(33, 3);
  std::vector<std::byte> p;
  std::vector<float> d(33);
  all.encode(x, p);
  all.decode(p, d);
  EXPECT_EQ(d, x);
}

// DGC reference: Lin et al. 2018 with the stage-wise warm-up, plain loops.
struct DgcReference {
  DgcOptions o;
  std::vector<float> u = {}, v = {};
  std::uint64_t step = 0;
  std::vector<float> encode(const std::vector<float>& g) {
    const std::size_t n = g.size();
    u.resize(n, 0.0f);
    v.resize(n, 0.0f);
    double sq = 0;
    for (float x : g) sq += double(x) * x;
    float scale = 1.0f;
    if (o.clip_norm > 0 && std::sqrt(sq) > o.clip_norm) scale = float(o.clip_norm / std::sqrt(sq));
    for (std::size_t i = 0; i < n; ++i) {
      u[i] = float(o.momentum) * u[i] + scale * g[i];
      v[i] += u[i];
    }
    double density = o.ratio;
    if (o.warmup_steps > 0 && step < o.warmup_steps)
      density = std::max(o.ratio, std::pow(0.25, double(step * 4 / o.warmup_steps + 1)));
    const std::size_t k = std::max<std::size_t>(1, std::llround(density * n));
    std::vector<float> sent(n, 0.0f);
    for (auto i : reference_topk(v, k)) {
      sent[i] = v[i];
      v[i] = 0;
      u[i] = 0;
    }
    ++step;
    return sent;
  }
};

TEST(Dgc, MatchesReferenceWithWarmupAndClipping) {
  const std::size_t n = 4000;
  DgcOptions o{.ratio = 0.002, .momentum = 0.9, .clip_norm = 30.0, .warmup_steps = 8};
  DgcCodec c(o, testing::info_1d(n));
  DgcReference ref{o};
  std::vector<std::byte> p;
  std::vector<float> d(n);
  const std::vector<std::size_t> expected_k = {1000, 1000, 250, 250, 63, 63, 16, 16, 8, 8};
  for (std::size_t s = 0; s < expected_k.size(); ++s) {
    const auto g = testing::normal_vector(n, 50 + s);
    c.encode(g, p);
    const auto expect = ref.encode(g);
    ASSERT_EQ(p.size(), 16 + 8 * expected_k[s]) << "step " << s;
    c.decode(p, d);
    ASSERT_EQ(d, expect) << "step " << s;
    ASSERT_EQ(std::vector<float>(c.residual().begin(), c.residual().end()), ref.v);
  }
  EXPECT_EQ(c.encoded_size_bytes(), 16u + 8 * 1000);
}

}  // namespace
}  // namespace ferry::compress
