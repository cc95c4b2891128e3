// SampledTopkSelector (and the topk codec built on it) against a plain partial_sort reference,
// on both its paths: the sampled threshold and the fallback to TopkSelector.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>

#include "compress/topk_codec.h"
#include "compress/topk_sampled_select.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

using testing::reference_topk;

enum class Kind { kNormal, kHeavyTailed, kFewValues, kAllEqual, kSpecials };

std::vector<float> make_vector(Kind kind, std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case Kind::kNormal: x[i] = normal(gen); break;
      case Kind::kHeavyTailed: {  // Cauchy-like: normal / uniform
        x[i] = normal(gen) / std::max(unit(gen), 1e-6f);
        break;
      }
      case Kind::kFewValues: x[i] = static_cast<float>(static_cast<int>(gen() % 5) - 2); break;
      case Kind::kAllEqual: x[i] = 1.5f; break;
      case Kind::kSpecials: {
        const float s[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::denorm_min(), 1.0f, -1.0f};
        x[i] = gen() % 16 == 0 ? s[gen() % std::size(s)] : normal(gen);
        break;
      }
    }
  }
  return x;
}

TEST(TopkSampled, MatchesPartialSortReferenceOnBothPaths) {
  // The AVX-512 candidate loop where the CPU has it, and the portable one.
  for (bool avx512 : {true, false}) {
    SCOPED_TRACE(avx512 ? "avx512 allowed" : "portable");
    SampledTopkSelector sel(
        {.min_numel = 1, .sample_size = 256, .max_fraction = 0.5, .allow_avx512 = avx512});
    std::vector<std::uint32_t> idx;
    int sampled = 0, fallback = 0;
    const Kind kinds[] = {Kind::kNormal, Kind::kHeavyTailed, Kind::kFewValues, Kind::kAllEqual,
                          Kind::kSpecials};
    for (std::size_t n : {1, 15, 16, 17, 100, 1000, 4099, 65537}) {
      for (std::size_t k : {std::size_t{1}, std::size_t{3}, std::max<std::size_t>(1, n / 100),
                            n / 16, n / 2, n}) {
        if (k == 0 || k > n) continue;
        for (Kind kind : kinds) {
          for (std::uint32_t rep = 0; rep < 3; ++rep) {
            const auto x = make_vector(kind, n, static_cast<std::uint32_t>(n * 31 + k * 7 + rep));
            (sel.select(x, k, idx) ? sampled : fallback) += 1;
            ASSERT_EQ(idx, reference_topk(x, k))
                << "n=" << n << " k=" << k << " kind=" << static_cast<int>(kind) << " rep=" << rep;
          }
        }
      }
    }
    // Both paths were exercised (all-equal inputs overflow the candidate cap, k > n/2 skips).
    EXPECT_GT(sampled, 100);
    EXPECT_GT(fallback, 20);
  }
}

TEST(TopkSampled, AddAndSelectUpdatesAndSelects) {
  for (bool avx512 : {true, false}) {
    SampledTopkSelector sel({.min_numel = 1, .sample_size = 512, .allow_avx512 = avx512});
    std::vector<std::uint32_t> idx;
    for (std::size_t n : testing::edge_sizes()) {
      const std::size_t k = std::max<std::size_t>(1, n / 100);
      auto e = make_vector(Kind::kHeavyTailed, n, 5);
      auto expect_e = e;
      for (int step = 0; step < 3; ++step) {
        const auto g = make_vector(step == 1 ? Kind::kSpecials : Kind::kNormal, n, 40 + step);
        for (std::size_t i = 0; i < n; ++i) expect_e[i] += g[i];
        sel.add_and_select(g, e, k, idx);
        ASSERT_EQ(std::memcmp(e.data(), expect_e.data(), 4 * n), 0) << "n=" << n;
        ASSERT_EQ(idx, reference_topk(expect_e, k))
            << "n=" << n << " step " << step << " avx512 " << avx512;
      }
    }
  }
}

// Large values exactly on the sample positions make the estimate too high: fewer than k
// candidates, so the selector must fall back and still be exact.
TEST(TopkSampled, AdversarialSampleFallsBackExactly) {
  const std::size_t n = 1 << 18, m = 1024, k = n / 32;
  SampledTopkSelector sel({.min_numel = 1, .sample_size = m});
  auto x = make_vector(Kind::kNormal, n, 9);
  const std::size_t stride = n / m;
  for (std::size_t i = stride / 2; i < n; i += stride) x[i] = 100.0f;
  std::vector<std::uint32_t> idx;
  EXPECT_FALSE(sel.select(x, k, idx));
  EXPECT_EQ(idx, reference_topk(x, k));
  // Without the planted values the sampled path is taken (and exact).
  const auto y = make_vector(Kind::kNormal, n, 9);
  EXPECT_TRUE(sel.select(y, k, idx));
  EXPECT_EQ(idx, reference_topk(y, k));
}

// The codec with error feedback (default options, so tensors >= 64 Ki elements take the
// sampled path) against e += g; send reference top-k of e; zero the sent entries.
TEST(TopkSampled, CodecWithErrorFeedbackMatchesReference) {
  for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17},
                        std::size_t{1000003}}) {
    auto c = testing::codec("topk:ratio=0.01", n);
    const std::size_t k = std::max<std::size_t>(1, std::llround(0.01 * static_cast<double>(n)));
    std::vector<float> e(n, 0.0f);
    std::vector<std::byte> p;
    for (int s = 0; s < 4; ++s) {
      const auto g = make_vector(s == 2 ? Kind::kHeavyTailed : Kind::kNormal, n, 70 + s);
      for (std::size_t i = 0; i < n; ++i) e[i] += g[i];
      c->encode(g, p);
      const auto ref = reference_topk(e, k);
      ASSERT_EQ(p.size(), 16 + 8 * k);
      for (std::size_t j = 0; j < k; ++j) {
        ASSERT_EQ(load_le<std::uint32_t>(p.data() + 16 + 4 * j), ref[j]) << "n=" << n << " j=" << j;
        ASSERT_EQ(load_le<float>(p.data() + 16 + 4 * k + 4 * j), e[ref[j]]);
        e[ref[j]] = 0.0f;
      }
      ASSERT_EQ(std::memcmp(c->residual().data(), e.data(), 4 * n), 0) << "n=" << n;
    }
  }
}

}  // namespace
}  // namespace ferry::compress
