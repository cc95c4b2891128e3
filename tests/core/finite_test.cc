// all_finite: every finite float class passes, and one NaN or Inf anywhere fails, at every
// position of buffers of several lengths (the vectorised body and its scalar tail).
#include "core/finite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace ferry {
namespace {

using Limits = std::numeric_limits<float>;

TEST(AllFinite, EveryFiniteClassIsFinite) {
  EXPECT_TRUE(all_finite({}));
  const std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.5f, Limits::max(), Limits::lowest(), Limits::min(),
                                Limits::denorm_min(), -Limits::denorm_min(), 3.0e38f};
  EXPECT_TRUE(all_finite(v));
}

TEST(AllFinite, OneNanOrInfAnywhereIsNotFinite) {
  const float bad[] = {Limits::quiet_NaN(), -Limits::quiet_NaN(), Limits::signaling_NaN(), Limits::infinity(),
                       -Limits::infinity()};
  for (std::size_t n : {1u, 7u, 16u, 17u, 33u, 1000u}) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i)) * 1e30f;
    ASSERT_TRUE(all_finite(v)) << n;
    for (std::size_t pos = 0; pos < n; ++pos) {
      for (float b : bad) {
        const float keep = v[pos];
        v[pos] = b;
        EXPECT_FALSE(all_finite(v)) << "n " << n << " position " << pos << " value " << b;
        v[pos] = keep;
      }
    }
  }
}

}  // namespace
}  // namespace ferry
